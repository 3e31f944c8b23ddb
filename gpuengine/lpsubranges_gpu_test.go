package gpuengine

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// lagBlock is the block of rank 1 that kernels/lowprec.cu's RX_LP_LAG_BLOCK holds back.
const lagBlock = 4

// A barrier pairs each block with the same block of its peers only, so within one launch a block may rewrite
// LP codes only where that block of every peer has read them: every chunk of an all_gather, reduce_scatter or
// alltoall must be cut into the same block sub-ranges (kernels/lowprec.cu, lp_piece). This runs them at sizes
// whose last chunk is short enough to be cut into shorter sub-ranges than the others, with block lagBlock of
// rank 1 held back before each read of its peer's codes, so that block lagBlock+1 of rank 0 writes the last
// chunk's codes before then; the results must still equal the host engine's.
func TestGPULPSubRangesWithALaggingBlock(t *testing.T) {
	onGPU(t)
	plantedDefines = []string{fmt.Sprintf("-DRX_LP_LAG_BLOCK=%d", lagBlock)}
	cubins.Clear()
	t.Cleanup(func() {
		plantedDefines = nil
		cubins.Clear()
	})
	env := merge(lpEnv, map[string]string{"RCCL_DDA_SENDBUF_BYTES": "4M"})
	gpu, host := open(t, New(), 2, env, 0), newHost(t, 2, env)
	rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
	for _, coll := range []*collectives.Collective{collectives.AllGather, collectives.ReduceScatter, collectives.AllToAll} {
		s := callSpec{coll, collectives.Float, collectives.Sum, shortLastChunk(t, gpu.(*comm), coll), false, 0, 0}
		t.Logf("%s at %d bytes", coll.Name, s.bytes)
		in := roughInputs(s, 2, rng)
		out, algo := run(t, gpu, s, in)
		sameAsHost(t, host, s, in, out, algo)
	}
}

// shortLastChunk is the smallest report size from 4 MiB at which coll's LP plan on c has at least three
// chunks, the last one short enough that, cut on its own length (as kernels/comm.cuh's part cuts a length),
// its block sub-ranges would be shorter than the others', and block lagBlock+1 has elements of it.
func shortLastChunk(t *testing.T, c *comm, coll *collectives.Collective) int64 {
	t.Helper()
	const unit = 16 // lpUnit of mode rcclx
	sub := func(n, blocks int64) int64 { return (n + blocks*unit - 1) / (blocks * unit) * unit }
	for bytes := int64(4 << 20); bytes < 256<<20; bytes += 2 * 4 * unit {
		k := coll.Counts(bytes, 2, 0, collectives.Float)
		p, err := c.makePlan(coll, collectives.LowPrecision, k, 4)
		if err != nil {
			t.Fatal(err)
		}
		x1, blocks := p.rounds[0].len, int64(p.blocks)
		if blocks <= lagBlock+1 {
			t.Skipf("%s: the LP grid here has %d blocks, and the lagging block %d needs one after it", coll.Name, blocks, lagBlock)
		}
		chunks := (k.Param + x1 - 1) / x1
		last := k.Param - (chunks-1)*x1
		if chunks >= 3 && sub(last, blocks) < sub(x1, blocks) && (lagBlock+1)*sub(x1, blocks) < last {
			return bytes
		}
	}
	t.Fatalf("%s: no size up to 256 MiB has a short last LP chunk", coll.Name)
	return 0
}
