package gpuengine

import (
	"errors"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

// The copy-engine transport. When one thread drives every rank of the communicator (one process, -t 1) and the
// call is not being captured into a graph, large calls of every collective but the DDA and FP8 algorithms
// move their data with the GPUs' copy engines (cuMemcpyAsync between peer-accessible pointers) instead of SM
// peer stores: a copy engine drives an NVLink at its full rate without spending SMs, and the
// ranks' streams are ordered with events rather than device flags, so nothing waits on a GPU. Copies give the
// same bytes by any route; the reductions run in ce_reduce (kernels/copyengine.cu) in the order of the
// kernels, so results equal theirs bit for bit.
//
// A call is a list of pieces (ceplan.go), each from one rank's send view to one rank's receive view. Pieces
// that no one reads after they land go straight to the receiver's output. The others are staged: they land
// in the receiver's scratch, in the slot of their sender, and the receiver reduces them (all_reduce,
// reduce_scatter: rank r completes segment r; reduce: the root) or, in place, unpacks them (alltoall,
// alltoallv, sendrecv: a piece would overwrite one its receiver has yet to send). Staged pieces move in chunks,
// so that reducing or unpacking chunk i overlaps the link's transfer of chunk i+1, but all_reduce's, which go
// whole: on 2 H200s chunked pushes made it 2-7% slower at 128 MiB-1 GiB, and gathering chunk by chunk beside
// the pushes 17% slower (docs/DESIGN.md). Its reduction and gather follow the pushes in chunks (cePlan.gather),
// the gather's copy of chunk j on the main stream beside the reduction of chunk j+1, or at 2 ranks, for
// segments of fewer than ceGatherChunks chunks, the reduction stores into the peer's output as it goes. Per
// call:
//
//	entry   main: record entry; side: wait for it
//	push    main: wait for every peer's entry, then per chunk copy each piece this rank sends to a peer into
//	        the peer's output or scratch, and record pushed[i]; side: the rank's own piece. A plan in steps
//	        (hypercube, unchunked) records pushed[s] after step s, and step s waits for the pushed[s-1] of
//	        the ranks that sent this one pieces at step s-1
//	reduce  side, per chunk: wait for every peer's pushed[i], ce_reduce into the output; all_reduce: per
//	        chunk of its gather, ce_reduce and record reduced[j]
//	gather  all_reduce, main, per chunk of its gather: wait for reduced[j], copy the chunk into every peer's
//	        output
//	unpack  side, per chunk: wait for every peer's and its own pushed[i], then copy the pieces of chunk i from
//	        the scratch into the buffer (its own pushes of chunk i have read what this overwrites)
//	exit    side: record sideDone; main: wait for it, record done, and wait for the done of every peer that
//	        wrote into this rank's output
//
// In-place all_reduce reads a peer's input chunk only before its pushed[i] and overwrites it only after the
// owner waited for that event. A peer's next call pushes into this rank's scratch only after this rank's next
// entry, which its main stream records after the reduction or unpack.

// ceRank is one rank's state of the transport, made on first use.
type ceRank struct {
	side                  gpurt.Stream
	entry, sideDone, done gpurt.Event
	pushed                []gpurt.Event // per chunk
	reduced               []gpurt.Event // per chunk of all_reduce's gather
	scratch               gpurt.DevicePtr
	scratchLen            int64
}

// A staged chunk (RCCLX_TESTS_GPU_CE_CHUNK, default 64 MiB) should be small enough that the first reduction or
// unpack starts soon, large enough that per-chunk costs (an event, a copy per peer, a kernel) stay far below its
// transfer time; a segment has at most ceMaxChunks. On 2 H200s at 1 GiB, 64 MiB chunks were 6% (reduce_scatter)
// and 10% (in-place alltoall) faster than 16 MiB ones, and the same at 256 MiB.
const ceMaxChunks = 32

func (s *ceRank) close() []error {
	var errs []error
	for _, e := range append(append([]gpurt.Event{s.entry, s.sideDone, s.done}, s.pushed...), s.reduced...) {
		if e != 0 {
			errs = append(errs, e.Destroy())
		}
	}
	if s.side != 0 {
		errs = append(errs, s.side.Destroy())
	}
	if s.scratch != 0 {
		errs = append(errs, gpurt.MemFree(s.scratch))
	}
	return errs
}

// useCopyEngines returns call's plan on the transport, having prepared the ranks' events and scratch, or nil
// where the call goes to the kernels. A scratch that cannot be allocated sends the call to the kernels.
func (g *group) useCopyEngines(call *collectives.Call, algo string) (*cePlan, error) {
	c := g.c
	k := call.Counts[0]
	bytes, least := max(k.Send, k.Recv)*int64(call.DType.Size()), c.tuning.CEMin(c.nranks)
	switch {
	case least < 0 || bytes < least || c.nranks < 2 || len(g.ranks) != c.nranks:
		return nil, nil
	case g.capturing || c.hooks.SkipRank >= 0: // a skipped rank must leave its peers waiting, as on the kernels
		return nil, nil
	case algo != collectives.Ring && algo != collectives.Direct && algo != collectives.HyperCubeSteps:
		return nil, nil
	}
	pl := makeCEPlan(call, c.nranks, c.tuning)
	if pl == nil {
		return nil, nil
	}
	for l, r := range g.ranks {
		if err := r.ctx.SetCurrent(); err != nil {
			return nil, runtimeError(r, err)
		}
		if err := r.ce.prepare(r, pl.scratchElems(l, c.nranks)*int64(call.DType.Size())); err != nil {
			if errors.Is(err, errNoScratch) {
				return nil, nil
			}
			return nil, runtimeError(r, err)
		}
	}
	return pl, nil
}

var errNoScratch = errors.New("copy-engine scratch does not fit")

func ptrs(events []gpurt.Event) []*gpurt.Event {
	out := make([]*gpurt.Event, len(events))
	for i := range events {
		out[i] = &events[i]
	}
	return out
}

// prepare makes the side stream and the events and grows the scratch to need bytes; r's context is current.
func (s *ceRank) prepare(r *rank, need int64) error {
	if s.side == 0 {
		side, err := gpurt.StreamCreate(true)
		if err != nil {
			return err
		}
		s.side = side
	}
	for len(s.pushed) < ceMaxChunks {
		s.pushed, s.reduced = append(s.pushed, 0), append(s.reduced, 0)
	}
	for _, e := range append(append([]*gpurt.Event{&s.entry, &s.sideDone, &s.done}, ptrs(s.pushed)...), ptrs(s.reduced)...) {
		if *e == 0 {
			ev, err := gpurt.EventCreate(false)
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
		if err := gpurt.MemFree(s.scratch); err != nil {
			return err
		}
		s.scratch, s.scratchLen = 0, 0
	}
	p, err := gpurt.MemAlloc(need)
	if err != nil {
		return errNoScratch
	}
	s.scratch, s.scratchLen = p, need
	return nil
}

// ceLaunch enqueues call through the transport on every rank (g covers the whole communicator), as pl says.
func (g *group) ceLaunch(call *collectives.Call, pl *cePlan) error {
	n := len(g.ranks)
	size := int64(call.DType.Size())
	at := func(p gpurt.DevicePtr, elems int64) gpurt.DevicePtr { return p + gpurt.DevicePtr(elems*size) }
	to := func(m ceMove) gpurt.DevicePtr { return ptrAt(call.Recv[m.to], m.dst, size) }
	slot := func(m ceMove) gpurt.DevicePtr { // where a staged piece lands in its receiver's scratch
		return at(g.ranks[m.to].ce.scratch, slotIndex(m.from, m.to, n)*pl.slot)
	}

	err := g.each(func(r *rank, l int) error {
		if err := r.ce.entry.Record(r.stream); err != nil {
			return err
		}
		return gpurt.StreamWaitEvent(r.ce.side, r.ce.entry)
	})
	// Step by step on every rank, so that the events a step waits for are recorded first.
	for step := 0; step < pl.steps && err == nil; step++ {
		err = g.each(func(r *rank, l int) error {
			if step == 0 {
				if err := g.waitPeers(r.stream, l, func(o *rank) gpurt.Event { return o.ce.entry }); err != nil {
					return err
				}
			}
			for q, o := range g.ranks {
				if step > 0 && pl.sends(q, l, step-1) {
					if err := gpurt.StreamWaitEvent(r.stream, o.ce.pushed[step-1]); err != nil {
						return err
					}
				}
			}
			for i := range pl.chunks() {
				for _, m := range pl.moves {
					if m.from != l || m.step != step {
						continue
					}
					off, cnt := pl.piece(m.cnt, i)
					dst, s := to(m), r.stream
					switch {
					case m.to == l: // the rank's own piece, beside the link's copies
						s = r.ce.side
					case pl.staged:
						dst = slot(m)
					}
					if err := copyAsync(at(dst, off), at(m.source(call, size), off), cnt*size, s); err != nil {
						return err
					}
				}
				if err := r.ce.pushed[step*pl.chunks()+i].Record(r.stream); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err == nil && pl.staged {
		err = g.each(func(r *rank, l int) error {
			red := pl.reduce[l]
			for i := range pl.chunks() {
				if err := g.waitPeers(r.ce.side, l, func(o *rank) gpurt.Event { return o.ce.pushed[i] }); err != nil {
					return err
				}
				if pl.spread { // all_reduce: one push chunk, reduced in the gather's chunks
					for j := range len(pl.gather) - 1 {
						off, cnt := chunkOf(pl.gather, red.cnt, j)
						own, out := ptrAt(call.Send[l], red.own+off, size), ptrAt(call.Recv[l], red.out+off, size)
						var far gpurt.DevicePtr
						if pl.storesFar {
							far = ptrAt(call.Recv[1-l], red.out+off, size)
						}
						if err := g.c.ceReduce(r, call, own, out, far, cnt, off, red.first, pl.slot); err != nil {
							return err
						}
						if pl.storesFar {
							continue
						}
						if err := r.ce.reduced[j].Record(r.ce.side); err != nil {
							return err
						}
					}
					continue
				}
				if pl.reduces {
					off, cnt := pl.piece(red.cnt, i)
					own, out := ptrAt(call.Send[l], red.own+off, size), ptrAt(call.Recv[l], red.out+off, size)
					if err := g.c.ceReduce(r, call, own, out, 0, cnt, off, red.first, pl.slot); err != nil {
						return err
					}
					continue
				}
				// The pieces of chunk i overwrite what this rank's own pushes of chunk i read (stageable).
				if err := gpurt.StreamWaitEvent(r.ce.side, r.ce.pushed[i]); err != nil {
					return err
				}
				for _, m := range pl.moves {
					if m.to == l && m.from != l {
						off, cnt := pl.piece(m.cnt, i)
						if err := copyAsync(at(to(m), off), at(slot(m), off), cnt*size, r.ce.side); err != nil {
							return err
						}
					}
				}
			}
			return nil
		})
	}
	if err == nil && pl.spread && !pl.storesFar {
		// Each reduced chunk goes into every peer's output from the main stream, whose pushes are done, while the
		// side stream reduces the next.
		err = g.each(func(r *rank, l int) error {
			red := pl.reduce[l]
			for j := range len(pl.gather) - 1 {
				if err := gpurt.StreamWaitEvent(r.stream, r.ce.reduced[j]); err != nil {
					return err
				}
				off, cnt := chunkOf(pl.gather, red.cnt, j)
				out := ptrAt(call.Recv[l], red.out+off, size)
				for _, q := range rotated(l, n) {
					if q != l {
						if err := copyAsync(ptrAt(call.Recv[q], red.out+off, size), out, cnt*size, r.stream); err != nil {
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
			if err := gpurt.StreamWaitEvent(r.stream, r.ce.sideDone); err != nil {
				return err
			}
			return r.ce.done.Record(r.stream)
		})
	}
	if err == nil {
		err = g.each(func(r *rank, l int) error {
			for q, o := range g.ranks {
				if q != l && pl.writes(q, l) {
					if err := gpurt.StreamWaitEvent(r.stream, o.ce.done); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}
	return err
}

// ceChunks cuts a segment of slot elements of size bytes into chunks of about bytes and returns their bounds,
// or leaves it whole. The last of several chunks is cut again into halves down to an eighth of a chunk (64 MiB
// chunks end 32, 16, 8, 8 MiB), so that the reduction or unpack left after the link's last copy is short: on 2x
// H200 that took 2% off reduce_scatter at 1 GiB and 4-8% at 256-512 MiB, 1-5% off reduce and in-place alltoall.
func ceChunks(slot, size, bytes int64, chunked bool) []int64 {
	if !chunked || slot == 0 {
		return []int64{0, max(slot, 1)}
	}
	ve := vecElems(int(size))
	chunk := max(bytes/size, (slot+ceMaxChunks-1)/ceMaxChunks, 1)
	chunk = (chunk + ve - 1) / ve * ve
	var bounds []int64
	for off := int64(0); off < slot; off += chunk {
		bounds = append(bounds, off)
	}
	if last := bounds[len(bounds)-1]; len(bounds) > 1 {
		for n := slot - last; n/2 >= max(chunk/8, ve) && len(bounds) < ceMaxChunks; n = slot - last {
			last += (n/2 + ve - 1) / ve * ve
			bounds = append(bounds, last)
		}
	}
	return append(bounds, slot)
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
func (g *group) waitPeers(s gpurt.Stream, l int, event func(*rank) gpurt.Event) error {
	for q, o := range g.ranks {
		if q != l {
			if err := gpurt.StreamWaitEvent(s, event(o)); err != nil {
				return err
			}
		}
	}
	return nil
}

func copyAsync(dst, src gpurt.DevicePtr, bytes int64, s gpurt.Stream) error {
	if bytes == 0 || dst == src {
		return nil
	}
	return gpurt.MemcpyDtoDAsync(dst, src, bytes, s)
}

// ceReduce launches ce_reduce on r's side stream for count elements at offset off of r's segment.
func (c *comm) ceReduce(r *rank, call *collectives.Call, own, out, far gpurt.DevicePtr, count, off, first, slot int64) error {
	if count == 0 {
		return nil
	}
	f, err := c.modules.function(r, call.DType, moduleOp(call.Coll, call.Op), ceReduceKernel, 0)
	if err != nil {
		return err
	}
	a := kernelArgs{Send: own, Recv: out, Count: count, Rank: int64(r.global), NRanks: int64(c.nranks),
		X0: int64(r.ce.scratch) + off*int64(call.DType.Size()), X1: slot, X2: first, X3: int64(far)}
	perSM := ceBlocksPerSM
	if far == 0 && slot*int64(call.DType.Size()) >= ceLargeSlot {
		perSM = 1
	}
	blocks := min(r.sms*perSM, gridFor(count*int64(call.DType.Size()), maxCEBlocks))
	return gpurt.LaunchStruct(f, [3]uint32{uint32(blocks), 1, 1}, [3]uint32{blockThreads, 1, 1}, 0, r.ce.side, r.args, &a)
}

// ce_reduce is memory-bound: two blocks per multiprocessor keep HBM busy and, where it also stores every result
// over the link (far), enough stores in flight. Reducing pieces of ceLargeSlot bytes or more without far stores,
// one block per SM is a little faster: on 2 H200s reduce_scatter 1 GiB took 1440.4-1444.1 us with one against
// 1451.1-1452.3 with two (512 MiB -0.5%, 256 MiB the same, reduce 256 MiB and 1 GiB the same), while at 64 and
// 128 MiB one block made reduce_scatter 5-7% and reduce 4% slower, and ring all_reduce (far) 0.3% slower at
// 1 GiB; three and four blocks were slower for both.
const (
	ceBlocksPerSM = 2
	ceLargeSlot   = 256 << 20
	maxCEBlocks   = 1 << 16
)
