package hostengine

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// TestAllReduceBiasExpectation: all_reduce_bias's expected output is the reduction of every rank's input
// combined with the rank's own bias, computed here with the engine's reduction (rank order, then the bias):
// it must match collectives.Expect bit for bit, and a result without the bias must not.
func TestAllReduceBiasExpectation(t *testing.T) {
	coll := collectives.AllReduceBias
	for _, n := range []int{1, 2, 3, 5} {
		for _, dt := range []collectives.DType{collectives.Float, collectives.BFloat16, collectives.Half, collectives.Int32, collectives.Uint8} {
			for _, op := range []collectives.Op{collectives.Sum, collectives.Prod, collectives.Max, collectives.Min} {
				t.Run(fmt.Sprintf("%d/%s/%s", n, dt, op), func(t *testing.T) {
					seed := rand.Uint64()
					es := int64(dt.Size())
					red := newReducer(dt, op, collectives.RunFP8Flavour())
					var in [][]byte
					for r := range n {
						k := coll.Counts(999*es, n, r, dt)
						in = append(in, coll.Input(dt, op, r, n, k, seed))
					}
					for r := range n {
						k := coll.Counts(999*es, n, r, dt)
						if coll.Bytes(k, dt) != 999*es || int64(len(in[r])) != 2*k.Param*es {
							t.Fatalf("size column %d, input %d bytes", coll.Bytes(k, dt), len(in[r]))
						}
						m := k.Param * es
						acc := append([]byte(nil), in[0][:m]...)
						for p := 1; p < n; p++ {
							red.combine(acc, acc, in[p][:m], 1, 1)
						}
						e := coll.Expect(dt, op, r, -1, n, k, seed, coll.Tolerance(dt, op, n, false))
						if wrong, _ := e.Check(acc); wrong == 0 && k.Param > 0 {
							t.Errorf("rank %d: a result without the bias passes", r)
						}
						red.combine(acc, acc, in[r][m:], 1, 1)
						if wrong, _ := e.Check(acc); wrong != 0 {
							t.Errorf("rank %d: %d wrong (seed %#x)", r, wrong, seed)
						}
					}
				})
			}
		}
	}
}

func TestAllReduceBiasNotOnTheHostEngine(t *testing.T) {
	c := openComm(t, 2, nil, 0, 0)
	if err := c.CanRun(collectives.AllReduceBias); err == nil {
		t.Error("the host engine claims all_reduce_bias")
	}
	for _, coll := range collectives.All() {
		if err := c.CanRun(coll); err != nil {
			t.Errorf("%s: %v", coll.Name, err)
		}
	}
}
