package hostengine

import "github.com/rcclx-tests/rcclx-tests/collectives"

// DDA: every rank copies its input into its own peer-visible buffer (policy.SendBuf bytes, allocated on the
// communicator's first DDA call), all ranks pass a barrier, and each reads what it needs straight from its
// peers' buffers; a closing barrier keeps peers from refilling their buffers while others still read them.
//
//   - dda_flat (all_reduce, one-shot): each rank reduces the whole vector from all n buffers.
//   - dda_tree (all_reduce, two-shot): rank r reduces slice r (count/n elements) from all n buffers into its
//     output, barrier, then copies slice j from rank j's output for every j != r.
//   - dda (all_gather, reduce_scatter, alltoall): rank r copies rank j's input into output block j
//     (all_gather), reduces block r of all inputs (reduce_scatter), or copies block r of rank j's input into
//     output block j (alltoall).
//
// Reduction order (bit-level contract for the GPU kernels): every reduced element is
// ((in_0 ⊕ in_1) ⊕ in_2) ⊕ ... ⊕ in_n-1 in rank order, stored in the element type after every ⊕ (as a kernel
// adding 16-byte vectors of the element type does), so all ranks compute identical bits.

// ddaIn copies the call's input into this rank's peer-visible buffer and exposes it.
func (x *run) ddaIn() error {
	r := x.r
	if r.dda == nil {
		if err := x.grow(&r.dda, x.c.policy.SendBuf); err != nil {
			return err
		}
	}
	in := r.dda[:len(x.send)]
	copy(in, x.send)
	x.expose(exposed{in: in, out: x.recv})
	return nil
}

func (x *run) ddaFlat() error {
	if err := x.ddaIn(); err != nil {
		return err
	}
	if err := x.barrier(1); err != nil {
		return err
	}
	x.reduceRanks(x.recv, x.peerInputs(0, int64(len(x.recv))))
	return x.barrier(2)
}

func (x *run) ddaTree() error {
	if err := x.ddaIn(); err != nil {
		return err
	}
	if err := x.barrier(1); err != nil {
		return err
	}
	slice := int64(len(x.recv) / x.n)
	lo := int64(x.r.id) * slice
	x.reduceRanks(x.recv[lo:lo+slice], x.peerInputs(lo, lo+slice))
	if err := x.barrier(2); err != nil {
		return err
	}
	for j := range x.n {
		if j != x.r.id {
			at := int64(j) * slice
			copy(x.recv[at:at+slice], x.view(x.peer(j)).out[at:at+slice])
		}
	}
	return x.barrier(3)
}

func (x *run) dda() error {
	if err := x.ddaIn(); err != nil {
		return err
	}
	if err := x.barrier(1); err != nil {
		return err
	}
	block := x.k.Param * int64(x.dt.Size())
	mine := int64(x.r.id) * block
	switch x.coll {
	case collectives.AllGather:
		for j := range x.n {
			copy(x.recv[int64(j)*block:], x.view(x.peer(j)).in)
		}
	case collectives.ReduceScatter:
		x.reduceRanks(x.recv, x.peerInputs(mine, mine+block))
	case collectives.AllToAll:
		for j := range x.n {
			copy(x.recv[int64(j)*block:int64(j+1)*block], x.view(x.peer(j)).in[mine:mine+block])
		}
	default:
		return collectives.ErrUnsupported
	}
	return x.barrier(2)
}

// peerInputs returns bytes [lo, hi) of every rank's exposed input, in rank order.
func (x *run) peerInputs(lo, hi int64) [][]byte {
	srcs := make([][]byte, x.n)
	for j := range srcs {
		srcs[j] = x.view(x.peer(j)).in[lo:hi]
	}
	return srcs
}

// reduceBlockBytes is how much of the output reduceRanks finishes before moving on, so that the partial
// results stay in cache while every source is added in.
const reduceBlockBytes = 16 << 10

// reduceRanks sets dst to the reduction of srcs (one per rank, in rank order), then applies avg's division.
func (x *run) reduceRanks(dst []byte, srcs [][]byte) {
	for lo := 0; lo < len(dst); lo += reduceBlockBytes {
		hi := min(lo+reduceBlockBytes, len(dst))
		d := dst[lo:hi]
		if len(srcs) == 1 {
			copy(d, srcs[0][lo:hi]) // rank 0's premultiplier is 1
			continue
		}
		x.red.combine(d, srcs[0][lo:hi], srcs[1][lo:hi], pre(0), pre(1))
		for j := 2; j < len(srcs); j++ {
			x.red.combine(d, d, srcs[j][lo:hi], 1, pre(j))
		}
	}
	if x.red.finish != nil {
		x.red.finish(dst, x.n)
	}
}
