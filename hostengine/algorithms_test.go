package hostengine

import (
	"fmt"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

var rankCounts = []int{1, 2, 3, 5, 8, 16}

// rcclxColls are the collectives the RCCLX policy (ring, direct, DDA, LP) applies to; peers_test.go covers the
// others.
var rcclxColls = []*collectives.Collective{collectives.AllReduce, collectives.AllGather, collectives.AllToAll,
	collectives.ReduceScatter}

// testChunk makes every size above a few elements span several ring chunks.
const testChunk = 64

// sizes returns 0, one element, and prime element counts; the last is a multiple of the rank count, so that
// DDA tree can take it.
func sizes(dt collectives.DType, nranks int) []int64 {
	es := int64(dt.Size())
	return []int64{0, es, 37 * es, 1031 * es, int64(nranks) * 131 * es}
}

func opsFor(c *collectives.Collective) []collectives.Op {
	if c.Reduces {
		return collectives.AllOps()
	}
	return []collectives.Op{collectives.Sum}
}

// fallback is what runs when an RCCLX path does not apply.
func fallback(c *collectives.Collective) string {
	if c == collectives.AllToAll {
		return collectives.Direct
	}
	return collectives.Ring
}

// forEachCase calls fn for every collective, dtype of dts, op, size and placement.
func forEachCase(nranks int, dts []collectives.DType, fn func(testCase)) {
	for _, coll := range rcclxColls {
		for _, dt := range dts {
			for _, op := range opsFor(coll) {
				for _, b := range sizes(dt, nranks) {
					for _, inPlace := range []bool{false, true} {
						fn(testCase{coll: coll, dt: dt, op: op, bytes: b, inPlace: inPlace})
					}
				}
			}
		}
	}
}

func TestRingAndDirectEveryTypeAndOp(t *testing.T) {
	counts := rankCounts
	if testing.Short() {
		counts = []int{1, 3, 8}
	}
	for _, n := range counts {
		t.Run(fmt.Sprintf("%dranks", n), func(t *testing.T) {
			c := openComm(t, n, nil, 0, testChunk)
			forEachCase(n, collectives.AllDTypes(), func(tc testCase) {
				expectCorrect(t, c, tc, fallback(tc.coll))
			})
		})
	}
}

// TestRingDefaultChunk runs sizes that span several default chunks per segment, and views off 16-byte
// alignment.
func TestRingDefaultChunk(t *testing.T) {
	c := openComm(t, 3, nil, 0, 0)
	if seg := int64(7<<20) / 3; seg < 2*c.chunkBytes {
		t.Fatalf("segments of %d bytes do not span several %d-byte chunks", seg, c.chunkBytes)
	}
	for _, coll := range rcclxColls {
		for _, op := range []collectives.Op{collectives.Sum, collectives.Avg} {
			for _, shift := range []int64{0, 1} {
				expectCorrect(t, c, testCase{coll: coll, dt: collectives.Float, op: op, bytes: 7<<20 + 4, shift: shift, inPlace: shift == 1}, fallback(coll))
			}
		}
	}
}

// TestManyCallsInFlight launches each algorithm many times on the same buffers before waiting, as
// nccl-tests' timing loop does: a rank that let its call end while a peer still read its buffers would race
// with its next call (the race detector sees it) or corrupt the peer's result.
func TestManyCallsInFlight(t *testing.T) {
	env := map[string]string{"RCCL_DDA_ENABLE": "1", "RCCL_DDA_SENDBUF_BYTES": "1M", "RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES": "4K"}
	lp := map[string]string{"RCCL_LOW_PRECISION_ENABLE": "1", "RCCLX_TESTS_LP_MIN_BYTES": "0"}
	for _, arm := range []struct {
		env   map[string]string
		dt    collectives.DType
		bytes int64
		want  map[*collectives.Collective]string
	}{
		{nil, collectives.Float, 64 << 10, nil},
		{nil, collectives.Float, 1 << 10, nil}, // one chunk per segment
		{env, collectives.Float, 4 << 10, map[*collectives.Collective]string{collectives.AllReduce: collectives.DDAFlat}},
		{env, collectives.Float, 64 << 10, map[*collectives.Collective]string{collectives.AllReduce: collectives.DDATree}},
		{lp, collectives.Float, 64 << 10, nil},
	} {
		c := openComm(t, 8, arm.env, 0, 1<<10)
		for _, coll := range rcclxColls {
			tc := testCase{coll: coll, dt: arm.dt, op: collectives.Sum, bytes: arm.bytes, repeat: 20}
			want := fallback(coll)
			switch {
			case arm.want[coll] != "":
				want = arm.want[coll]
			case arm.env["RCCL_DDA_ENABLE"] != "":
				want = collectives.DDA
			case arm.env["RCCL_LOW_PRECISION_ENABLE"] != "":
				want = collectives.LowPrecision
			}
			expectCorrect(t, c, tc, want)
		}
	}
}

func wantDDA(tc testCase, nranks int, flatMax int64) string {
	k := tc.coll.Counts(tc.bytes, nranks, 0, tc.dt)
	ddaType := tc.dt == collectives.Float || tc.dt == collectives.Half || tc.dt == collectives.BFloat16
	aligned := tc.shift*int64(tc.dt.Size())%16 == 0
	switch {
	case !ddaType || tc.coll.Reduces && tc.op != collectives.Sum || !aligned:
		return fallback(tc.coll)
	case tc.coll != collectives.AllReduce:
		return collectives.DDA
	case tc.coll.Bytes(k, tc.dt) <= flatMax:
		return collectives.DDAFlat
	case k.Param%int64(nranks) == 0:
		return collectives.DDATree
	}
	return collectives.Ring
}

func TestDDA(t *testing.T) {
	const flatMax = 256
	env := map[string]string{"RCCL_DDA_ENABLE": "1", "RCCL_DDA_SENDBUF_BYTES": "64K",
		"RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES": fmt.Sprint(flatMax)}
	dts := []collectives.DType{collectives.Float, collectives.Half, collectives.BFloat16, collectives.Int32}
	for _, n := range rankCounts {
		t.Run(fmt.Sprintf("%dranks", n), func(t *testing.T) {
			c := openComm(t, n, env, 0, testChunk)
			ran := map[string]bool{}
			forEachCase(n, dts, func(tc testCase) {
				if tc.op > collectives.Max {
					return // sum is DDA's op; prod and max check the fallback
				}
				ran[expectCorrect(t, c, tc, wantDDA(tc, n, flatMax)).algo] = true
				tc.shift = 1
				expectCorrect(t, c, tc, wantDDA(tc, n, flatMax))
			})
			for _, algo := range []string{collectives.DDA, collectives.DDAFlat, collectives.DDATree} {
				if !ran[algo] {
					t.Errorf("no case ran %s", algo)
				}
			}
		})
	}
}

func TestLowPrecision(t *testing.T) {
	for _, mode := range []string{collectives.LPModeRCCLX, collectives.LPModeScaled} {
		env := map[string]string{"RCCL_LOW_PRECISION_ENABLE": "1", "RCCLX_TESTS_LP_MIN_BYTES": "0",
			"RCCLX_TESTS_LP_MODE": mode, "RCCLX_TESTS_LP_BLOCK": "16"}
		for _, n := range rankCounts {
			t.Run(fmt.Sprintf("%s/%dranks", mode, n), func(t *testing.T) {
				c := openComm(t, n, env, 0, testChunk)
				quantized := map[*collectives.Collective]bool{}
				dts := []collectives.DType{collectives.Float, collectives.BFloat16, collectives.Half}
				forEachCase(n, dts, func(tc testCase) {
					if tc.op > collectives.Prod {
						return
					}
					want := fallback(tc.coll)
					if tc.dt != collectives.Half && (!tc.coll.Reduces || tc.op == collectives.Sum) {
						want = collectives.LowPrecision
					}
					out := expectCorrect(t, c, tc, want)
					for _, e := range out.relErr {
						quantized[tc.coll] = quantized[tc.coll] || e > 0 && want == collectives.LowPrecision
					}
				})
				// The inputs (multiples of 1/4 up to 8, or of 1/2 for bfloat16) include values E4M3 cannot
				// hold, so an FP8 path that really quantizes is never exact everywhere.
				for _, coll := range rcclxColls {
					if !quantized[coll] {
						t.Errorf("%s: low precision results were bit-exact: nothing was quantized", coll.Name)
					}
				}
			})
		}
	}
}
