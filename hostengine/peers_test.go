package hostengine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// peerColls are the collectives outside the RCCLX policy, with the rank counts they run at.
var peerColls = []struct {
	coll  *collectives.Collective
	ranks []int
}{
	{collectives.Broadcast, []int{1, 2, 3, 5, 7}},
	{collectives.Reduce, []int{1, 2, 3, 5, 7}},
	{collectives.Gather, []int{1, 3, 5, 7}},
	{collectives.Scatter, []int{1, 3, 5, 7}},
	{collectives.SendRecv, []int{1, 2, 3, 5, 7}},
	{collectives.AllToAllV, []int{1, 2, 3, 5, 7}},
	{collectives.HyperCube, []int{1, 2, 4, 8}},
}

// roots are the roots a collective runs with on n ranks: every rank for rooted collectives, else none.
func roots(c *collectives.Collective, n int) []int {
	if !c.Rooted {
		return []int{-1}
	}
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func peerOps(c *collectives.Collective) []collectives.Op {
	if c.SweepsOps() {
		return collectives.AllOps()
	}
	return []collectives.Op{collectives.Sum}
}

// TestPeerCollectivesEveryTypeOpAndRoot: every type, op and root, odd sizes, in and out of place; the
// outputs start poisoned and nothing outside the defined output may change (the non-roots' of reduce and
// gather, the tail of alltoallv's receive buffers).
func TestPeerCollectivesEveryTypeOpAndRoot(t *testing.T) {
	for _, pc := range peerColls {
		for _, n := range pc.ranks {
			t.Run(fmt.Sprintf("%s/%dranks", pc.coll.Name, n), func(t *testing.T) {
				c := openGroups(t, 1, n, nil, 10*time.Second, 0)
				for _, dt := range collectives.AllDTypes() {
					es := int64(dt.Size())
					for _, op := range peerOps(pc.coll) {
						for _, b := range []int64{0, es, 37 * es, int64(n) * 67 * es} {
							for _, root := range roots(pc.coll, n) {
								for _, inPlace := range []bool{false, true} {
									tc := testCase{coll: pc.coll, dt: dt, op: op, root: root, bytes: b, inPlace: inPlace}
									expectCorrect(t, c, tc, collectives.Policy{}.Choose(pc.coll, dt, op, n, collectives.Counts{}, true))
								}
							}
						}
					}
				}
			})
		}
	}
}

// TestPeerCollectivesManyCallsInFlight: the timing loop's back-to-back calls on the same buffers (a rank that
// left a call while a peer still read it would race with its next call). Out of place: in place, repeated
// sendrecv, alltoallv and reduce calls change their own inputs.
func TestPeerCollectivesManyCallsInFlight(t *testing.T) {
	for _, pc := range peerColls {
		n := pc.ranks[len(pc.ranks)-1]
		c := openComm(t, 8, nil, 10*time.Second, 0)
		if n != 8 {
			c = openGroups(t, 1, n, nil, 10*time.Second, 0)
		}
		tc := testCase{coll: pc.coll, dt: collectives.Float, op: collectives.Sum, root: n - 1, bytes: 64 << 10, repeat: 20}
		if !pc.coll.Rooted {
			tc.root = -1
		}
		expectCorrect(t, c, tc, collectives.Policy{}.Choose(pc.coll, tc.dt, tc.op, n, collectives.Counts{}, true))
	}
}

func TestPeerCollectivesCorruptRank(t *testing.T) {
	for _, pc := range peerColls {
		n := pc.ranks[len(pc.ranks)-1]
		const bad = 1
		c := openGroups(t, 1, n, map[string]string{collectives.EnvCorruptRank: fmt.Sprint(bad)}, 0, 0)
		root := -1
		if pc.coll.Rooted {
			root = bad // reduce and gather have output only there
		}
		for _, dt := range []collectives.DType{collectives.Float, collectives.BFloat16, collectives.Int8} {
			out := runCase(t, c, testCase{coll: pc.coll, dt: dt, op: collectives.Sum, root: root, bytes: 4 << 10}, 3)
			if out.err != nil {
				t.Fatal(out.err)
			}
			for r, w := range out.wrong {
				if want := int64(map[bool]int{true: 1}[r == bad]); w != want {
					t.Errorf("%s %s: rank %d has %d wrong elements, want %d", pc.coll.Name, dt, r, w, want)
				}
			}
		}
	}
}

func TestPeerCollectivesSkipRankTimesOut(t *testing.T) {
	const timeout = 200 * time.Millisecond
	for _, pc := range peerColls {
		t.Run(pc.coll.Name, func(t *testing.T) {
			n := pc.ranks[len(pc.ranks)-1]
			c := openGroups(t, 1, n, map[string]string{collectives.EnvSkipRank: "0"}, timeout, 0)
			root := -1
			if pc.coll.Rooted {
				root = 0
			}
			out := runCase(t, c, testCase{coll: pc.coll, dt: collectives.Float, op: collectives.Sum, root: root, bytes: 4 << 10}, 1)
			var te *collectives.TimeoutError
			if !errors.As(out.err, &te) || te.Rank == 0 || te.Phase == "" {
				t.Fatalf("Wait returned %v, want a *TimeoutError naming a waiting rank", out.err)
			}
		})
	}
}

// TestAllToAllVMatrix runs alltoallv on a matrix with empty and unequal entries, scaled, on 3 of its 4 ranks.
func TestAllToAllVMatrix(t *testing.T) {
	file := filepath.Join(t.TempDir(), "m.txt")
	matrix := "0 100 260 7\n48 0 0 1\n\n1000 16 33 9\n5 5 5 5\n"
	if err := os.WriteFile(file, []byte(matrix), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"NCCL_TESTS_ALLTOALLV_MATRIX_FILE": file, "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE": "1.5"}
	coll, err := collectives.AllToAllV.Prepare(func(k string) string { return env[k] }, 3, 4096, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if coll.Base() != collectives.AllToAllV {
		t.Fatal("prepared alltoallv does not name its descriptor")
	}
	c := openGroups(t, 3, 1, nil, 10*time.Second, 0)
	for _, dt := range []collectives.DType{collectives.Int8, collectives.Half, collectives.Double} {
		k := coll.Counts(4096, 3, 0, dt)
		// Rank 0 sends 0, 150, 390 bytes, rounded down to 16: 0, 144, 384; it receives 0, 64, 1488.
		if es := int64(dt.Size()); k.SendCounts[1]*es != 144 || k.SendCounts[2]*es != 384 || k.RecvCounts[2]*es != 1488 || k.Param != 0 {
			t.Fatalf("%s counts %+v", dt, k)
		}
		for _, inPlace := range []bool{false, true} {
			expectCorrect(t, c, testCase{coll: coll, dt: dt, op: collectives.Sum, root: -1, bytes: 4096, inPlace: inPlace}, collectives.Direct)
		}
	}
}
