package hostengine

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/numeric"
)

var fnuzEnv = map[string]string{collectives.EnvFP8: "fnuz"}

// TestFNUZFP8Types: with RCCLX_TESTS_FP8=fnuz the engine says FNUZ and reduces FNUZ data to the expected FNUZ
// results; an engine left in OCP gets products of the same data wrong. (An FNUZ code read as OCP is twice its
// value, so sums, maxima and their re-encoding come out right in either.)
func TestFNUZFP8Types(t *testing.T) {
	seed := rand.Uint64()
	fnuz, ocp := openComm(t, 3, fnuzEnv, 0, 0), openComm(t, 3, nil, 0, 0)
	if fnuz.FP8Flavour() != collectives.FP8FNUZ || ocp.FP8Flavour() != collectives.FP8OCP {
		t.Fatalf("flavours %s and %s, want fnuz and ocp", fnuz.FP8Flavour(), ocp.FP8Flavour())
	}
	useFP8(t, collectives.FP8FNUZ)
	for _, tc := range []testCase{
		{coll: collectives.AllReduce, dt: collectives.F8E4M3, op: collectives.Sum, bytes: 3000},
		{coll: collectives.ReduceScatter, dt: collectives.F8E5M2, op: collectives.Prod, bytes: 3000},
		{coll: collectives.AllReduce, dt: collectives.F8E4M3, op: collectives.MulSum, bytes: 3000},
		{coll: collectives.AllReduce, dt: collectives.F8E4M3, op: collectives.Prod, bytes: 3000},
	} {
		if out := runCase(t, fnuz, tc, seed); out.err != nil || sum(out.wrong) != 0 {
			t.Errorf("seed %#x: %v: %v, #wrong %v", seed, tc, out.err, out.wrong)
		}
		if tc.op != collectives.Prod {
			continue
		}
		if out := runCase(t, ocp, tc, seed); out.err != nil || sum(out.wrong) == 0 {
			t.Errorf("seed %#x: %v in OCP on FNUZ data: %v, #wrong %v; want wrong elements", seed, tc, out.err, out.wrong)
		}
	}
	if _, err := New().Open(collectives.Config{NThreads: 1, NGpus: 1, Env: map[string]string{collectives.EnvFP8: "e4m3"}}); err == nil {
		t.Error("RCCLX_TESTS_FP8=e4m3 opened")
	}
}

func sum(v []int64) (s int64) {
	for _, x := range v {
		s += x
	}
	return s
}

// TestFNUZLowPrecision: the LP all_reduce quantizes to E4M3 FNUZ (largest value 240, subnormals down to 2^-10)
// under RCCLX_TESTS_FP8=fnuz: bit for bit the hand-made result of RCCLX's plain cast, on inputs where FNUZ and
// OCP disagree (beyond 240, and below OCP's smallest subnormal).
func TestFNUZLowPrecision(t *testing.T) {
	const n = 2
	env := lpEnv(collectives.LPModeRCCLX)
	env[collectives.EnvFP8] = "fnuz"
	c := openComm(t, n, env, 0, 0)
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 3))
	tc := testCase{coll: collectives.AllReduce, dt: collectives.Float, op: collectives.Sum, bytes: 4096}
	k := tc.coll.Counts(tc.bytes, n, 0, tc.dt)
	inputs := make([][]float32, n)
	for r := range inputs {
		inputs[r] = make([]float32, k.Send)
		for i := range inputs[r] {
			v := float32(rng.IntN(800)-400) / 2 // beyond 240 often
			if i%3 == 0 {
				v = float32(math.Ldexp(float64(rng.IntN(4)), -11)) // 2^-10 is FNUZ's smallest value, 0 in OCP
			}
			inputs[r][i] = v
		}
	}
	tc.input = func(r int, k collectives.Counts) []byte {
		b := make([]byte, 4*k.Send)
		for i, v := range inputs[r] {
			putElem(collectives.Float, b, int64(i), float64(v))
		}
		return b
	}
	out := runCase(t, c, tc, seed)
	if out.err != nil || out.algo != collectives.LowPrecision {
		t.Fatalf("algorithm %s, %v", out.algo, out.err)
	}
	q := func(v float32) float32 { return numeric.E4M3FNUZ.Decode(numeric.E4M3FNUZ.Encode(v)) }
	differ := 0
	for r := range n {
		for i := range k.Recv {
			var acc float32
			for j := range n {
				acc += q(inputs[j][i])
			}
			want := q(acc)
			if got := elem(collectives.Float, out.out[r], i); got != float64(want) {
				t.Fatalf("rank %d element %d: %g, want %g (inputs %g, %g)", r, i, got, want, inputs[0][i], inputs[1][i])
			}
			if ocp := numeric.E4M3.Decode(numeric.E4M3.Encode(acc)); ocp != want {
				differ++
			}
		}
	}
	if differ == 0 {
		t.Fatal("the inputs do not tell FNUZ from OCP")
	}
}
