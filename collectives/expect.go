package collectives

import (
	"bytes"
	"math"
)

// Tolerance says how far a received element may be from the exact result and still count as right.
type Tolerance struct {
	// ULPs allowed, in units in the last place of the element type at the magnitude of the inputs (avg rounds).
	ULPs int
	// Rel bounds |got-want| / sum(|inputs|) for low-precision (FP8) paths; Abs is added to the bound.
	Rel, Abs float64
}

// Exact reports whether only bit-identical results pass.
func (t Tolerance) Exact() bool { return t.ULPs == 0 && t.Rel == 0 && t.Abs == 0 }

// Tolerance is the check used for a row: exact, except avg on floating types (2 ulp, as nccl-tests) and
// low-precision algorithms, whose bound follows from the FP8 format (see LowPrecisionTolerance).
func (c *Collective) Tolerance(dt DType, op Op, nranks int, lowPrecision bool) Tolerance {
	if lowPrecision {
		return c.LowPrecisionTolerance(dt, nranks)
	}
	if c.Reduces && op == Avg && dt.IsFloat() {
		return Tolerance{ULPs: 2}
	}
	return Tolerance{}
}

// LowPrecisionTolerance bounds the error of the FP8 (E4M3) paths. Each quantization to E4M3 (3 explicit mantissa
// bits, round to nearest) errs by at most u = 2^-4 relative, or half the smallest subnormal (2^-10) absolute;
// accumulation is in fp32, exact for these inputs. Reductions quantize twice (inputs, then the reduced slice
// before the gather), copies once, and the output is rounded once more to the element type. The bound is relative
// to the sum of the absolute inputs, so cancellation cannot inflate it.
func (c *Collective) LowPrecisionTolerance(dt DType, nranks int) Tolerance {
	const u = 1.0 / 16
	quantizations := 1
	if c.Reduces {
		quantizations = 2
	}
	out := math.Ldexp(1, -dt.Precision())
	rel := math.Pow(1+u, float64(quantizations))*(1+out) - 1
	return Tolerance{Rel: rel, Abs: float64(nranks*quantizations) * math.Ldexp(1, -10)}
}

// Expectation is what one rank's receive buffer must hold after a call, and how to judge it.
type Expectation struct {
	dt    DType
	fp8   FP8Flavour // of the FP8 types in want and in the buffers checked
	tol   Tolerance
	want  []byte
	scale []float64 // sum of |inputs| per element, kept when the check is not exact
}

// Want is the expected start of the receive view (Checked elements; empty where a rank receives nothing
// defined, as the non-root ranks of reduce and gather).
func (e *Expectation) Want() []byte { return e.want }

// Expect computes rank's expected receive buffer for a call of c with root (-1 for collectives without one)
// and the inputs Input generates.
func (c *Collective) Expect(dt DType, op Op, rank, root, nranks int, k Counts, seed uint64, tol Tolerance) *Expectation {
	g := c.generator(dt, op, nranks, seed)
	n := c.Checked(rank, root, nranks, k)
	e := &Expectation{dt: dt, fp8: g.fp8, tol: tol, want: make([]byte, n*int64(dt.Size()))}
	if !tol.Exact() {
		e.scale = make([]float64, n)
	}
	parallel(n, func(lo, hi int64) {
		for i := lo; i < hi; i++ {
			src, idx, reduced := c.source(rank, root, nranks, k, i)
			switch {
			case !dt.IsFloat():
				v := g.integer(src, idx)
				if reduced {
					v = g.reduceInt(idx)
				}
				if c.bias {
					v = g.combineInt(v, g.integer(nranks+rank, idx))
				}
				putInt(dt, e.want, i, v)
			case reduced:
				v, s := g.reduceFloat(idx)
				if c.bias {
					b := g.float(nranks+rank, idx)
					v, s = g.combineFloat(v, b), s+math.Abs(b)
				}
				putFloat(e.fp8, dt, e.want, i, v)
				if e.scale != nil {
					e.scale[i] = s
				}
			default:
				v := g.float(src, idx)
				putFloat(e.fp8, dt, e.want, i, v)
				if e.scale != nil {
					e.scale[i] = math.Abs(v)
				}
			}
		}
	})
	return e
}

// reduceFloat returns the exact reduction over ranks at element i and the same reduction of |inputs|.
func (g *generator) reduceFloat(i int64) (v, scale float64) {
	v = g.float(0, i)
	if g.op == MulSum {
		v *= float64(PreMulScalar(0))
	}
	scale = math.Abs(v)
	for r := 1; r < g.n; r++ {
		x := g.float(r, i)
		switch g.op {
		case Sum, Avg:
			v += x
		case MulSum:
			x *= float64(PreMulScalar(r))
			v += x
		case Prod:
			v *= x
		case Max:
			v = math.Max(v, x)
		case Min:
			v = math.Min(v, x)
		}
		scale += math.Abs(x)
	}
	if g.op == Avg {
		v /= float64(g.n)
		scale /= float64(g.n)
	}
	return v, scale
}

// reduceInt returns the reduction over ranks at element i with the type's wrap-around.
func (g *generator) reduceInt(i int64) int64 {
	dt := g.dt
	v := g.integer(0, i)
	if g.op == MulSum {
		v = dt.wrap(v * int64(PreMulScalar(0)))
	}
	for r := 1; r < g.n; r++ {
		x := g.integer(r, i)
		switch g.op {
		case Sum, Avg:
			v = dt.wrap(v + x)
		case MulSum:
			v = dt.wrap(v + x*int64(PreMulScalar(r)))
		case Prod:
			v = dt.wrap(v * x)
		case Max:
			if dt.less(v, x) {
				v = x
			}
		case Min:
			if dt.less(x, v) {
				v = x
			}
		}
	}
	if g.op == Avg {
		if dt.signed() {
			v /= int64(g.n)
		} else {
			v = int64(uint64(v) / uint64(g.n))
		}
	}
	return v
}

// combineFloat and combineInt apply the op to a reduced value and one more term (all_reduce_bias's bias),
// exactly (sum, prod, max, min).
func (g *generator) combineFloat(v, x float64) float64 {
	switch g.op {
	case Prod:
		return v * x
	case Max:
		return math.Max(v, x)
	case Min:
		return math.Min(v, x)
	}
	return v + x
}

func (g *generator) combineInt(v, x int64) int64 {
	dt := g.dt
	switch g.op {
	case Prod:
		return dt.wrap(v * x)
	case Max:
		if dt.less(v, x) {
			return x
		}
		return v
	case Min:
		if dt.less(x, v) {
			return x
		}
		return v
	}
	return dt.wrap(v + x)
}

func (d DType) less(a, b int64) bool {
	if d.signed() {
		return a < b
	}
	return uint64(a) < uint64(b)
}

// Errors is how far a received buffer is from its expectation. Relative errors are taken against the sum of
// the absolute inputs of the element (its magnitude for copies), as the tolerance is; integer types have none.
type Errors struct {
	Wrong    int64   // elements outside the tolerance
	MaxRel   float64 // the largest relative error (0 when every element is bit-exact)
	SumSqRel float64 // the sum over elements of the squared relative error
	N        int64   // elements compared
}

// Unchanged counts the elements of type dt that differ between before and after (of one length), a receive
// view the call had to leave alone: each is wrong by any measure. Elements left alone do not count among the
// compared elements (N), so that they do not dilute the relative errors of the results.
func Unchanged(dt DType, before, after []byte) Errors {
	if bytes.Equal(before, after) {
		return Errors{}
	}
	size := dt.Size()
	var e Errors
	for i := 0; i < len(before); i += size {
		if !bytes.Equal(before[i:i+size], after[i:i+size]) {
			e.Wrong++
		}
	}
	e.MaxRel, e.SumSqRel, e.N = math.Inf(1), math.Inf(1), e.Wrong
	return e
}

// RMSRel is the root mean square of the relative error over the elements compared.
func (e Errors) RMSRel() float64 {
	if e.N == 0 {
		return 0
	}
	return math.Sqrt(e.SumSqRel / float64(e.N))
}

// Add folds o, the errors of more elements, into e.
func (e *Errors) Add(o Errors) {
	e.Wrong += o.Wrong
	e.MaxRel = max(e.MaxRel, o.MaxRel)
	e.SumSqRel += o.SumSqRel
	e.N += o.N
}

// Check compares a received buffer with the expectation: the number of wrong elements, and the largest error
// relative to the sum of the absolute inputs (0 when every element is bit-exact).
func (e *Expectation) Check(got []byte) (wrong int64, maxRelErr float64) {
	r := e.Compare(got)
	return r.Wrong, r.MaxRel
}

// Compare is Check with the sum of squared relative errors too. Blocks of compareBlock elements are compared
// in parallel and their sums added in order, so the result does not depend on the number of CPUs.
func (e *Expectation) Compare(got []byte) Errors {
	n := int64(len(e.want) / e.dt.Size())
	if len(got) != len(e.want) {
		return Errors{Wrong: n, MaxRel: math.Inf(1), SumSqRel: math.Inf(1), N: n}
	}
	r := Errors{N: n}
	if bytes.Equal(got, e.want) {
		return r
	}
	parts := make([]Errors, (n+compareBlock-1)/compareBlock)
	eachBlock(int64(len(parts)), func(b int64) {
		parts[b] = e.compareRange(got, b*compareBlock, min((b+1)*compareBlock, n))
	})
	for _, p := range parts {
		r.Add(p)
	}
	return r
}

const compareBlock = 1 << 16

// compareRange is Compare's errors over elements [lo, hi) (N left 0).
func (e *Expectation) compareRange(got []byte, lo, hi int64) Errors {
	var r Errors
	for i := lo; i < hi; i++ {
		if !e.dt.IsFloat() {
			if getInt(e.dt, got, i) != getInt(e.dt, e.want, i) {
				r.Wrong++
			}
			continue
		}
		g, w := getFloat(e.fp8, e.dt, got, i), getFloat(e.fp8, e.dt, e.want, i)
		if g == w {
			continue
		}
		diff := math.Abs(g - w)
		if math.IsNaN(diff) {
			diff = math.Inf(1)
		}
		scale := math.Abs(w)
		if e.scale != nil {
			scale = e.scale[i]
		}
		rel := math.Inf(1)
		if scale > 0 {
			rel = diff / scale
		}
		r.MaxRel = max(r.MaxRel, rel)
		r.SumSqRel += rel * rel
		if !e.within(diff, scale) {
			r.Wrong++
		}
	}
	return r
}

func (e *Expectation) within(diff, scale float64) bool {
	t := e.tol
	if t.Exact() || math.IsInf(diff, 0) {
		return false
	}
	if t.ULPs > 0 && diff <= float64(t.ULPs)*e.fp8.ulp(e.dt, scale) {
		return true
	}
	return t.Rel > 0 && diff <= t.Rel*scale+t.Abs
}

// ulp is the spacing of dt's values at magnitude x.
func (f FP8Flavour) ulp(dt DType, x float64) float64 {
	b := f.EncodeFloat(dt, math.Abs(x))
	return math.Abs(f.DecodeFloat(dt, b+1) - f.DecodeFloat(dt, b))
}
