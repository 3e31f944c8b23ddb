package hostengine

import "github.com/rcclx-tests/rcclx-tests/collectives"

// Ring all_reduce, reduce_scatter and all_gather.
//
// The vector is cut into n segments, one per rank, and each segment into chunks. all_reduce is a ring
// reduce-scatter followed by a ring all-gather; reduce_scatter is the first phase alone and all_gather the
// second. At reduce-scatter step s (0..n-2) rank r combines what its upstream neighbour r-1 holds of segment
// r+o-s (o = -1 for all_reduce, -2 for reduce_scatter) with its own input and stores the partial result; at
// all-gather step t (0..n-2) it copies segment r+g-t (g = 0 for all_reduce, -1 for all_gather) from r-1.
// Indices are modulo n. A rank reads its neighbour's buffers directly, which is what the flags are for.
//
// Reduction order (bit-level contract for the GPU kernels): with ⊕ and pre() as in reduce.go and the result
// stored in the element type after every ⊕, segment j of all_reduce is
//
//	(((pre(in_j) ⊕ pre(in_j+1)) ⊕ pre(in_j+2)) ⊕ ... ) ⊕ pre(in_j-1)
//
// completed by rank j-1, and segment j of reduce_scatter starts at rank j+1 and ends at rank j:
// ((pre(in_j+1) ⊕ pre(in_j+2)) ⊕ ...) ⊕ pre(in_j). avg divides the completed segment once, on the rank that
// completes it. all_reduce's segments hold ceil(count/n) elements rounded up to 16 bytes (the last ones may be
// short or empty); reduce_scatter's and all_gather's are the collective's per-rank counts.
//
// Pipelining: every rank works chunk by chunk, all steps of chunk 0, then of chunk 1, and so on; step s of
// chunk c is item k = c*steps+s. After finishing item k a rank stores progress = epoch<<32 | k+1 (release).
// Before item k it waits until its upstream's progress >= epoch<<32 | k (acquire): upstream has produced what
// item k reads, while ranks further along may be several items ahead or behind. all_reduce's all-gather item
// k overwrites partial sums (and, in place, the input) that the downstream rank reads at its item k-(n-1); no
// flag guards that, because item k needs upstream's k-1, which needed its upstream's k-2, and so on around
// the ring to the downstream rank's k-(n-1). At the end a rank waits until downstream has finished every
// item, after which nobody reads its buffers and the call may complete. Epochs (calls started by the rank) make the flags monotonic, so nothing
// is reset between calls.

// ringPlan says which phases a collective runs and where its segments live.
type ringPlan struct {
	rsSteps, agSteps int
	rsOff, agOff     int
	finalOff         int64 // element index in the vector of this rank's out[0] (reduce_scatter)
}

// ringLayout cuts a vector of total elements into segments of segLen and those into chunks.
type ringLayout struct {
	total, segLen, chunk int64
	chunks               int
}

// maxRingChunks bounds the chunks per segment so that item counts stay far below 2^32.
const maxRingChunks = 1 << 20

func newRingLayout(total, segLen int64, elemSize int, chunkBytes int64) ringLayout {
	align := int64(max(16/elemSize, 1))
	chunk := max(chunkBytes/int64(elemSize)/align*align, align)
	chunks := int(min(max((segLen+chunk-1)/chunk, 1), maxRingChunks))
	chunk = max(chunk, (segLen+int64(chunks)-1)/int64(chunks))
	return ringLayout{total: total, segLen: segLen, chunk: chunk, chunks: chunks}
}

// span is the element range of chunk c of segment seg.
func (l ringLayout) span(seg, c int) (lo, hi int64) {
	start := int64(seg) * l.segLen
	end := min(start+l.segLen, l.total)
	lo = min(start+int64(c)*l.chunk, end)
	return lo, min(lo+l.chunk, end)
}

func (x *run) ring() error {
	n, r := x.n, x.r
	if n == 1 {
		copy(x.recv, x.send) // one rank: every collective is the identity
		return nil
	}
	es := int64(x.dt.Size())
	me := exposed{in: x.send, out: x.recv}
	var plan ringPlan
	var layout ringLayout
	switch x.coll {
	case collectives.AllReduce:
		align := int64(max(16/int(es), 1))
		segLen := ((x.k.Param+int64(n)-1)/int64(n) + align - 1) / align * align
		layout = newRingLayout(x.k.Param, segLen, int(es), x.c.chunkBytes)
		plan = ringPlan{rsSteps: n - 1, agSteps: n - 1, rsOff: -1}
		me.partial = x.recv
	case collectives.ReduceScatter:
		total := int64(n) * x.k.Param
		layout = newRingLayout(total, x.k.Param, int(es), x.c.chunkBytes)
		plan = ringPlan{rsSteps: n - 1, rsOff: -2, finalOff: int64(r.id) * x.k.Param}
		if n > 2 { // with two ranks the only reduce-scatter step is the last
			if err := x.grow(&r.scratch, total*es); err != nil {
				return err
			}
			me.partial = r.scratch
		}
	case collectives.AllGather:
		layout = newRingLayout(int64(n)*x.k.Param, x.k.Param, int(es), x.c.chunkBytes)
		plan = ringPlan{agSteps: n - 1, agOff: -1}
		copy(x.recv[int64(r.id)*x.k.Param*es:], x.send)
	default:
		return collectives.ErrUnsupported
	}
	x.expose(me)
	base := x.epoch << 32
	up, down := x.peer(r.id-1), x.peer(r.id+1)
	x.c.publish(r.progress, base, down.id)
	if err := x.waitAtLeast(up.progress, base, newPhase("ring start, waiting for rank %d", up.id)); err != nil {
		return err
	}
	upx := x.view(up)
	steps := plan.rsSteps + plan.agSteps
	for c := range layout.chunks {
		for s := range steps {
			k := uint64(c*steps + s)
			name, step := "ring reduce-scatter step %d chunk %d", s
			if s >= plan.rsSteps {
				name, step = "ring all-gather step %d chunk %d", s-plan.rsSteps
			}
			if err := x.waitAtLeast(up.progress, base|k, newPhase(name, step, c)); err != nil {
				return err
			}
			if s < plan.rsSteps {
				x.ringReduce(layout, plan, me, upx, up.id, s, c)
			} else {
				lo, hi := layout.span(mod(r.id+plan.agOff-step, n), c)
				copy(me.out[lo*es:hi*es], upx.out[lo*es:hi*es])
			}
			x.c.publish(r.progress, base|(k+1), down.id)
		}
	}
	x.c.wake(up.id, r.progress) // it waits in its ring end for the last item
	items := uint64(layout.chunks * steps)
	return x.waitAtLeast(down.progress, base|items, newPhase("ring end, waiting for rank %d to finish reading", down.id))
}

// ringReduce is reduce-scatter step s of chunk c: combine upstream's input (step 0) or partial sum with this
// rank's input, into the partial sums or, at the last step, the output.
func (x *run) ringReduce(layout ringLayout, plan ringPlan, me, upx exposed, upID, s, c int) {
	es := int64(x.dt.Size())
	lo, hi := layout.span(mod(x.r.id+plan.rsOff-s, x.n), c)
	if lo == hi {
		return
	}
	acc, preA := upx.partial, 1
	if s == 0 {
		acc, preA = upx.in, pre(upID)
	}
	last := s == plan.rsSteps-1
	var dst []byte
	if last {
		dst = me.out[(lo-plan.finalOff)*es : (hi-plan.finalOff)*es]
	} else {
		dst = me.partial[lo*es : hi*es]
	}
	x.red.combine(dst, acc[lo*es:hi*es], me.in[lo*es:hi*es], preA, pre(x.r.id))
	if last && x.red.finish != nil {
		x.red.finish(dst, x.n)
	}
}

func mod(a, n int) int { return ((a % n) + n) % n }
