package gpuengine

import (
	"fmt"

	"rcclx-tests/collectives"
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
	kernel string
	blocks int
	rounds []round // nil: one launch without rounds
	lpMode int64   // Args.x3
}

const (
	llFlatKernel     = "dda_all_reduce_flat_ll"
	llTreeKernel     = "dda_all_reduce_tree_ll"
	llBytesPerBlock  = 4 * blockThreads
	ddaBytesPerBlock = 16 * blockThreads
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
	n := int64(c.nranks)
	p := plan{kernel: kernelNames[coll][algo]}
	if p.kernel == "" {
		return p, collectives.ErrUnsupported
	}
	total := max(k.Send, k.Recv) * int64(size)
	switch algo {
	case collectives.Ring:
		p.blocks = gridFor(total, min(c.tuning.ringBlocks, c.blockCap))
	case collectives.DDAFlat, collectives.DDATree, collectives.DDA:
		// A 16-byte vector per thread: DDA's peer loads are latency-bound, so the more in flight the better.
		p.blocks = gridForUnit(total, ddaBytesPerBlock, min(c.policy.MaxBlocks, c.blockCap, maxBlocks))
		// LL (kernels/ll.cu) up to the tuning's size: one 4-byte word of the piece per thread, so that every
		// wait overlaps the others; its grid is bounded by the GPU rather than by RCCL_DDA_MAX_BLOCKS, which
		// sizes RCCLX's copy-in kernels.
		ll := func(kernel string, piece int64) {
			p.kernel, p.blocks = kernel, gridForUnit(piece, llBytesPerBlock, min(c.blockCap, maxBlocks))
		}
		slice := k.Param / n * int64(size)
		switch {
		case total > c.tuning.llMax:
		case algo == collectives.DDAFlat && total <= llBytes && n <= llMaxRanks:
			ll(llFlatKernel, total)
		case algo == collectives.DDATree && slice <= llBytes && n <= llMaxRanks/2:
			ll(llTreeKernel, slice)
		}
	case collectives.Direct:
		per := c.half / (n * int64(size)) / vecElems(size) * vecElems(size)
		p.rounds = splitRounds(k.Param, per)
		p.blocks = gridFor(min(total, c.half), min(c.tuning.lpBlocks, c.blockCap))
	case collectives.LowPrecision:
		pieces := n
		if coll == collectives.AllGather {
			pieces = 1
		}
		scaled := c.policy.LPMode == collectives.LPModeScaled
		per := lpRoundLen(c.half, pieces, int64(c.policy.LPBlock), scaled)
		if per < 1 {
			return p, fmt.Errorf("LP block %d does not fit a %d-byte buffer half", c.policy.LPBlock, c.half)
		}
		if coll == collectives.AllReduce {
			p.rounds = sliceRounds(k.Param, n, per, lpUnit(int64(c.policy.LPBlock), scaled))
		} else {
			p.rounds = splitRounds(k.Param, per)
		}
		if scaled {
			p.lpMode = 1
		}
		p.blocks = gridFor(min(total, c.half), min(c.tuning.lpBlocks, c.blockCap))
	}
	return p, nil
}

// vecElems is the number of elements in 16 bytes (RX_VE).
func vecElems(size int) int64 { return int64(max(16/size, 1)) }

// splitRounds cuts count elements into rounds of at most per.
func splitRounds(count, per int64) []round {
	var out []round
	for off := int64(0); off < count; off += per {
		out = append(out, round{off, min(per, count-off)})
	}
	return out
}

// sliceRounds covers LP all_reduce's slices [q*count/n, (q+1)*count/n): round i covers elements
// [i*per, (i+1)*per) of every slice; Args.x1 is per for every round (the kernel clips each slice). Where one
// round holds the longest slice, per shrinks to it (rounded up to unit): the kernel spreads x1 elements over
// its blocks, so a round longer than the slices would leave most blocks idle.
func sliceRounds(count, n, per, unit int64) []round {
	longest := (count + n - 1) / n
	per = min(per, (longest+unit-1)/unit*unit)
	var out []round
	for off := int64(0); off < longest; off += per {
		out = append(out, round{off, per})
	}
	return out
}

// lpUnit is the granule of LP rounds and block sub-ranges: 16 elements, and whole LP blocks when scaled.
func lpUnit(block int64, scaled bool) int64 {
	if !scaled {
		return 16
	}
	g := block & -block
	return block * 16 / min(g, 16)
}

// lpRoundLen is the most elements per piece in one LP round such that pieces codes of that length and their
// fp32 scales (one per block) fit a half: pieces*R + 4*pieces*R/block <= half (R a multiple of the unit);
// 0 if not even one unit fits.
func lpRoundLen(half, pieces, block int64, scaled bool) int64 {
	unit := lpUnit(block, scaled)
	r := half / pieces * block / (block + 4) / unit * unit
	for r > 0 && pieces*r+4*pieces*((r+block-1)/block) > half {
		r -= unit
	}
	return r
}
