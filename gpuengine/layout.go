package gpuengine

import (
	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

// The layout of each rank's peer-visible buffer, as kernels/comm.cuh defines it (a test compares the numbers).
const (
	maxBlocks       = collectives.MaxGPUBlocks // RX_MAXB
	maxBarrierRanks = 64                       // RX_MAXR
	fifoSlots       = 8                        // RX_NSLOTS
	slotBytes       = 65536                    // RX_SLOT_BYTES
	ctrlBytes       = 131072                   // RX_CTRL_BYTES
	llMaxRanks      = 16                       // RX_LL_MAXR
	llBytes         = 524288                   // RX_LL_BYTES
	llAreaBytes     = 2 * llMaxRanks * 2 * llBytes
	ll128MaxRanks   = 2                     // RX_LL128_MAXR
	ll128Slot       = 2 << 20               // RX_LL128_SLOT
	ll128Bytes      = ll128Slot / 128 * 120 // the most data of one LL128 source slot
	ll128AreaBytes  = 2 * ll128MaxRanks * ll128Slot
	argsBytes       = 112 // RX_ARGS_BYTES
	dataOffset      = ctrlBytes + llAreaBytes + ll128AreaBytes + maxBlocks*fifoSlots*slotBytes

	blockThreads = 512 // every kernel's block size but LP's (__launch_bounds__ in the prelude)
	minHalf      = 4 << 20

	lpSplitChunks = 4       // RX_LP_SPLIT_CHUNKS: from this many chunks an LP kernel splits its warps
	lpMinChunk    = 2 << 20 // elements: the shortest chunk lpSplitLen cuts an all_gather or alltoall into

	lpNarrowThreads = 512      // RX_LP_NARROW_THREADS: the block size of the LP kernels' _narrow entries
	lpNarrowMax     = 64 << 20 // bytes: the largest call lpNarrow gives them
	lpPushThreads   = 256      // the block size of a float all_gather that pushes in mode rcclx (lpThreadsFor)

	lpBulkThreads = 512  // RX_BULK_THREADS: the block size of lp_alltoall_bulk
	lpBulkTile    = 8192 // RX_BULK_TILE: elements a bulk job moves
	lpBulkStages  = 5    // RX_BULK_STAGES: input tiles
	lpBulkOuts    = 2    // RX_BULK_OUTS: output tiles
	// lpBulkShared is lp_alltoall_bulk's dynamic shared memory: its stages' barriers, input and output tiles.
	lpBulkShared = 128 + (lpBulkStages+lpBulkOuts)*lpBulkTile*4
)

// defaultBlocks caps the grids of DDA's and the LP kernels unless a variable says otherwise: the grids they were
// tuned on. On 2x H200 the LP kernels were no faster on all 132 multiprocessors, but for the all_gather that
// pushes (lpBlocks). maxBlocks leaves room for a block on every multiprocessor.
const defaultBlocks = 128

// lpThreads is the block size of an LP kernel of elements of size bytes (RX_LP_RCCLX_THREADS and
// RX_LP_SCALED_THREADS in kernels/lowprec.cu, which says why).
func lpThreads(size int, scaled bool) int {
	if size == 4 && !scaled {
		return 512
	}
	return 1024
}

// lpThreadsFor is the block size of an LP launch whose entry point is bound threads (lpThreads or
// lpNarrowThreads). A float all_gather that pushes, in mode rcclx, runs on half its entry's 512 threads: on 2x
// H200 that took 3-8% off it at 16-128 MiB, while the pushing bfloat16 and mode scaled calls were 1-17% slower
// on 256 threads, and float all_reduce, reduce_scatter and alltoall 12-30% slower at 256 MiB.
func lpThreadsFor(bound, size int, scaled, push bool) int {
	if push && size == 4 && !scaled {
		return lpPushThreads
	}
	return bound
}

// lpNarrow says whether an LP call of coll takes its kernel's _narrow entry (lpNarrowThreads threads): mode
// rcclx, bfloat16 all_reduce and all_gather of at most lpNarrowMax bytes (kernels/lowprec.cu, RX_LP_NARROW).
func lpNarrow(coll *collectives.Collective, size int, scaled bool, bytes int64) bool {
	return size == 2 && !scaled && bytes <= lpNarrowMax && (coll == collectives.AllReduce || coll == collectives.AllGather)
}

// kernelArgs is struct Args of kernels/comm.cuh, every kernel's one by-value parameter.
type kernelArgs struct {
	Send, Recv     gpurt.DevicePtr
	Count          int64
	Rank, NRanks   int64
	Peers, Self    gpurt.DevicePtr
	Abort, Status  gpurt.DevicePtr
	Half           int64
	X0, X1, X2, X3 int64
}

// halfBytes is the size of one data half: twice the DDA send buffer (RCCL_DDA_SENDBUF_BYTES), since the tree
// keeps a reduce-scatter and an all-gather copy of the vector (n slices each, every one padded to 16 bytes:
// the extra page), at least minHalf so that LP chunks and direct alltoall rounds stay large; in whole pages.
func halfBytes(sendBuf int64) int64 {
	return (2*max(sendBuf, minHalf) + 4096 + 4095) / 4096 * 4096
}
