package gpuengine

import (
	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

// ceMove is one piece of a call on the copy-engine transport: cnt elements from rank from's send view (or,
// fromRecv, its receive view) at src to rank to's receive view at dst (elements). A staged piece lands in the
// receiver's scratch instead, in the slot of its sender, and is reduced or unpacked from there. A piece of step
// s > 0 leaves only once every piece of step s-1 reached its sender (hypercube forwards what it received).
type ceMove struct {
	from, to      int
	src, dst, cnt int64
	step          int
	fromRecv      bool
}

// source is the address m reads from.
func (m ceMove) source(call *collectives.Call, size int64) gpurt.DevicePtr {
	if m.fromRecv {
		return ptrAt(call.Recv[m.from], m.src, size)
	}
	return ptrAt(call.Send[m.from], m.src, size)
}

// ceReduction is the part of its output a rank completes from its own input and its scratch: cnt elements of
// its send view at own into its receive view at out, the order starting at rank r+first (kernels/copyengine.cu).
type ceReduction struct {
	own, out, cnt, first int64
}

// cePlan is how a call goes through the transport.
type cePlan struct {
	moves  []ceMove // by step, sender, then receiver
	steps  int
	staged bool  // every piece between two ranks goes through the receiver's scratch
	slot   int64 // elements between scratch slots: the longest staged piece
	// reduce[l], when cnt > 0, is what rank l reduces once its pieces arrived; spread: it then copies the
	// reduced part into every peer's output at the same offset (all_reduce's gather).
	reduce  []ceReduction
	reduces bool // staged pieces are reduced (else unpacked into the receiver's output)
	spread  bool
	// A staged piece moves in chunks: chunk i is [bounds[i], bounds[i+1]) of it, clipped to its length.
	bounds []int64
	// gather: with spread, the reduction runs in chunks [gather[j], gather[j+1]), each copied into the peers'
	// outputs as soon as it is reduced, while the next one is reduced; or, storesFar, whole, storing its
	// results into the peer's output as well (2 ranks, kernels/copyengine.cu).
	gather    []int64
	storesFar bool
}

// All_reduce's reduction and gather go in chunks from a segment of ceGatherChunks chunks; a shorter one at 2
// ranks is reduced whole, storing into the peer's output as it goes. On 2 H200s with 64 MiB chunks the chunks
// took 1.3% off 512 MiB and 1.9% off 1 GiB (4 and 8 chunks a segment), and made 256 MiB 0.5% and 64-128 MiB
// 10-11% slower.
const ceGatherChunks = 4

// rotated is every rank in the order rank l sends to them: itself, then l+1, l+2, ... (mod n). All ranks copy
// at once, one copy after another, so at each turn every rank receives from one sender. In rank order every
// rank sent to rank 0 first, which received from all of them while the other links idled: on 4x H100 the
// rotation took 1 GiB from 4114 to 2163 us for all_gather, 7804 to 5007 for all_reduce, and 36-48% off every
// collective from 128 MiB (docs/PERFORMANCE.md). A stream per peer, every copy at once, took 47-82% longer
// than the rotation there from 128 MiB.
func rotated(l, n int) []int {
	out := make([]int, n)
	for k := range out {
		out[k] = (l + k) % n
	}
	return out
}

// slotIndex is the scratch slot of rank r where sender q's piece lands, on n ranks: one sender to rank r+1
// (sendrecv) needs one slot.
func slotIndex(q, r, n int) int64 { return int64((r - q - 1 + n) % n) }

// makeCEPlan describes call on n ranks (g covers the whole communicator), or returns nil where the transport
// does not apply: a collective it has no plan for, or an in-place layout whose pieces it cannot stage (a
// rank's own piece that moves within its buffer, or pieces that land where the receiver's own pieces are not
// read in the same order).
func makeCEPlan(call *collectives.Call, n int, tuning collectives.GPUTuning) *cePlan {
	pl := &cePlan{reduce: make([]ceReduction, n), steps: 1}
	k := func(l int) collectives.Counts { return call.Counts[l] }
	p, root := k(0).Param, call.Root
	move := func(from, to int, src, dst, cnt int64) {
		pl.moves = append(pl.moves, ceMove{from: from, to: to, src: src, dst: dst, cnt: cnt})
	}
	switch call.Coll.Base() {
	case collectives.AllReduce:
		size := call.DType.Size()
		seg := ringSegment(p, n, size)
		segLen := func(j int) int64 { return min(max(p-int64(j)*seg, 0), seg) }
		for l := range n {
			for _, q := range rotated(l, n) {
				if q != l {
					move(l, q, int64(q)*seg, 0, segLen(q))
				}
			}
			pl.reduce[l] = ceReduction{int64(l) * seg, int64(l) * seg, segLen(l), 0}
		}
		pl.staged, pl.reduces, pl.spread = true, true, true
	case collectives.ReduceScatter:
		for l := range n {
			for _, q := range rotated(l, n) {
				if q != l {
					move(l, q, int64(q)*p, 0, p)
				}
			}
			pl.reduce[l] = ceReduction{int64(l) * p, 0, p, 1}
		}
		pl.staged, pl.reduces = true, true
	case collectives.Reduce:
		for l := range n {
			if l != root {
				move(l, root, 0, 0, p)
			}
		}
		pl.reduce[root] = ceReduction{0, 0, p, 0}
		pl.staged, pl.reduces = true, true
	case collectives.AllGather:
		for l := range n {
			for _, q := range rotated(l, n) {
				move(l, q, 0, int64(l)*p, p)
			}
		}
	case collectives.AllToAll:
		for l := range n {
			for _, q := range rotated(l, n) {
				move(l, q, int64(q)*p, int64(l)*p, p)
			}
		}
	case collectives.AllToAllV:
		for l := range n {
			for _, q := range rotated(l, n) {
				move(l, q, k(l).SendDispls[q], k(q).RecvDispls[l], k(l).SendCounts[q])
			}
		}
	case collectives.Broadcast:
		for q := range n {
			move(root, q, 0, 0, p)
		}
	case collectives.Gather:
		for l := range n {
			move(l, root, 0, int64(l)*p, p)
		}
	case collectives.Scatter:
		for q := range n {
			move(root, q, int64(q)*p, 0, p)
		}
	case collectives.SendRecv:
		for l := range n {
			move(l, (l+1)%n, 0, 0, p)
		}
	case collectives.HyperCube:
		// At step s a rank sends the 2^s pieces of its group (the ranks that equal it above bit s) to rank
		// r XOR 2^s: its own from its input, the others from its output, where earlier steps put them.
		for l := range n {
			move(l, l, 0, int64(l)*p, p)
		}
		for s := 0; 1<<s < n; s++ {
			pl.steps = s + 1
			for l := range n {
				m, group := 1<<s, l&^(1<<s-1)
				for j := group; j < group+m; j++ {
					src := int64(j) * p
					if j == l {
						src = 0
					}
					pl.moves = append(pl.moves, ceMove{from: l, to: l ^ m, src: src, dst: int64(j) * p, cnt: p,
						step: s, fromRecv: j != l})
				}
			}
		}
		if pl.steps > ceMaxChunks { // an event per step
			return nil
		}
	default:
		return nil
	}
	size := int64(call.DType.Size())
	if !pl.staged {
		pl.staged = overwritesUnread(call, pl.moves, size)
		if pl.staged && !stageable(call, pl.moves, size) {
			return nil
		}
	}
	longest := int64(0)
	for _, m := range pl.moves {
		longest = max(longest, m.cnt)
		if pl.staged && m.from != m.to {
			pl.slot = max(pl.slot, m.cnt)
		}
	}
	// Unstaged pieces go whole, and so does all_reduce: on 2 H200s 16, 32 and 64 MiB chunks made it 2-7% slower
	// at 128 MiB-1 GiB, and with the reduction storing into the peer 32-128 MiB chunks 1-4% slower at 1 GiB on
	// 2 H100s (docs/DESIGN.md).
	pl.bounds = ceChunks(longest, size, tuning.CEChunk, pl.staged && !pl.spread)
	if pl.spread {
		pl.storesFar = n == 2 && pl.slot*size < ceGatherChunks*tuning.CEChunk
		pl.gather = growing(ceChunks(pl.slot, size, tuning.CEChunk, !pl.storesFar))
	}
	return pl
}

// span is the byte range cnt elements at off of view v cover.
func span(v collectives.View, off, cnt, size int64) (lo, hi gpurt.DevicePtr) {
	lo = ptrAt(v, off, size)
	return lo, lo + gpurt.DevicePtr(cnt*size)
}

func ptrAt(v collectives.View, off, size int64) gpurt.DevicePtr {
	return ptr(v) + gpurt.DevicePtr(off*size)
}

func overlap(alo, ahi, blo, bhi gpurt.DevicePtr) bool { return alo < bhi && blo < ahi }

// overwritesUnread reports whether a piece between two ranks would land where its receiver still reads a piece
// it sends (in place) at the same step or before: such a call must be staged. What a piece brings is read at
// later steps by design (hypercube forwards it).
func overwritesUnread(call *collectives.Call, moves []ceMove, size int64) bool {
	for _, m := range moves {
		if m.from == m.to || m.cnt == 0 {
			continue
		}
		wlo, whi := span(call.Recv[m.to], m.dst, m.cnt, size)
		for _, o := range moves {
			if o.from == m.to && o.cnt > 0 && o.step <= m.step {
				if rlo := o.source(call, size); overlap(wlo, whi, rlo, rlo+gpurt.DevicePtr(o.cnt*size)) {
					return true
				}
			}
		}
	}
	return false
}

// stageable reports whether a staged call can unpack chunk i of every piece as soon as its receiver's own
// pushes of chunk i are done: every piece lands at the start of a piece its receiver sends, no longer than
// that one (the pieces a rank sends do not overlap), and a rank's own piece stays where it is.
func stageable(call *collectives.Call, moves []ceMove, size int64) bool {
	for _, m := range moves {
		if m.cnt == 0 {
			continue
		}
		if m.from == m.to {
			if m.source(call, size) != ptrAt(call.Recv[m.to], m.dst, size) {
				return false
			}
			continue
		}
		at, ok := ptrAt(call.Recv[m.to], m.dst, size), false
		for _, o := range moves {
			if o.from == m.to && o.from != o.to && o.source(call, size) == at && o.cnt >= m.cnt {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// scratchElems is the scratch rank l needs: its highest slot a staged piece lands in, and those below it.
func (pl *cePlan) scratchElems(l, n int) int64 {
	if !pl.staged {
		return 0
	}
	slots := int64(0)
	for _, m := range pl.moves {
		if m.to == l && m.from != l {
			slots = max(slots, slotIndex(m.from, l, n)+1)
		}
	}
	return slots * pl.slot
}

// sends reports whether rank q sends rank l a piece at step.
func (pl *cePlan) sends(q, l, step int) bool {
	for _, m := range pl.moves {
		if m.from == q && m.to == l && m.step == step && q != l {
			return true
		}
	}
	return false
}

// writes reports whether rank q writes rank l's output, so that l must wait for q before it goes on.
func (pl *cePlan) writes(q, l int) bool {
	if pl.spread {
		return true
	}
	for _, m := range pl.moves {
		if m.from == q && m.to == l && !pl.staged {
			return true
		}
	}
	return false
}

// ringSegment is all_reduce's segment length: ceil(count/n) rounded up to 16 bytes (hostengine's ring).
func ringSegment(count int64, n, size int) int64 {
	ve := vecElems(size)
	return ((count+int64(n)-1)/int64(n) + ve - 1) / ve * ve
}

// chunks is how many chunks every piece moves in.
func (pl *cePlan) chunks() int { return len(pl.bounds) - 1 }

// piece is chunk i of a piece (or reduction) of cnt elements: its offset and length.
func (pl *cePlan) piece(cnt int64, i int) (off, n int64) { return chunkOf(pl.bounds, cnt, i) }

// chunkOf is chunk i of bounds, clipped to cnt elements: its offset and length.
func chunkOf(bounds []int64, cnt int64, i int) (off, n int64) {
	off = min(bounds[i], cnt)
	return off, min(bounds[i+1], cnt) - off
}

// growing is the chunks of bounds in the reverse order: short first, so that the copy of the first reduced
// chunk starts soon.
func growing(bounds []int64) []int64 {
	last := bounds[len(bounds)-1]
	out := make([]int64, len(bounds))
	for i, b := range bounds {
		out[len(bounds)-1-i] = last - b
	}
	return out
}
