package hostengine

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// refCombine is pre(a, pa) ⊕ pre(b, pb) for one element, computed in float64 (rounded once to the type) or in
// 64-bit integers (wrapped to the type). Rounding float32 results of +, * and / again to a format of at most
// half float32's precision gives the same bits as rounding once, so the float64 reference matches the
// engine's float32 path bit for bit.
func refCombine(dt collectives.DType, op collectives.Op, a, b uint64, pa, pb int) uint64 {
	if dt.IsFloat() {
		x, y := collectives.DecodeFloat(dt, a), collectives.DecodeFloat(dt, b)
		if op == collectives.MulSum {
			x = collectives.DecodeFloat(dt, collectives.EncodeFloat(dt, x*float64(pa)))
			y = collectives.DecodeFloat(dt, collectives.EncodeFloat(dt, y*float64(pb)))
		}
		return collectives.EncodeFloat(dt, applyFloat(op, x, y))
	}
	return mask(dt, uint64(refInt(dt, op, extend(dt, a), extend(dt, b), pa, pb)))
}

func refInt(dt collectives.DType, op collectives.Op, x, y int64, pa, pb int) int64 {
	if op == collectives.MulSum {
		x, y = x*int64(pa), y*int64(pb)
	}
	var v int64
	switch op {
	case collectives.Sum, collectives.Avg, collectives.MulSum:
		v = x + y
	case collectives.Prod:
		v = x * y
	case collectives.Max, collectives.Min:
		less := x < y
		if !signed(dt) {
			less = uint64(x) < uint64(y)
		}
		v = x
		if less == (op == collectives.Max) {
			v = y
		}
	}
	return v
}

func applyFloat(op collectives.Op, x, y float64) float64 {
	switch op {
	case collectives.Prod:
		return x * y
	case collectives.Max:
		return math.Max(x, y)
	case collectives.Min:
		return math.Min(x, y)
	}
	return x + y
}

// refAvg is the final division of avg for one element.
func refAvg(dt collectives.DType, v uint64, n int) uint64 {
	if dt.IsFloat() {
		return collectives.EncodeFloat(dt, collectives.DecodeFloat(dt, v)/float64(n))
	}
	if signed(dt) {
		return mask(dt, uint64(extend(dt, v)/int64(n)))
	}
	return uint64(extend(dt, v)) / uint64(n)
}

func signed(dt collectives.DType) bool {
	return dt == collectives.Int8 || dt == collectives.Int32 || dt == collectives.Int64
}

// extend sign- or zero-extends the type's bits to 64.
func extend(dt collectives.DType, v uint64) int64 {
	w := uint(dt.Size() * 8)
	if signed(dt) {
		return int64(v<<(64-w)) >> (64 - w)
	}
	return int64(v << (64 - w) >> (64 - w))
}

func get(dt collectives.DType, b []byte, i int) uint64 {
	var buf [8]byte
	copy(buf[:], b[i*dt.Size():(i+1)*dt.Size()])
	return binary.LittleEndian.Uint64(buf[:])
}

func put(dt collectives.DType, b []byte, i int, v uint64) {
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], v)
	copy(b[i*dt.Size():], buf[:dt.Size()])
}

// randomElems returns n random elements of dt; floating ones are finite.
func randomElems(rng *rand.Rand, dt collectives.DType, n int) []byte {
	b := alignedBytes(int64(n * dt.Size()))
	for i := range n {
		v := mask(dt, rng.Uint64())
		for dt.IsFloat() && (math.IsNaN(collectives.DecodeFloat(dt, v)) || math.IsInf(collectives.DecodeFloat(dt, v), 0)) {
			v = mask(dt, rng.Uint64())
		}
		put(dt, b, i, v)
	}
	return b
}

// mask keeps the type's bits of v.
func mask(dt collectives.DType, v uint64) uint64 {
	return v << (64 - 8*dt.Size()) >> (64 - 8*dt.Size())
}

// TestReducerMatchesReference: every type and operation, and the FP8 types in FNUZ too.
func TestReducerMatchesReference(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 2))
	const n = 2*narrowBlock + 3 // several narrow blocks and a ragged end
	types := collectives.AllDTypes()
	for i, dt := range append(types, collectives.F8E4M3, collectives.F8E5M2) {
		fp8 := collectives.FP8OCP
		if i >= len(types) {
			fp8 = collectives.FP8FNUZ
		}
		useFP8(t, fp8) // the reference's flavour
		for _, op := range collectives.AllOps() {
			red := newReducer(dt, op, fp8)
			a, b := randomElems(rng, dt, n), randomElems(rng, dt, n)
			pa, pb := 1+rng.IntN(2), 1+rng.IntN(2)
			dst := alignedBytes(int64(len(a)))
			copy(dst, a)
			red.combine(dst, dst, b, pa, pb) // dst aliases a, as the algorithms use it
			for i := range n {
				want := refCombine(dt, op, get(dt, a, i), get(dt, b, i), pa, pb)
				if got := get(dt, dst, i); got != want {
					t.Fatalf("seed %#x: %s (%s) %s element %d: %#x ⊕ %#x (pre %d, %d) = %#x, want %#x", seed, dt, fp8,
						op, i, get(dt, a, i), get(dt, b, i), pa, pb, got, want)
				}
			}
			if (red.finish != nil) != (op == collectives.Avg) {
				t.Fatalf("%s %s: finish present %v", dt, op, red.finish != nil)
			}
			if red.finish == nil {
				continue
			}
			nranks := []int{3, 7, 200}[rng.IntN(3)] // 200 overflows int8
			sum := append([]byte(nil), dst...)
			red.finish(dst, nranks)
			for i := range n {
				if got, want := get(dt, dst, i), refAvg(dt, get(dt, sum, i), nranks); got != want {
					t.Fatalf("seed %#x: %s avg element %d: %#x / %d = %#x, want %#x", seed, dt, i, get(dt, sum, i), nranks, got, want)
				}
			}
		}
	}
}

// useFP8 sets the run's FP8 flavour, which the references read, for one test.
func useFP8(t *testing.T, f collectives.FP8Flavour) {
	before := collectives.RunFP8Flavour()
	collectives.UseFP8Flavour(f)
	t.Cleanup(func() { collectives.UseFP8Flavour(before) })
}
