package gpuengine

import (
	"fmt"
	"math/bits"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// A launch plan: which kernel, how many blocks, and the rounds of the kernels that move their data through
// the data halves in pieces (LP and direct alltoall). Every rank of a call computes the same plan, which the
// kernels' counters rely on.

// kernelNames maps (collective, algorithm) to the kernel of kernels/*.cu.
var kernelNames = map[*collectives.Collective]map[string]string{
	collectives.AllReduce: {
		collectives.Ring: "ring_all_reduce", collectives.DDAFlat: "dda_all_reduce_flat",
		collectives.DDATree: "dda_all_reduce_tree", collectives.LowPrecision: "lp_all_reduce",
	},
	collectives.AllGather: {
		collectives.Ring: "ring_all_gather", collectives.DDA: "dda_all_gather", collectives.LowPrecision: "lp_all_gather",
	},
	collectives.ReduceScatter: {
		collectives.Ring: "ring_reduce_scatter", collectives.DDA: "dda_reduce_scatter",
		collectives.LowPrecision: "lp_reduce_scatter",
	},
	collectives.AllToAll: {
		collectives.Direct: "direct_alltoall", collectives.DDA: "dda_alltoall", collectives.LowPrecision: "lp_alltoall",
	},
	collectives.Broadcast: {collectives.Direct: "direct_broadcast"},
	collectives.Reduce:    {collectives.Direct: "direct_reduce"},
	collectives.Gather:    {collectives.Direct: "direct_gather"},
	collectives.Scatter:   {collectives.Direct: "direct_scatter"},
	collectives.SendRecv:  {collectives.Direct: "direct_sendrecv"},
	collectives.AllToAllV: {collectives.Direct: "direct_alltoallv"},
	collectives.HyperCube: {collectives.HyperCubeSteps: "hypercube_step"},
}

// directSlots is how many pieces of one round a direct kernel's data half holds, and directElems how many
// elements of each piece the rounds cover (kernels/direct.cu, hypercube.cu). Every rank computes the same, as
// the rounds' barriers need: alltoallv's rounds cover k.MaxPeer, the largest piece any rank sends a peer.
func directSlots(coll *collectives.Collective, n int64) int64 {
	switch coll {
	case collectives.Broadcast, collectives.Scatter, collectives.SendRecv:
		return 1
	case collectives.HyperCube:
		return max(n/2, 1)
	}
	return n
}

func directElems(coll *collectives.Collective, k collectives.Counts) int64 {
	if coll == collectives.AllToAllV {
		return k.MaxPeer
	}
	return k.Param
}

// Kernels of kernels/util.cu, barrier.cu and copyengine.cu.
const (
	flipKernel     = "rx_flip_bits"
	barrierKernel  = "rx_barrier"
	ceReduceKernel = "ce_reduce"
)

// round is one launch of a rounds kernel: Args.x0 and x1.
type round struct{ off, len int64 }

// plan is the launches of one call on one rank.
type plan struct {
	kernel  string
	blocks  int
	rounds  []round // nil: one launch without rounds
	steps   int     // launches per round, Args.x2 the step (hypercube); 0: one with x2 as the call sets it
	threads int     // threads per block; 0: blockThreads
	early   bool    // programmatic dependent launch: may start while the kernel ahead on the stream ends
	lpPush  bool    // LP all_gather in one chunk, pushed into its peers' buffers (Args.x0 = 1)
	shared  int     // bytes of dynamic shared memory a block
}

// launches is how many kernel launches the plan makes on each rank: one per round and step, 1 without rounds.
func (p plan) launches() int {
	if p.rounds == nil {
		return 1
	}
	return len(p.rounds) * max(p.steps, 1)
}

// at is the round and step of launch ph of a rounds plan: every step of a round before the next round.
func (p plan) at(ph int) (round, int) {
	steps := max(p.steps, 1)
	return p.rounds[ph/steps], ph % steps
}

const (
	llFlatKernel       = "dda_all_reduce_flat_ll"
	llTreeKernel       = "dda_all_reduce_tree_ll"
	ll128Kernel        = "dda_all_reduce_flat_ll128"
	pushKernel         = "dda_all_reduce_push"
	llBytesPerBlock    = 4 * blockThreads
	ll128BytesPerBlock = 120 * blockThreads / 8 // a 128-byte line of 120 data bytes per 8 threads
	ddaBytesPerBlock   = 16 * blockThreads
	// twoRankLLMax is the largest 2-rank all_reduce that takes LL rather than LL128: at 128 KiB both took 3.15 us
	// on 2 H100s, below it LL was up to 0.4 us faster, above it LL128 (twoRankAllReduce).
	twoRankLLMax = 128 << 10
)

// bytesPerBlock is the data each block of a kernel should have at least before another block pays off.
const bytesPerBlock = 64 << 10

// gridFor spreads bytes over blocks of bytesPerBlock, at least 1, at most limit.
func gridFor(bytes int64, limit int) int { return gridForUnit(bytes, bytesPerBlock, limit) }

// gridForUnit spreads bytes over blocks of unit bytes, at least 1, at most limit.
func gridForUnit(bytes, unit int64, limit int) int {
	return int(min(max((bytes+unit-1)/unit, 1), int64(limit)))
}

// makePlan plans call algo for n ranks with per-rank counts k of elements of size bytes.
func (c *comm) makePlan(coll *collectives.Collective, algo string, k collectives.Counts, size int) (plan, error) {
	coll = coll.Base()
	n := int64(c.nranks)
	p := plan{kernel: kernelNames[coll][algo]}
	if p.kernel == "" {
		return p, collectives.ErrUnsupported
	}
	total := max(k.Send, k.Recv) * int64(size)
	switch algo {
	case collectives.Ring:
		p.blocks = gridFor(total, min(c.tuning.RingBlocks, c.blockCap))
	case collectives.DDAFlat, collectives.DDATree, collectives.DDA:
		// DDA's calls are a launch and a round trip over the link; started early, the launch overlaps the call
		// ahead (every kernel waits for that call's end first: RX_COMM), on fewer blocks where ranks share a GPU.
		most := c.blockCap
		if p.early = c.earlyCap > 0; p.early {
			most = c.earlyCap
		}
		most = min(most, defaultBlocks)
		if algo != collectives.DDA && n == 2 {
			p.kernel, p.blocks = twoRankAllReduce(total, c.tuning.LLMax, most, !c.gatedOff.LL128)
			break
		}
		// A 16-byte vector per thread: DDA's peer loads are latency-bound, so the more in flight the better.
		// The push tree's grid is bounded only by most (2-8 MiB on 2 H200s: 24 blocks 17.6-48.8 us, 128 blocks
		// 14.1-33.7 us); the other DDA kernels keep RCCL_DDA_MAX_BLOCKS, which sizes RCCLX's.
		limit := c.policy.MaxBlocks
		if algo == collectives.DDATree {
			limit = most
		}
		p.blocks = gridForUnit(total, ddaBytesPerBlock, min(limit, most))
		// LL (kernels/ll.cu) up to the tuning's size: one 4-byte word of the piece per thread, so that every
		// wait overlaps the others; its grid is bounded by the GPU rather than by RCCL_DDA_MAX_BLOCKS, which
		// sizes RCCLX's copy-in kernels.
		slice := k.Param / n * int64(size)
		switch {
		case total > c.tuning.LLMax:
		case algo == collectives.DDAFlat && total <= llBytes && n <= llMaxRanks:
			p.kernel, p.blocks = llFlatKernel, gridForUnit(total, llBytesPerBlock, most)
		case algo == collectives.DDATree && slice <= llBytes && n <= llMaxRanks/2:
			p.kernel, p.blocks = llTreeKernel, gridForUnit(slice, llBytesPerBlock, most)
		}
	case collectives.Direct, collectives.HyperCubeSteps:
		per := c.half / (directSlots(coll, n) * int64(size)) / vecElems(size) * vecElems(size)
		p.rounds = splitRounds(directElems(coll, k), per, vecElems(size))
		p.blocks = gridFor(min(total, c.half), min(c.lpBlocks(false), c.blockCap))
		if algo == collectives.HyperCubeSteps {
			p.steps = bits.Len(uint(n)) - 1
		}
	case collectives.LowPrecision:
		// The codes a buffer of the half holds (kernels/lowprec.cu): all_reduce a slot per source rank for each
		// of its two exchanges, all_gather its own piece (a slot per source rank where it pushes), the others a
		// piece per rank. One launch runs every chunk of the call (Args.x1 the chunk length; all_reduce's
		// chunks cut each rank's slice).
		pieces, longest := n, k.Param
		scaled := c.policy.LPMode == collectives.LPModeScaled
		block := int64(c.policy.LPBlock)
		switch coll {
		case collectives.AllReduce:
			pieces, longest = 2*n, (k.Param+n-1)/n
		case collectives.AllGather:
			pieces = 1
			// A call that fits one chunk of the pushed layout pushes: its codes cross the link as stores
			// while it quantizes, and each rank decodes from its own buffer after one barrier. On 2x H200
			// that took 12% off float at 64 MiB and 6-15% off bfloat16 at 16-64 MiB; pushed in several
			// chunks, larger calls were 6-18% slower than pulled.
			if p.lpPush = longest <= lpChunkLen(lpBuffer(c.half), n, block, scaled); p.lpPush {
				pieces = n
			}
		}
		per := lpChunkLen(lpBuffer(c.half), pieces, block, scaled)
		if per < 1 {
			return p, fmt.Errorf("LP block %d does not fit a %d-byte LP buffer", c.policy.LPBlock, lpBuffer(c.half))
		}
		unit := lpUnit(block, scaled)
		bulk := coll == collectives.AllToAll && size == 4 && !scaled && c.bulk()
		// The bulk kernel splits no warps by stage (its blocks run their jobs one after another), so it takes the
		// fewest chunks: one where the call fits, else what the buffer holds. On 2x H200 chunks of 4M elements
		// were 8% slower at 1 GiB than one chunk.
		if least := lpLeastChunk(coll); least > 0 && !p.lpPush && !bulk {
			per = lpSplitLen(longest, per, unit, least)
		}
		if longest > 0 {
			p.rounds = []round{{0, evenRound(longest, per, unit)}}
		}
		p.threads = lpThreads(size, scaled)
		switch {
		case bulk:
			p.kernel, p.threads, p.shared = p.kernel+"_bulk", lpBulkThreads, lpBulkShared
		case scaled:
			p.kernel += "_scaled" // the entry point of mode scaled (Args.x3 = 1)
		case lpNarrow(coll, size, scaled, total):
			p.kernel, p.threads = p.kernel+"_narrow", lpNarrowThreads
		}
		p.threads = lpThreadsFor(p.threads, size, scaled, p.lpPush)
		// Launched early, an LP kernel's blocks take each SM as the call ahead leaves it, without the launch gap
		// between kernels: 2-3.5% off bfloat16 all_reduce at 16-64 MiB on 2x H200, 2-5% off the bulk alltoall
		// at 16-64 MiB and up to 2% from 256 MiB on 2x H100.
		most := c.blockCap
		if p.early = c.earlyCap > 0; p.early {
			most = c.earlyCap
		}
		p.blocks = gridFor(min(total, c.half), min(c.lpBlocks(p.lpPush), most))
	}
	return p, nil
}

// bulk says whether float LP alltoall in mode rcclx takes lp_alltoall_bulk (kernels/lowprec.cu), which moves its
// bytes with the SMs' bulk copies: every GPU one with bulk copies (gpurt.Caps) whose blocks may take lpBulkShared (224 KiB,
// more than sm_120's 99), each the GPU of one rank. On 2x H200 it took
// 10% off float at 1 GiB and 12% at 256 MiB. Its blocks take most of an SM's shared memory,
// so a block of it fits beside no other of its own and perhaps no block of another kernel: kernels of ranks
// that share a GPU could then not all be resident at once (setCaps). Launched early, its blocks only wait for
// the SMs the call ahead leaves: a grid lets its dependents launch once every block of it has started
// (grid_dep_sync), so none of those blocks waits for an SM.
func (c *comm) bulk() bool {
	for _, r := range c.ranks {
		if c.gatedOff.Bulk || r.sharedOptin < lpBulkShared {
			return false
		}
	}
	return c.ownGPUs
}

// lpBlocks is the most blocks of an LP or direct kernel: RCCLX_TESTS_GPU_LP_BLOCKS where it is set, otherwise
// defaultBlocks, or every multiprocessor for an all_gather that pushes. That one runs no pipeline, and neither
// the link nor HBM holds it but each thread's chain of loads and stores, so more blocks share its work: on 2x
// H200, 132 blocks against 128 took 1.5% off float at 64 MiB and 3% at 128 MiB.
func (c *comm) lpBlocks(push bool) int {
	switch {
	case c.tuning.LPBlocks > 0:
		return c.tuning.LPBlocks
	case push:
		return maxBlocks
	}
	return defaultBlocks
}

// twoRankAllReduce is the kernel and grid of DDA all_reduce at 2 ranks, flat or tree alike: there the two-shot's
// reduce-scatter and all-gather send what the one-shot sends and cost one more round trip, and both sum the
// two inputs in rank order, so the one-shot runs in three protocols by size (2x H100, -G 20): LL up to
// twoRankLLMax, LL128 up to the tuning's LL size (256 KiB-1 MiB: 3.5-6.5 us against the LL two-shot's 4.8-9.5),
// then the push one-shot (2-4 MiB: 12.2-19.5 us against the push two-shot's 14.5-22.3). Grids are bounded by
// the GPU: each LL word or LL128 line has its own wait, and the push kernel's stores are what is in flight.
//
// Without LL128 (ll128 false), LL takes the sizes up to the tuning's LL size that fit its single-shot layout.
func twoRankAllReduce(total, llMax int64, most int, ll128 bool) (string, int) {
	switch {
	case total <= min(llMax, twoRankLLMax) || !ll128 && total <= min(llMax, llBytes):
		return llFlatKernel, gridForUnit(total, llBytesPerBlock, most)
	case ll128 && total <= min(llMax, ll128Bytes):
		return ll128Kernel, gridForUnit(total, ll128BytesPerBlock, most)
	}
	return pushKernel, gridForUnit(total, ddaBytesPerBlock, most)
}

// vecElems is the number of elements in 16 bytes (RX_VE).
func vecElems(size int) int64 { return int64(max(16/size, 1)) }

// evenRound is the length of each of the fewest rounds (or LP chunks) of at most per elements (a multiple of
// unit) that cover count: as even as unit allows, since every round costs a launch and barriers, and every
// chunk a barrier, whatever its length (a last round of a few elements once cost LP all_reduce a third of its
// bandwidth at 256 MiB).
func evenRound(count, per, unit int64) int64 {
	rounds := (count + per - 1) / per
	each := (count + rounds - 1) / rounds
	return (each + unit - 1) / unit * unit
}

// splitRounds cuts count elements into the fewest even rounds of at most per (a multiple of unit), the last
// one shorter.
func splitRounds(count, per, unit int64) []round {
	if count == 0 {
		return nil
	}
	per = evenRound(count, per, unit)
	var out []round
	for off := int64(0); off < count; off += per {
		out = append(out, round{off, min(per, count-off)})
	}
	return out
}

// lpBuffer is the bytes of each of the two buffers an LP launch splits its half into (LP::sub in
// kernels/lowprec.cu), 16-byte aligned: chunk k in buffer k % 2, so that a chunk's exchange overlaps the next.
func lpBuffer(half int64) int64 { return half / 2 / 16 * 16 }

// lpSplitLen is the most elements per LP chunk: per (what a buffer holds), or less, so that a call of at
// least lpSplitChunks chunks of least elements has that many chunks, enough for the kernel to give each stage
// warps of its own (kernels/lowprec.cu, lp_split).
func lpSplitLen(longest, per, unit, least int64) int64 {
	if longest < lpSplitChunks*least || (longest+per-1)/per >= lpSplitChunks {
		return per
	}
	return ((longest+lpSplitChunks-1)/lpSplitChunks + unit - 1) / unit * unit
}

// lpLeastChunk is the shortest chunk lpSplitLen cuts an LP call of coll into, 0 for none: what measured
// fastest on 2 ranks. Cut and split, all_gather and alltoall ran 5-15% faster from 64 MiB on 2x H200;
// all_reduce, whose chunks cut each rank's slice, 8% faster at 128 MiB on 2x H100 with chunks of at least 4M
// elements but 6% slower at 64 MiB with 2M (3% on 2x H200, where 64 MiB is fastest in one chunk);
// reduce_scatter 6-11% slower from 64 to 256 MiB.
func lpLeastChunk(coll *collectives.Collective) int64 {
	switch coll {
	case collectives.AllGather, collectives.AllToAll:
		return lpMinChunk
	case collectives.AllReduce:
		return 2 * lpMinChunk
	}
	return 0
}

// lpUnit is the granule of LP chunks and block sub-ranges: 16 elements, and whole LP blocks when scaled.
func lpUnit(block int64, scaled bool) int64 {
	if !scaled {
		return 16
	}
	g := block & -block
	return block * 16 / min(g, 16)
}

// lpChunkLen is the most elements per piece in one LP chunk such that pieces codes of that length, and when
// scaled their fp32 scales (one per block), fit a buffer of buf bytes: pieces*R (+ 4*pieces*R/block) <= buf
// (R a multiple of the unit); 0 if not even one unit fits.
func lpChunkLen(buf, pieces, block int64, scaled bool) int64 {
	unit := lpUnit(block, scaled)
	if !scaled {
		return buf / pieces / unit * unit
	}
	r := buf / pieces * block / (block + 4) / unit * unit
	for r > 0 && pieces*r+4*pieces*((r+block-1)/block) > buf {
		r -= unit
	}
	return r
}
