package hostengine

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// hookArms force every algorithm family in turn.
var hookArms = []struct {
	name string
	env  map[string]string
	coll *collectives.Collective
	want string
}{
	{"ring", nil, collectives.AllReduce, collectives.Ring},
	{"direct", nil, collectives.AllToAll, collectives.Direct},
	{"dda_flat", map[string]string{"RCCL_DDA_ENABLE": "1"}, collectives.AllReduce, collectives.DDAFlat},
	{"dda", map[string]string{"RCCL_DDA_ENABLE": "1"}, collectives.ReduceScatter, collectives.DDA},
	{"lp", map[string]string{"RCCL_LOW_PRECISION_ENABLE": "1", "RCCLX_TESTS_LP_MIN_BYTES": "0"}, collectives.AllGather, collectives.LowPrecision},
}

func withEnv(env map[string]string, key, value string) map[string]string {
	out := maps.Clone(env)
	if out == nil {
		out = map[string]string{}
	}
	out[key] = value
	return out
}

func TestSkipRankTimesOut(t *testing.T) {
	const timeout = 300 * time.Millisecond
	for _, arm := range hookArms {
		t.Run(arm.name, func(t *testing.T) {
			c := openComm(t, 8, withEnv(arm.env, collectives.EnvSkipRank, "5"), timeout, 0)
			tc := testCase{coll: arm.coll, dt: collectives.Float, op: collectives.Sum, bytes: 64 << 10}
			start := time.Now()
			out := runCase(t, c, tc, 1)
			elapsed := time.Since(start)
			var te *collectives.TimeoutError
			if !errors.As(out.err, &te) {
				t.Fatalf("Wait returned %v, want a *TimeoutError", out.err)
			}
			if out.algo != arm.want || te.Rank == 5 || te.After != timeout || te.Phase == "" {
				t.Errorf("algorithm %s, error %#v", out.algo, te)
			}
			if elapsed > timeout+time.Second {
				t.Errorf("Wait returned after %v, want under %v", elapsed, timeout+time.Second)
			}
			t.Logf("%s: %v after %v", out.algo, te, elapsed)
			// The communicator stays aborted: the next call fails with the same error, without a new wait (the
			// bound is loose: CI's 2 cores are shared with the other test packages).
			start = time.Now()
			if again := runCase(t, c, tc, 2); again.err != out.err || time.Since(start) > timeout+time.Second {
				t.Errorf("call after the timeout: %v after %v", again.err, time.Since(start))
			}
		})
	}
}

func TestCorruptRankFlipsOneElement(t *testing.T) {
	for _, arm := range hookArms {
		t.Run(arm.name, func(t *testing.T) {
			c := openComm(t, 8, withEnv(arm.env, collectives.EnvCorruptRank, "2"), 0, 0)
			for _, dt := range []collectives.DType{collectives.Float, collectives.BFloat16, collectives.Int8} {
				out := runCase(t, c, testCase{coll: arm.coll, dt: dt, op: collectives.Sum, bytes: 4 << 10}, 3)
				if out.err != nil {
					t.Fatal(out.err)
				}
				for r, w := range out.wrong {
					if want := int64(map[bool]int{true: 1}[r == 2]); w != want {
						t.Errorf("%s %s: rank %d has %d wrong elements, want %d", out.algo, dt, r, w, want)
					}
				}
			}
		})
	}
}

func TestHooksRejectBadRanks(t *testing.T) {
	for _, v := range []string{"x", "-1", "8"} {
		for _, key := range []string{collectives.EnvSkipRank, collectives.EnvCorruptRank} {
			_, err := New().Open(collectives.Config{NThreads: 2, NGpus: 4, Env: map[string]string{key: v}})
			if err == nil {
				t.Errorf("%s=%s: Open succeeded", key, v)
			}
		}
	}
}
