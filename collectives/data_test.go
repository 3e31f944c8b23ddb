package collectives

import (
	"bytes"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/numeric"
)

var rankCounts = []int{1, 2, 3, 5, 8, 16}

// simulate reduces the ranks' inputs in a random order, rounding to the element type after every step as an
// engine storing partial results would, and applies avg's final division: any order must give the expected
// buffer (bit-exact, or within the row's tolerance for avg).
func simulate(rng *rand.Rand, dt DType, op Op, inputs [][]byte, n int) []byte {
	count := int64(len(inputs[0]) / dt.Size())
	out := make([]byte, len(inputs[0]))
	for i := int64(0); i < count; i++ {
		order := rng.Perm(n)
		if dt.IsFloat() {
			v := 0.0
			for j, r := range order {
				x := getFloat(RunFP8Flavour(), dt, inputs[r], i)
				if op == MulSum {
					x = DecodeFloat(dt, EncodeFloat(dt, x*float64(PreMulScalar(r))))
				}
				switch {
				case j == 0:
					v = x
				case op == Prod:
					v *= x
				case op == Max:
					v = max(v, x)
				case op == Min:
					v = min(v, x)
				default:
					v += x
				}
				v = DecodeFloat(dt, EncodeFloat(dt, v))
			}
			if op == Avg {
				v /= float64(n)
			}
			putFloat(RunFP8Flavour(), dt, out, i, v)
			continue
		}
		var v int64
		for j, r := range order {
			x := getInt(dt, inputs[r], i)
			if op == MulSum {
				x = dt.wrap(x * int64(PreMulScalar(r)))
			}
			switch {
			case j == 0:
				v = x
			case op == Prod:
				v = dt.wrap(v * x)
			case op == Max:
				if dt.less(v, x) {
					v = x
				}
			case op == Min:
				if dt.less(x, v) {
					v = x
				}
			default:
				v = dt.wrap(v + x)
			}
		}
		if op == Avg {
			if dt.signed() {
				v /= int64(n)
			} else {
				v = int64(uint64(v) / uint64(n))
			}
		}
		putInt(dt, out, i, v)
	}
	return out
}

// TestReductionsExactInAnyOrder: in both FP8 flavours, for the FP8 types.
func TestReductionsExactInAnyOrder(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 1))
	types := AllDTypes()
	for i, dt := range append(types, F8E4M3, F8E5M2) {
		useFP8(t, FP8OCP)
		if i >= len(types) {
			useFP8(t, FP8FNUZ)
		}
		for _, op := range AllOps() {
			for _, n := range rankCounts {
				k := AllReduce.Counts(1031*int64(dt.Size()), n, 0, dt)
				inputs := make([][]byte, n)
				nonzero := false
				for r := range inputs {
					inputs[r] = AllReduce.Input(dt, op, r, n, k, seed)
					nonzero = nonzero || bytes.ContainsFunc(inputs[r], func(c rune) bool { return c != 0 })
				}
				if !nonzero {
					t.Fatalf("%s %s n=%d: all inputs are zero", dt, op, n)
				}
				e := AllReduce.Expect(dt, op, 0, -1, n, k, seed, AllReduce.Tolerance(dt, op, n, false))
				got := simulate(rng, dt, op, inputs, n)
				if wrong, rel := e.Check(got); wrong != 0 {
					t.Errorf("seed %#x: %s (%s) %s n=%d: %d wrong (max rel err %g) for a reduction in another order",
						seed, dt, RunFP8Flavour(), op, n, wrong, rel)
				}
			}
		}
	}
}

func TestCopyCollectivesExpectation(t *testing.T) {
	seed := rand.Uint64()
	for _, n := range rankCounts {
		for _, c := range []*Collective{AllGather, AllToAll} {
			inputs := make([][]byte, n)
			for r := range inputs {
				inputs[r] = c.Input(Int32, Sum, r, n, c.Counts(4096, n, r, Int32), seed)
			}
			for r := 0; r < n; r++ {
				k := c.Counts(4096, n, r, Int32)
				blk := k.Param * 4
				var want []byte
				for p := 0; p < n; p++ {
					if c == AllGather {
						want = append(want, inputs[p]...)
					} else {
						want = append(want, inputs[p][int64(r)*blk:int64(r+1)*blk]...)
					}
				}
				if got := c.Expect(Int32, Sum, r, -1, n, k, seed, Tolerance{}).Want(); !bytes.Equal(got, want) {
					t.Errorf("seed %#x: %s rank %d of %d: expectation is not the rearranged inputs", seed, c.Name, r, n)
				}
			}
		}
	}
}

func TestReduceScatterExpectationIsSliceOfAllReduce(t *testing.T) {
	seed := rand.Uint64()
	n := 5
	full := AllReduce.Expect(Float, Sum, 0, -1, n, AllReduce.Counts(5*64, n, 0, Float), seed, Tolerance{}).Want()
	for r := 0; r < n; r++ {
		k := ReduceScatter.Counts(5*64, n, r, Float)
		got := ReduceScatter.Expect(Float, Sum, r, -1, n, k, seed, Tolerance{}).Want()
		if !bytes.Equal(got, full[int64(r)*k.Param*4:int64(r+1)*k.Param*4]) {
			t.Errorf("seed %#x: reduce_scatter rank %d is not its slice of the all_reduce", seed, r)
		}
	}
}

func TestCheckCountsPlantedErrors(t *testing.T) {
	seed := rand.Uint64()
	for _, dt := range AllDTypes() {
		k := AllReduce.Counts(4096, 4, 0, dt)
		e := AllReduce.Expect(dt, Sum, 0, -1, 4, k, seed, Tolerance{})
		got := bytes.Clone(e.Want())
		if w, _ := e.Check(got); w != 0 {
			t.Fatalf("%s: the expectation itself has %d wrong", dt, w)
		}
		pos := rand.IntN(len(got)/dt.Size()) * dt.Size()
		got[pos+dt.Size()-1] ^= 0x40 // a high bit of the element: never a rounding-sized change
		if w, _ := e.Check(got); w != 1 {
			t.Errorf("seed %#x: %s: a planted wrong element gives #wrong %d, want 1", seed, dt, w)
		}
		if w, _ := e.Check(got[:len(got)-dt.Size()]); w == 0 {
			t.Errorf("%s: a short buffer must be wrong", dt)
		}
	}
}

func TestInputsDependOnSeedRankAndElement(t *testing.T) {
	k := AllReduce.Counts(4096, 4, 0, Float)
	a := AllReduce.Input(Float, Sum, 0, 4, k, 1)
	if bytes.Equal(a, AllReduce.Input(Float, Sum, 1, 4, k, 1)) || bytes.Equal(a, AllReduce.Input(Float, Sum, 0, 4, k, 2)) {
		t.Error("inputs must differ between ranks and seeds")
	}
	if !bytes.Equal(a, AllReduce.Input(Float, Sum, 0, 4, k, 1)) {
		t.Error("inputs must be deterministic")
	}
}

// lowPrecisionAllReduce is the RCCLX FP8 all-reduce done by hand: quantize every input to E4M3, sum in fp32,
// re-quantize the sum, dequantize into the element type.
func lowPrecisionAllReduce(dt DType, inputs [][]byte) []byte {
	count := int64(len(inputs[0]) / dt.Size())
	out := make([]byte, len(inputs[0]))
	for i := int64(0); i < count; i++ {
		var acc float32
		for _, in := range inputs {
			acc += numeric.E4M3.Decode(numeric.E4M3.Encode(float32(getFloat(RunFP8Flavour(), dt, in, i))))
		}
		putFloat(RunFP8Flavour(), dt, out, i, float64(numeric.E4M3.Decode(numeric.E4M3.Encode(acc))))
	}
	return out
}

func TestLowPrecisionToleranceHoldsAndBites(t *testing.T) {
	seed := rand.Uint64()
	for _, dt := range []DType{Float, BFloat16} {
		for _, n := range rankCounts {
			k := AllReduce.Counts(4099*int64(dt.Size()), n, 0, dt)
			inputs := make([][]byte, n)
			for r := range inputs {
				inputs[r] = AllReduce.Input(dt, Sum, r, n, k, seed)
			}
			tol := AllReduce.Tolerance(dt, Sum, n, true)
			e := AllReduce.Expect(dt, Sum, 0, -1, n, k, seed, tol)
			got := lowPrecisionAllReduce(dt, inputs)
			wrong, rel := e.Check(got)
			if wrong != 0 || rel > tol.Rel {
				t.Errorf("seed %#x: %s n=%d: FP8 path gives %d wrong, max rel err %g (bound %g)", seed, dt, n, wrong, rel, tol.Rel)
			}
			putFloat(RunFP8Flavour(), dt, got, 7, getFloat(RunFP8Flavour(), dt, e.Want(), 7)+float64(4*n*16))
			if wrong, _ := e.Check(got); wrong != 1 {
				t.Errorf("%s n=%d: an error far past the bound gives #wrong %d, want 1", dt, n, wrong)
			}
		}
	}
}

// TestCompareRMS: the RMS relative error counts every element, exact ones as zero, and each planted error at
// its size relative to the element's scale; Add folds halves as one buffer.
func TestCompareRMS(t *testing.T) {
	seed := rand.Uint64()
	const n = 4
	k := AllReduce.Counts(1000*4, n, 0, Float)
	e := AllReduce.Expect(Float, Sum, 0, -1, n, k, seed, AllReduce.Tolerance(Float, Sum, n, true))
	got := append([]byte(nil), e.Want()...)
	if r := e.Compare(got); r != (Errors{N: k.Recv}) {
		t.Fatalf("exact buffer: %+v", r)
	}
	var sumSq, most float64
	for _, i := range []int64{3, 500, 999} {
		rel := rand.Float64() * 1e-2
		putFloat(FP8OCP, Float, got, i, getFloat(FP8OCP, Float, e.Want(), i)+rel*e.scale[i])
		rel = math.Abs(getFloat(FP8OCP, Float, got, i)-getFloat(FP8OCP, Float, e.Want(), i)) / e.scale[i] // after rounding to fp32
		sumSq += rel * rel
		most = max(most, rel)
	}
	r := e.Compare(got)
	want := math.Sqrt(sumSq / float64(k.Recv))
	if r.N != k.Recv || r.MaxRel != most || math.Abs(r.RMSRel()-want) > 1e-12*want {
		t.Errorf("three planted errors: %+v RMS %g; want max %g RMS %g over %d", r, r.RMSRel(), most, want, k.Recv)
	}
	var both Errors
	both.Add(r)
	both.Add(e.Compare(e.Want()))
	if both.N != 2*k.Recv || math.Abs(both.RMSRel()-want/math.Sqrt2) > 1e-12*want || both.MaxRel != most {
		t.Errorf("folded with an exact buffer: %+v RMS %g, want %g", both, both.RMSRel(), want/math.Sqrt2)
	}
	if r := e.Compare(got[:8]); !math.IsInf(r.RMSRel(), 1) || r.Wrong != k.Recv {
		t.Errorf("short buffer: %+v", r)
	}
}

// TestCompareSameOnAnyCPUCount: errors planted across Compare's blocks, the last one partial, are all counted,
// and the sums come out as the same bits whatever the number of CPUs.
func TestCompareSameOnAnyCPUCount(t *testing.T) {
	const n = 2
	k := AllReduce.Counts((5*compareBlock+123)*4, n, 0, Float)
	e := AllReduce.Expect(Float, Sum, 0, -1, n, k, rand.Uint64(), AllReduce.Tolerance(Float, Sum, n, true))
	got := append([]byte(nil), e.Want()...)
	var planted int64
	for _, i := range []int64{0, 7, compareBlock - 1, compareBlock, 3*compareBlock + 5, k.Recv - 1} {
		putFloat(FP8OCP, Float, got, i, getFloat(FP8OCP, Float, e.Want(), i)+(1+rand.Float64())*e.scale[i]) // past the bound
		planted++
	}
	var first Errors
	for j, procs := range []int{1, 3, 8} {
		old := runtime.GOMAXPROCS(procs)
		r := e.Compare(got)
		runtime.GOMAXPROCS(old)
		if r.Wrong != planted || r.N != k.Recv {
			t.Errorf("GOMAXPROCS %d: %+v, want %d wrong of %d", procs, r, planted, k.Recv)
		}
		if j == 0 {
			first = r
		} else if r != first {
			t.Errorf("GOMAXPROCS %d: %+v, with 1: %+v", procs, r, first)
		}
	}
}
