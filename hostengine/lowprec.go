package hostengine

import (
	"math"
	"sync/atomic"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/numeric"
)

// Low precision (FP8 E4M3, OCP or FNUZ as RCCLX_TESTS_FP8 says) all_reduce, all_gather, reduce_scatter and
// alltoall on float and bfloat16, sum.
//
// Each rank quantizes its input into its own peer-visible FP8 buffer, all ranks pass a barrier, and each
// dequantizes what it needs from its peers' buffers; a closing barrier ends the call.
//   - all_reduce: rank r dequantizes slice r (elements [r*count/n, (r+1)*count/n)) of every rank and sums it,
//     re-quantizes the sum into slice r of its own buffer, barrier, then every rank dequantizes every slice,
//     its own too, so all ranks hold identical results.
//   - reduce_scatter: rank r sums block r of every rank's input; all_gather: rank r dequantizes every rank's
//     input into output block j; alltoall: rank r dequantizes block r of rank j into output block j.
//
// Quantization (RCCLX_TESTS_LP_MODE): "rcclx" is RCCLX's plain saturating cast, q = E4M3(x) rounded to nearest
// even, dequantized as E4M3's exact value. "scaled" cuts every slice, from its start, into blocks of
// policy.LPBlock elements and gives each block an fp32 scale s = amax/max, max being E4M3's largest value (448,
// or 240 in FNUZ; s = 1 for an all-zero block);
// q = E4M3(x/s) with x/s rounded to fp32 first, dequantized as value(q)*s in fp32.
//
// Reduction order (bit-level contract for the GPU kernels): sums accumulate in fp32 in rank order,
// ((d_0 + d_1) + d_2) + ... + d_n-1 with d_j the dequantized value from rank j. Outputs are the fp32 value
// (float) or its round-to-nearest-even bfloat16.

// lpWindow is how many elements rcclx mode converts at a time (it has no blocks).
const lpWindow = 4096

// lpLayout is one rank's quantized vector: total elements cut into parts (slices or blocks of the collective),
// each quantized from its own start in windows of window elements, one scale per window when scaled.
type lpLayout struct {
	total  int64
	parts  int
	window int64
	scaled bool
	fp8    numeric.FP8  // E4M3 in the communicator's flavour
	stop   *atomic.Bool // the communicator's abort flag: windows stops calling fn once it is set
}

func (x *run) lpLayout(total int64, parts int) lpLayout {
	p, e4m3 := x.c.policy, x.c.fp8.Format(collectives.F8E4M3)
	if p.LPMode == collectives.LPModeScaled {
		return lpLayout{total: total, parts: parts, window: int64(p.LPBlock), scaled: true, fp8: e4m3, stop: &x.c.aborted}
	}
	return lpLayout{total: total, parts: parts, window: lpWindow, fp8: e4m3, stop: &x.c.aborted}
}

func (l lpLayout) part(j int) (lo, hi int64) {
	return int64(j) * l.total / int64(l.parts), int64(j+1) * l.total / int64(l.parts)
}

// windows calls fn for each window of part j with its element range and its scale's index, and no more once
// the communicator is aborted (the call then fails at its next barrier).
func (l lpLayout) windows(j int, fn func(lo, hi int64, scale int)) {
	scale := 0
	for i := range j {
		lo, hi := l.part(i)
		scale += int((hi - lo + l.window - 1) / l.window)
	}
	lo, hi := l.part(j)
	for w := lo; w < hi; w += l.window {
		if l.stop != nil && l.stop.Load() {
			return
		}
		fn(w, min(w+l.window, hi), scale)
		scale++
	}
}

func (l lpLayout) scales() int {
	if !l.scaled {
		return 0
	}
	n := 0
	l.windows(l.parts-1, func(_, _ int64, s int) { n = s + 1 })
	return n
}

// lpIO moves the collective's element type (float or bfloat16) to and from fp32.
type lpIO struct {
	load  func(dst []float32, src []byte)
	store func(dst []byte, src []float32)
}

func lpIOFor(dt collectives.DType) lpIO {
	if dt == collectives.BFloat16 {
		return lpIO{
			load:  func(dst []float32, src []byte) { bf16Codec.decode(dst, as[uint16](src)) },
			store: func(dst []byte, src []float32) { bf16Codec.encode(as[uint16](dst), src) },
		}
	}
	return lpIO{
		load:  func(dst []float32, src []byte) { copy(dst, as[float32](src)) },
		store: func(dst []byte, src []float32) { copy(as[float32](dst), src) },
	}
}

// quantize encodes f (one window) into q, with its scale when scaled; f is clobbered.
func (l lpLayout) quantize(q []byte, scales []float32, scale int, f []float32) {
	if l.scaled {
		amax := float32(0)
		for _, v := range f {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		s := amax / l.fp8.Max()
		if s == 0 {
			s = 1
		}
		for i := range f {
			f[i] /= s
		}
		scales[scale] = s
	}
	l.fp8.EncodeSlice(q, f)
}

// dequantize sets (add false) or adds to acc the window [lo, hi) of src, whose scale is at index scale.
func (l lpLayout) dequantize(acc, tmp []float32, src exposed, lo, hi int64, scale int, add bool) {
	tmp = tmp[:hi-lo]
	l.fp8.DecodeSlice(tmp, src.in[lo:hi])
	if l.scaled {
		s := src.scales[scale]
		for i := range tmp {
			tmp[i] *= s
		}
	}
	if !add {
		copy(acc, tmp)
		return
	}
	for i, v := range tmp {
		acc[i] += v
	}
}

// lpBuffers is one call's scratch: the rank's exposed FP8 buffer and two fp32 windows.
type lpBuffers struct {
	me       exposed
	acc, tmp []float32
}

// lpQuantizeInput quantizes the whole input into this rank's FP8 buffer under layout l and exposes it.
func (x *run) lpQuantizeInput(l lpLayout, io lpIO) (lpBuffers, error) {
	r := x.r
	if err := x.grow(&r.lpq, l.total); err != nil {
		return lpBuffers{}, err
	}
	if err := x.grow(&r.lps, 4*int64(l.scales())); err != nil {
		return lpBuffers{}, err
	}
	b := lpBuffers{me: exposed{in: r.lpq, scales: as[float32](r.lps)}, acc: make([]float32, l.window), tmp: make([]float32, l.window)}
	es := int64(x.dt.Size())
	for j := range l.parts {
		l.windows(j, func(lo, hi int64, s int) {
			f := b.acc[:hi-lo]
			io.load(f, x.send[lo*es:hi*es])
			l.quantize(b.me.in[lo:hi], b.me.scales, s, f)
		})
	}
	x.expose(b.me)
	return b, nil
}

// lpSum dequantizes window [lo, hi) from every rank in rank order and sums it into b.acc.
func (x *run) lpSum(l lpLayout, b lpBuffers, lo, hi int64, s int) []float32 {
	acc := b.acc[:hi-lo]
	for j := range x.n {
		l.dequantize(acc, b.tmp, x.view(x.peer(j)), lo, hi, s, j > 0)
	}
	return acc
}

func (x *run) lowPrecision() error {
	io := lpIOFor(x.dt)
	es := int64(x.dt.Size())
	mine := x.r.id
	switch x.coll {
	case collectives.AllReduce:
		l := x.lpLayout(x.k.Param, x.n)
		b, err := x.lpQuantizeInput(l, io)
		if err != nil {
			return err
		}
		if err := x.barrier(1); err != nil {
			return err
		}
		l.windows(mine, func(lo, hi int64, s int) {
			l.quantize(b.me.in[lo:hi], b.me.scales, s, x.lpSum(l, b, lo, hi, s))
		})
		if err := x.barrier(2); err != nil {
			return err
		}
		for j := range x.n {
			src := x.view(x.peer(j))
			l.windows(j, func(lo, hi int64, s int) {
				l.dequantize(b.acc, b.tmp, src, lo, hi, s, false)
				io.store(x.recv[lo*es:hi*es], b.acc[:hi-lo])
			})
		}
		return x.barrier(3)
	case collectives.ReduceScatter:
		l := x.lpLayout(int64(x.n)*x.k.Param, x.n)
		b, err := x.lpQuantizeInput(l, io)
		if err != nil {
			return err
		}
		if err := x.barrier(1); err != nil {
			return err
		}
		first, _ := l.part(mine)
		l.windows(mine, func(lo, hi int64, s int) {
			io.store(x.recv[(lo-first)*es:(hi-first)*es], x.lpSum(l, b, lo, hi, s))
		})
		return x.barrier(2)
	case collectives.AllGather, collectives.AllToAll:
		// all_gather: rank j's whole input (one part) goes to output block j. alltoall: part r of rank j does.
		l, from := x.lpLayout(x.k.Param, 1), 0
		if x.coll == collectives.AllToAll {
			l, from = x.lpLayout(int64(x.n)*x.k.Param, x.n), mine
		}
		b, err := x.lpQuantizeInput(l, io)
		if err != nil {
			return err
		}
		if err := x.barrier(1); err != nil {
			return err
		}
		first, _ := l.part(from)
		for j := range x.n {
			src, at := x.view(x.peer(j)), int64(j)*x.k.Param-first
			l.windows(from, func(lo, hi int64, s int) {
				l.dequantize(b.acc, b.tmp, src, lo, hi, s, false)
				io.store(x.recv[(at+lo)*es:(at+hi)*es], b.acc[:hi-lo])
			})
		}
		return x.barrier(2)
	}
	return collectives.ErrUnsupported
}
