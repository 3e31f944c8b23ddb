package gpuengine

import (
	"errors"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/cuda"
)

// The copy-engine transport. When one thread drives every rank of the communicator (one process, -t 1) and the
// call is not being captured into a graph, large ring all_reduce, all_gather and reduce_scatter calls and
// alltoall move their data with the GPUs' copy engines (cuMemcpyAsync between peer-accessible
// pointers) instead of SM peer stores: a copy engine drives an NVLink at its full rate without spending SMs, and
// the ranks' streams are ordered with events rather than device flags, so nothing waits on a GPU. Copies give the
// same bytes by any route; the reductions run in ce_reduce (kernels/copyengine.cu) in the ring's order, so
// results equal the ring kernels' bit for bit.
//
// Rank r completes segment r. reduce_scatter goes in chunks, so that reducing chunk i overlaps pushing chunk
// i+1; all_reduce goes whole, pushes, reduction and gather one after the other: on 2 H200s chunking made it
// 3-7% slower at 128 MiB-1 GiB (16 MiB chunks, gather whole), and gathering chunk by chunk beside the pushes
// 17% slower (docs/DESIGN.md). Per call:
//
//	entry   main: record entry; side: wait for it
//	push    main: wait for every peer's entry, then per chunk copy what peer q needs into q's buffers
//	        (all_reduce, reduce_scatter, in-place alltoall: q's scratch; all_gather, alltoall: q's output) and
//	        record pushed[i]; side: this rank's own piece of all_gather and out-of-place alltoall
//	reduce  side, per chunk: wait for every peer's pushed[i], ce_reduce into the output; then (all_reduce)
//	        copy the completed segment into every peer's output
//	unpack  in-place alltoall, side, per chunk: wait for every peer's and its own pushed[i], then copy the
//	        pieces of chunk i from the scratch into the buffer (its own pushes of chunk i have read what this
//	        overwrites)
//	exit    side: record sideDone; main: wait for it, record done, and (but reduce_scatter, whose output no
//	        peer writes) wait for every peer's done
//
// In-place all_reduce reads a peer's input chunk only before its pushed[i] and overwrites it only after the
// owner waited for that event. In-place alltoall cannot write into a peer's buffer, whose pieces the peer has
// yet to send: it pushes into the peer's scratch and each rank unpacks its own, chunk by chunk, so that the
// local copy of chunk i overlaps the link's transfer of chunk i+1. A peer's next call pushes into this
// rank's scratch only after this rank's next entry, which its main stream records after the unpack.

// ceRank is one rank's state of the transport, made on first use.
type ceRank struct {
	side                  cuda.Stream
	entry, sideDone, done cuda.Event
	pushed                []cuda.Event // per chunk
	scratch               cuda.DevicePtr
	scratchLen            int64
}

// A reduction's chunk (RCCLX_TESTS_GPU_CE_CHUNK, default 16 MiB) should be small enough that the first
// reduction starts soon, large enough that per-chunk costs (an event, a copy per peer, a kernel) stay far
// below its transfer time; a segment has at most ceMaxChunks.
const ceMaxChunks = 32

func (s *ceRank) close() []error {
	var errs []error
	for _, e := range append([]cuda.Event{s.entry, s.sideDone, s.done}, s.pushed...) {
		if e != 0 {
			errs = append(errs, e.Destroy())
		}
	}
	if s.side != 0 {
		errs = append(errs, s.side.Destroy())
	}
	if s.scratch != 0 {
		errs = append(errs, cuda.MemFree(s.scratch))
	}
	return errs
}

// ceScratchElems is the scratch a rank needs for call: n-1 slots of the longest segment it completes.
func ceScratchElems(call *collectives.Call, n int) (slot int64, ok bool) {
	k := call.Counts[0]
	switch call.Coll {
	case collectives.AllReduce:
		return ringSegment(k.Param, n, call.DType.Size()), true
	case collectives.ReduceScatter:
		return k.Param, true
	case collectives.AllToAll:
		if call.InPlace(0) {
			return k.Param, true
		}
	}
	return 0, call.Coll == collectives.AllGather || call.Coll == collectives.AllToAll
}

// ringSegment is all_reduce's segment length: ceil(count/n) rounded up to 16 bytes (hostengine's ring).
func ringSegment(count int64, n, size int) int64 {
	ve := vecElems(size)
	return ((count+int64(n)-1)/int64(n) + ve - 1) / ve * ve
}

// useCopyEngines says whether call goes through the transport, and prepares the ranks' events and scratch.
// A scratch that cannot be allocated sends the call to the kernels.
func (g *group) useCopyEngines(call *collectives.Call, algo string) (bool, error) {
	c := g.c
	k := call.Counts[0]
	bytes := max(k.Send, k.Recv) * int64(call.DType.Size())
	switch {
	case c.tuning.CEBytes < 0 || bytes < c.tuning.CEBytes || c.nranks < 2 || len(g.ranks) != c.nranks:
		return false, nil
	case g.capturing || c.hooks.SkipRank >= 0: // a skipped rank must leave its peers waiting, as on the kernels
		return false, nil
	case algo != collectives.Ring && algo != collectives.Direct:
		return false, nil
	case call.Coll == collectives.AllToAll && call.InPlace(0) && !sameViews(call):
		return false, nil // in place at different offsets of one buffer: the unpack would overwrite unread pieces
	}
	slot, ok := ceScratchElems(call, c.nranks)
	if !ok {
		return false, nil
	}
	need := int64(c.nranks-1) * slot * int64(call.DType.Size())
	for _, r := range g.ranks {
		if err := r.ctx.SetCurrent(); err != nil {
			return false, runtimeError(r, err)
		}
		if err := r.ce.prepare(r, need); err != nil {
			if errors.Is(err, errNoScratch) {
				return false, nil
			}
			return false, runtimeError(r, err)
		}
	}
	return true, nil
}

var errNoScratch = errors.New("copy-engine scratch does not fit")

// sameViews reports whether every rank's send and receive views are the same memory.
func sameViews(call *collectives.Call) bool {
	for l := range call.Send {
		if ptr(call.Send[l]) != ptr(call.Recv[l]) {
			return false
		}
	}
	return true
}

func ptrs(events []cuda.Event) []*cuda.Event {
	out := make([]*cuda.Event, len(events))
	for i := range events {
		out[i] = &events[i]
	}
	return out
}

// prepare makes the side stream and the events and grows the scratch to need bytes; r's context is current.
func (s *ceRank) prepare(r *rank, need int64) error {
	if s.side == 0 {
		side, err := cuda.StreamCreate(true)
		if err != nil {
			return err
		}
		s.side = side
	}
	for len(s.pushed) < ceMaxChunks {
		s.pushed = append(s.pushed, 0)
	}
	for _, e := range append([]*cuda.Event{&s.entry, &s.sideDone, &s.done}, ptrs(s.pushed)...) {
		if *e == 0 {
			ev, err := cuda.EventCreate(false)
			if err != nil {
				return err
			}
			*e = ev
		}
	}
	if need <= s.scratchLen {
		return nil
	}
	if s.scratch != 0 {
		if err := r.stream.Synchronize(); err != nil { // earlier calls may still read it
			return err
		}
		if err := cuda.MemFree(s.scratch); err != nil {
			return err
		}
		s.scratch, s.scratchLen = 0, 0
	}
	p, err := cuda.MemAlloc(need)
	if err != nil {
		return errNoScratch
	}
	s.scratch, s.scratchLen = p, need
	return nil
}

// ceLaunch enqueues call through the transport on every rank (g covers the whole communicator).
func (g *group) ceLaunch(call *collectives.Call) error {
	n := len(g.ranks)
	size := int64(call.DType.Size())
	k := call.Counts[0]
	send := func(q int) cuda.DevicePtr { return ptr(call.Send[q]) }
	recv := func(q int) cuda.DevicePtr { return ptr(call.Recv[q]) }
	at := func(p cuda.DevicePtr, elems int64) cuda.DevicePtr { return p + cuda.DevicePtr(elems*size) }
	slot := scratchSlot(call, n)
	slotOf := func(q, r int) cuda.DevicePtr { // where q's piece lands in r's scratch
		return at(g.ranks[r].ce.scratch, int64((q-r-1+n)%n)*slot)
	}
	// Rank j's segment: where it starts in the reduction's input, and its length; then its chunks.
	segStart, segLen := func(j int) int64 { return int64(j) * k.Param }, func(int) int64 { return k.Param }
	if call.Coll == collectives.AllReduce {
		seg := ringSegment(k.Param, n, int(size))
		segStart = func(j int) int64 { return int64(j) * seg }
		segLen = func(j int) int64 { return min(max(k.Param-int64(j)*seg, 0), seg) }
	}
	a2aInPlace := call.Coll == collectives.AllToAll && call.InPlace(0)
	chunk, chunks := ceChunks(slot, size, g.c.tuning.CEChunk, call.Coll == collectives.ReduceScatter || a2aInPlace)
	span := func(j, i int) (off, cnt int64) { // chunk i of segment j, relative to the segment
		off = min(int64(i)*chunk, segLen(j))
		return off, min(chunk, segLen(j)-off)
	}
	reduces := call.Coll.Reduces
	p := k.Param

	err := g.each(func(r *rank, l int) error {
		if err := r.ce.entry.Record(r.stream); err != nil {
			return err
		}
		return cuda.StreamWaitEvent(r.ce.side, r.ce.entry)
	})
	if err == nil {
		err = g.each(func(r *rank, l int) error {
			if err := g.waitPeers(r.stream, l, func(o *rank) cuda.Event { return o.ce.entry }); err != nil {
				return err
			}
			for i := range chunks {
				for q := range n {
					var err error
					switch {
					case (reduces || a2aInPlace) && q != l:
						off, cnt := span(q, i)
						err = copyAsync(at(slotOf(l, q), off), at(send(l), segStart(q)+off), cnt*size, r.stream)
					case a2aInPlace: // this rank's own piece stays where it is
					case call.Coll == collectives.AllGather:
						err = copyAsync(at(recv(q), int64(l)*p), send(l), p*size, sideIf(q == l, r))
					case call.Coll == collectives.AllToAll:
						err = copyAsync(at(recv(q), int64(l)*p), at(send(l), int64(q)*p), p*size, sideIf(q == l, r))
					}
					if err != nil {
						return err
					}
				}
				if err := r.ce.pushed[i].Record(r.stream); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err == nil && reduces {
		err = g.each(func(r *rank, l int) error {
			first := int64(1) // reduce_scatter's order starts at the next rank, all_reduce's at the owner
			if call.Coll == collectives.AllReduce {
				first = 0
			}
			for i := range chunks {
				if err := g.waitPeers(r.ce.side, l, func(o *rank) cuda.Event { return o.ce.pushed[i] }); err != nil {
					return err
				}
				off, cnt := span(l, i)
				own, out := at(send(l), segStart(l)+off), at(recv(l), off)
				if call.Coll == collectives.AllReduce {
					out = at(recv(l), segStart(l)+off)
				}
				if err := g.c.ceReduce(r, call, own, out, cnt, off, first); err != nil {
					return err
				}
			}
			for q := range n {
				if q != l && call.Coll == collectives.AllReduce {
					seg := at(recv(l), segStart(l))
					if err := copyAsync(at(recv(q), segStart(l)), seg, segLen(l)*size, r.ce.side); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}
	if err == nil && a2aInPlace {
		err = g.each(func(r *rank, l int) error {
			for i := range chunks {
				if err := g.waitPeers(r.ce.side, l, func(o *rank) cuda.Event { return o.ce.pushed[i] }); err != nil {
					return err
				}
				if err := cuda.StreamWaitEvent(r.ce.side, r.ce.pushed[i]); err != nil {
					return err
				}
				for q := range n {
					if q != l {
						off, cnt := span(q, i)
						err := copyAsync(at(recv(l), segStart(q)+off), at(slotOf(q, l), off), cnt*size, r.ce.side)
						if err != nil {
							return err
						}
					}
				}
			}
			return nil
		})
	}
	if err == nil {
		err = g.each(func(r *rank, l int) error {
			if err := r.ce.sideDone.Record(r.ce.side); err != nil {
				return err
			}
			if err := cuda.StreamWaitEvent(r.stream, r.ce.sideDone); err != nil {
				return err
			}
			return r.ce.done.Record(r.stream)
		})
	}
	if err == nil && call.Coll != collectives.ReduceScatter {
		err = g.each(func(r *rank, l int) error {
			return g.waitPeers(r.stream, l, func(o *rank) cuda.Event { return o.ce.done })
		})
	}
	return err
}

// ceChunks cuts a segment of slot elements of size bytes into chunks of about bytes, or leaves it whole.
func ceChunks(slot, size, bytes int64, chunked bool) (chunk int64, chunks int) {
	if !chunked || slot == 0 {
		return max(slot, 1), 1
	}
	ve := vecElems(int(size))
	chunk = max(bytes/size, (slot+ceMaxChunks-1)/ceMaxChunks, 1)
	chunk = (chunk + ve - 1) / ve * ve
	return chunk, int((slot + chunk - 1) / chunk)
}

// sideIf is r's side stream when side holds, else its main stream.
func sideIf(side bool, r *rank) cuda.Stream {
	if side {
		return r.ce.side
	}
	return r.stream
}

// scratchSlot is the elements between scratch slots of call on n ranks.
func scratchSlot(call *collectives.Call, n int) int64 {
	slot, _ := ceScratchElems(call, n)
	return slot
}

// each runs f on every rank with its context current; errors name the rank.
func (g *group) each(f func(r *rank, l int) error) error {
	for l, r := range g.ranks {
		if err := r.ctx.SetCurrent(); err != nil {
			return runtimeError(r, err)
		}
		if err := f(r, l); err != nil {
			return runtimeError(r, err)
		}
	}
	return nil
}

// waitPeers makes stream s of local rank l wait for event of every other rank.
func (g *group) waitPeers(s cuda.Stream, l int, event func(*rank) cuda.Event) error {
	for q, o := range g.ranks {
		if q != l {
			if err := cuda.StreamWaitEvent(s, event(o)); err != nil {
				return err
			}
		}
	}
	return nil
}

func copyAsync(dst, src cuda.DevicePtr, bytes int64, s cuda.Stream) error {
	if bytes == 0 || dst == src {
		return nil
	}
	return cuda.MemcpyDtoDAsync(dst, src, bytes, s)
}

// ceReduce launches ce_reduce on r's side stream for count elements at offset off of r's segment.
func (c *comm) ceReduce(r *rank, call *collectives.Call, own, out cuda.DevicePtr, count, off, first int64) error {
	if count == 0 {
		return nil
	}
	f, err := c.modules.function(r, call.DType, moduleOp(call.Coll, call.Op), ceReduceKernel)
	if err != nil {
		return err
	}
	a := kernelArgs{Send: own, Recv: out, Count: count, Rank: int64(r.global), NRanks: int64(c.nranks),
		X0: int64(r.ce.scratch) + off*int64(call.DType.Size()), X1: scratchSlot(call, c.nranks), X2: first}
	blocks := min(r.sms*ceBlocksPerSM, gridFor(count*int64(call.DType.Size()), maxCEBlocks))
	return cuda.LaunchStruct(f, [3]uint32{uint32(blocks), 1, 1}, [3]uint32{blockThreads, 1, 1}, 0, r.ce.side, r.args, &a)
}

// ce_reduce is memory-bound: a few blocks per multiprocessor keep HBM busy.
const (
	ceBlocksPerSM = 2
	maxCEBlocks   = 1 << 16
)
