package collectives

import (
	"encoding/binary"
	"math"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/rcclx-tests/rcclx-tests/numeric"
)

// Inputs are deterministic per (seed, rank, element, dtype, op, rank count), never all zero, and chosen so the
// exact result is representable in the element type whatever order an engine reduces in: floating sums use
// integers of at most K units of 2^-s with n*K within the significand, so every partial sum is exact; products
// use +-1 with one +-2 and one +-0.5 per element; integers use full-width random bits and wrap identically in
// any order. The expected output is computed here, in float64 or 64-bit integers, from the same generator,
// never from an engine's buffers.

// generator draws the inputs of one (dtype, op, rank count, seed).
type generator struct {
	dt     DType
	op     Op
	n      int
	seed   uint64  // mixed once; element keys are XORed into it
	k      int64   // values are +-[1..k] units (floats, sum-like ops)
	unit   float64 // 2^-s
	active int     // ranks contributing a non-zero value to each element (floats, sum-like ops)
	fp8    FP8Flavour
}

func newGenerator(dt DType, op Op, nranks int, seed uint64) *generator {
	return newGeneratorFor(dt, op, nranks, nranks, seed)
}

// newGeneratorFor sizes the values for sums of up to terms inputs (all_reduce_bias adds each rank's bias to
// the reduction of nranks inputs).
func newGeneratorFor(dt DType, op Op, nranks, terms int, seed uint64) *generator {
	g := &generator{dt: dt, op: op, n: nranks, seed: splitmix(seed), k: 1, unit: 1, active: nranks, fp8: RunFP8Flavour()}
	if !dt.IsFloat() {
		return g
	}
	room := int64(1) << min(dt.Precision(), 40) // integers of at most this magnitude are exact
	switch op {
	case Sum, Avg, MulSum:
		mul := int64(1)
		if op == MulSum {
			mul = 2
		}
		g.k = min(32, room/(int64(terms)*mul))
		if g.k < 1 {
			g.k = 1
			g.active = int(max(1, room/mul))
		}
		if s := bits.Len64(uint64(g.k)) - 4; s > 0 {
			g.unit = math.Ldexp(1, -s)
		}
	case Max, Min:
		g.k = min(room, 1024)
	}
	return g
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// hash draws the random bits of (rank, element): splitmix64 over a key unique for ranks < 2^24 and
// elements < 2^40.
func (g *generator) hash(rank int, i int64) uint64 {
	return splitmix(g.seed ^ (uint64(rank)<<40 | uint64(i)))
}

// float returns the floating input of rank at element i.
func (g *generator) float(rank int, i int64) float64 {
	h := g.hash(rank, i)
	neg := -int64(h & 1) // the sign is random: negate without a branch the CPU would mispredict half the time
	if g.op == Prod {
		v := 1.0
		switch {
		case rank == int(i%int64(g.n)), rank >= g.n && i%2 == 0: // ranks past n: all_reduce_bias's biases
			v = 2
		case rank == int((i+1)%int64(g.n)), rank >= g.n:
			v = 0.5
		}
		return float64(1+2*neg) * v
	}
	if g.active < g.n && (int64(rank)+i)%int64(g.n) >= int64(g.active) {
		return 0
	}
	units := 1 + int64(((h>>32)*uint64(g.k))>>32) // multiply-shift: a uniform draw in [0, k)
	return float64((units^neg)-neg) * g.unit
}

// integer returns the integer input of rank at element i, as the type's bits sign- or zero-extended to 64 bits.
func (g *generator) integer(rank int, i int64) int64 {
	h := g.hash(rank, i)
	if g.op == Prod {
		v := int64(1)
		switch {
		case rank == int(i%int64(g.n)), rank >= g.n && i%2 == 0: // ranks past n: all_reduce_bias's biases
			v = 2
		case rank == int((i+1)%int64(g.n)), rank >= g.n:
			v = 3
		}
		if h&1 == 1 && g.dt.signed() {
			v = -v
		}
		return v
	}
	return g.dt.wrap(int64(h))
}

// parallel runs fn over [0, n) in chunks on every CPU.
func parallel(n int64, fn func(lo, hi int64)) {
	workers := int64(runtime.GOMAXPROCS(0))
	if n < 1<<16 || workers == 1 {
		fn(0, n)
		return
	}
	chunk := (n + workers - 1) / workers
	eachBlock((n+chunk-1)/chunk, func(b int64) { fn(b*chunk, min((b+1)*chunk, n)) })
}

// eachBlock calls fn(b) for every b in [0, blocks), on up to GOMAXPROCS goroutines.
func eachBlock(blocks int64, fn func(b int64)) {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range min(int64(runtime.GOMAXPROCS(0)), blocks) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := next.Add(1) - 1; b < blocks; b = next.Add(1) - 1 {
				fn(b)
			}
		}()
	}
	wg.Wait()
}

// Input returns rank's send buffer contents (k.Send elements, little-endian) for a call of c. all_reduce_bias's
// bias follows the input: the values of a rank nranks+rank beyond the real ones.
func (c *Collective) Input(dt DType, op Op, rank, nranks int, k Counts, seed uint64) []byte {
	g := c.generator(dt, op, nranks, seed)
	out := make([]byte, k.Send*int64(dt.Size()))
	parallel(k.Send, func(lo, hi int64) {
		for i := lo; i < hi; i++ {
			r, j := rank, i
			if c.bias && i >= k.Param {
				r, j = nranks+rank, i-k.Param
			}
			if dt == Float { // the common case, without the per-element type switches
				binary.LittleEndian.PutUint32(out[i*4:], math.Float32bits(float32(g.float(r, j))))
			} else if dt.IsFloat() {
				putFloat(g.fp8, dt, out, i, g.float(r, j))
			} else {
				putInt(dt, out, i, g.integer(r, j))
			}
		}
	})
	return out
}

// generator draws c's inputs: sized for one more term per element where a bias joins the reduction.
func (c *Collective) generator(dt DType, op Op, nranks int, seed uint64) *generator {
	if c.bias {
		return newGeneratorFor(dt, op, nranks, nranks+1, seed)
	}
	return newGenerator(dt, op, nranks, seed)
}

func (d DType) signed() bool {
	return d == Int8 || d == Int32 || d == Int64
}

// wrap truncates v to the type's width and extends it back to 64 bits (sign- or zero-), giving two's
// complement wrap-around.
func (d DType) wrap(v int64) int64 {
	w := uint(d.Size() * 8)
	if w == 64 {
		return v
	}
	if d.signed() {
		return v << (64 - w) >> (64 - w)
	}
	return int64(uint64(v) << (64 - w) >> (64 - w))
}

func putInt(dt DType, b []byte, i int64, v int64) {
	switch dt.Size() {
	case 1:
		b[i] = byte(v)
	case 4:
		binary.LittleEndian.PutUint32(b[i*4:], uint32(v))
	case 8:
		binary.LittleEndian.PutUint64(b[i*8:], uint64(v))
	}
}

func getInt(dt DType, b []byte, i int64) int64 {
	switch dt.Size() {
	case 1:
		return dt.wrap(int64(b[i]))
	case 4:
		return dt.wrap(int64(binary.LittleEndian.Uint32(b[i*4:])))
	}
	return int64(binary.LittleEndian.Uint64(b[i*8:]))
}

// EncodeFloat rounds v to dt (round to nearest even; FP8 saturates, in the run's flavour) and returns its bits.
func EncodeFloat(dt DType, v float64) uint64 { return RunFP8Flavour().EncodeFloat(dt, v) }

// DecodeFloat is the inverse of EncodeFloat (exact).
func DecodeFloat(dt DType, b uint64) float64 { return RunFP8Flavour().DecodeFloat(dt, b) }

// EncodeFloat is the package's EncodeFloat with the FP8 types in flavour f.
func (f FP8Flavour) EncodeFloat(dt DType, v float64) uint64 {
	switch dt {
	case Half:
		return uint64(numeric.F32ToF16(float32(v)))
	case Float:
		return uint64(math.Float32bits(float32(v)))
	case Double:
		return math.Float64bits(v)
	case BFloat16:
		return uint64(numeric.F32ToBF16(float32(v)))
	case F8E4M3, F8E5M2:
		return uint64(f.Format(dt).Encode(float32(v)))
	}
	panic("EncodeFloat: not a floating type: " + dt.String())
}

// DecodeFloat is the package's DecodeFloat with the FP8 types in flavour f.
func (f FP8Flavour) DecodeFloat(dt DType, b uint64) float64 {
	switch dt {
	case Half:
		return float64(numeric.F16ToF32(uint16(b)))
	case Float:
		return float64(math.Float32frombits(uint32(b)))
	case Double:
		return math.Float64frombits(b)
	case BFloat16:
		return float64(numeric.BF16ToF32(uint16(b)))
	case F8E4M3, F8E5M2:
		return float64(f.Format(dt).Decode(uint8(b)))
	}
	panic("DecodeFloat: not a floating type: " + dt.String())
}

func putFloat(f FP8Flavour, dt DType, b []byte, i int64, v float64) {
	bits := f.EncodeFloat(dt, v)
	switch dt.Size() {
	case 1:
		b[i] = byte(bits)
	case 2:
		binary.LittleEndian.PutUint16(b[i*2:], uint16(bits))
	case 4:
		binary.LittleEndian.PutUint32(b[i*4:], uint32(bits))
	case 8:
		binary.LittleEndian.PutUint64(b[i*8:], bits)
	}
}

func getFloat(f FP8Flavour, dt DType, b []byte, i int64) float64 {
	var bits uint64
	switch dt.Size() {
	case 1:
		bits = uint64(b[i])
	case 2:
		bits = uint64(binary.LittleEndian.Uint16(b[i*2:]))
	case 4:
		bits = uint64(binary.LittleEndian.Uint32(b[i*4:]))
	case 8:
		bits = binary.LittleEndian.Uint64(b[i*8:])
	}
	return f.DecodeFloat(dt, bits)
}
