package gpuengine

import (
	"errors"

	"rcclx-tests/collectives"
	"rcclx-tests/cuda"
)

// The copy-engine transport. When one thread drives every rank of the communicator (one process, -t 1) and the
// call is not being captured into a graph, large ring all_reduce, all_gather and reduce_scatter calls and
// out-of-place alltoall move their data with the GPUs' copy engines (cuMemcpyAsync between peer-accessible
// pointers) instead of SM peer stores: a copy engine drives an NVLink at its full rate without spending SMs, and
// the ranks' streams are ordered with events rather than device flags, so nothing waits on a GPU. Copies give the
// same bytes by any route; the reductions run in ce_reduce (kernels/copyengine.cu) in the ring's order, so
// results equal the ring kernels' bit for bit.
//
// Rank r completes segment r. Per call, on every rank's stream:
//
//	entry   record entry[r]; every rank waits for its peers' entry before writing into their buffers
//	push    copy what peer q needs into q's buffers (all_reduce, reduce_scatter: q's scratch; all_gather,
//	        alltoall: q's output); record pushed[r]
//	reduce  (all_reduce, reduce_scatter) wait for every peer's pushed, then ce_reduce into the output
//	gather  (all_reduce) copy the completed segment into every peer's output
//	exit    record done[r]; wait for every peer's done, after which this rank's output is complete
//
// In-place all_reduce reads a peer's input segment only in the push, before that peer's pushed event, and
// overwrites it only in the gather, after the owner waited for that event. In-place alltoall would overwrite
// pieces a peer has yet to copy, so it keeps the kernels.

// ceRank is one rank's state of the transport, made on first use.
type ceRank struct {
	entry, pushed, done cuda.Event
	scratch             cuda.DevicePtr
	scratchLen          int64
}

func (s *ceRank) close() []error {
	var errs []error
	for _, e := range []cuda.Event{s.entry, s.pushed, s.done} {
		if e != 0 {
			errs = append(errs, e.Destroy())
		}
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
	case c.tuning.ceBytes < 0 || bytes < c.tuning.ceBytes || c.nranks < 2 || len(g.ranks) != c.nranks:
		return false, nil
	case g.capturing || c.hooks.SkipRank >= 0: // a skipped rank must leave its peers waiting, as on the kernels
		return false, nil
	case algo != collectives.Ring && algo != collectives.Direct:
		return false, nil
	case call.Coll == collectives.AllToAll && call.InPlace(0):
		return false, nil
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

// prepare makes the events and grows the scratch to need bytes; r's context is current.
func (s *ceRank) prepare(r *rank, need int64) error {
	for _, e := range []*cuda.Event{&s.entry, &s.pushed, &s.done} {
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
	slotOf := func(q, r int) cuda.DevicePtr { // where q's piece lands in r's scratch
		return g.ranks[r].ce.scratch + cuda.DevicePtr(int64((q-r-1+n)%n)*scratchSlot(call, n)*size)
	}
	// Segment j of all_reduce: its first element and length.
	seg := ringSegment(k.Param, n, int(size))
	segLen := func(j int) int64 { return min(max(k.Param-int64(j)*seg, 0), seg) }
	p := k.Param * size // bytes of a piece (all_gather, reduce_scatter, alltoall)

	err := g.each(func(r *rank, l int) error { return r.ce.entry.Record(r.stream) })
	if err == nil {
		err = g.each(func(r *rank, l int) error {
			if err := g.waitPeers(r, l, func(o *rank) cuda.Event { return o.ce.entry }); err != nil {
				return err
			}
			for q := range n {
				var dst, src cuda.DevicePtr
				var bytes int64
				switch call.Coll {
				case collectives.AllReduce:
					if q == l {
						continue
					}
					dst, src, bytes = slotOf(l, q), send(l)+cuda.DevicePtr(int64(q)*seg*size), segLen(q)*size
				case collectives.ReduceScatter:
					if q == l {
						continue
					}
					dst, src, bytes = slotOf(l, q), send(l)+cuda.DevicePtr(int64(q)*p), p
				case collectives.AllGather:
					dst, src, bytes = recv(q)+cuda.DevicePtr(int64(l)*p), send(l), p
				case collectives.AllToAll:
					dst, src, bytes = recv(q)+cuda.DevicePtr(int64(l)*p), send(l)+cuda.DevicePtr(int64(q)*p), p
				}
				if err := copyAsync(dst, src, bytes, r.stream); err != nil {
					return err
				}
			}
			return r.ce.pushed.Record(r.stream)
		})
	}
	if err == nil && call.Coll.Reduces {
		err = g.each(func(r *rank, l int) error {
			if err := g.waitPeers(r, l, func(o *rank) cuda.Event { return o.ce.pushed }); err != nil {
				return err
			}
			if call.Coll == collectives.ReduceScatter {
				return g.c.ceReduce(r, call, send(l)+cuda.DevicePtr(int64(l)*p), recv(l), k.Param, 1)
			}
			off := cuda.DevicePtr(int64(l) * seg * size)
			if err := g.c.ceReduce(r, call, send(l)+off, recv(l)+off, segLen(l), 0); err != nil {
				return err
			}
			for q := range n {
				if q != l {
					if err := copyAsync(recv(q)+off, recv(l)+off, segLen(l)*size, r.stream); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}
	if err == nil && call.Coll != collectives.ReduceScatter {
		err = g.each(func(r *rank, l int) error { return r.ce.done.Record(r.stream) })
		if err == nil {
			err = g.each(func(r *rank, l int) error {
				return g.waitPeers(r, l, func(o *rank) cuda.Event { return o.ce.done })
			})
		}
	}
	return err
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

// waitPeers makes r's stream wait for event of every other rank.
func (g *group) waitPeers(r *rank, l int, event func(*rank) cuda.Event) error {
	for q, o := range g.ranks {
		if q != l {
			if err := cuda.StreamWaitEvent(r.stream, event(o)); err != nil {
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

// ceReduce launches ce_reduce on r's stream.
func (c *comm) ceReduce(r *rank, call *collectives.Call, own, out cuda.DevicePtr, count, first int64) error {
	if count == 0 {
		return nil
	}
	f, err := c.modules.function(r, call.DType, moduleOp(call.Coll, call.Op), ceReduceKernel)
	if err != nil {
		return err
	}
	a := kernelArgs{Send: own, Recv: out, Count: count, Rank: int64(r.global), NRanks: int64(c.nranks),
		X0: int64(r.ce.scratch), X1: scratchSlot(call, c.nranks), X2: first}
	blocks := min(r.sms*ceBlocksPerSM, gridFor(count*int64(call.DType.Size()), maxCEBlocks))
	return cuda.Launch(f, [3]uint32{uint32(blocks), 1, 1}, [3]uint32{blockThreads, 1, 1}, 0, r.stream, &a)
}

// ce_reduce is memory-bound: a few blocks per multiprocessor keep HBM busy.
const (
	ceBlocksPerSM = 2
	maxCEBlocks   = 1 << 16
)
