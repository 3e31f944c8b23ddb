package vendorengine

import (
	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
	"github.com/rcclx-tests/rcclx-tests/nccl"
)

// p2p is one ncclSend or ncclRecv of a collective moved as point-to-point calls, as nccl-tests moves it.
type p2p struct {
	recv  bool
	ptr   gpurt.DevicePtr
	count int64 // elements
	peer  int
}

func (p p2p) queue(q *nccl.Calls, dt nccl.DataType, r *rank) {
	if p.recv {
		q.Recv(p.ptr, p.count, dt, p.peer, r.comm, r.stream)
	} else {
		q.Send(p.ptr, p.count, dt, p.peer, r.comm, r.stream)
	}
}

// p2ps are the sends and receives of local rank l (global rank me of n) for c, whose views start at send
// and recv: alltoall (a send and a receive per peer, in place too), gather and scatter without the library's
// own calls (to and from the root; none when empty), sendrecv (to me+1, from me-1) and alltoallv (the
// non-empty per-peer parts).
func p2ps(c *collectives.Call, l, me, n int, send, recv gpurt.DevicePtr) []p2p {
	k := c.Counts[l]
	es := gpurt.DevicePtr(c.DType.Size())
	block := gpurt.DevicePtr(k.Param) * es
	var out []p2p
	add := func(isRecv bool, ptr gpurt.DevicePtr, count int64, peer int) {
		out = append(out, p2p{recv: isRecv, ptr: ptr, count: count, peer: peer})
	}
	switch c.Coll.Base() {
	case collectives.AllToAll:
		for p := range n {
			add(false, send+gpurt.DevicePtr(p)*block, k.Param, p)
			add(true, recv+gpurt.DevicePtr(p)*block, k.Param, p)
		}
	case collectives.Gather:
		if k.Param == 0 {
			break
		}
		add(false, send, k.Param, c.Root)
		if me == c.Root {
			for p := range n {
				add(true, recv+gpurt.DevicePtr(p)*block, k.Param, p)
			}
		}
	case collectives.Scatter:
		if k.Param == 0 {
			break
		}
		if me == c.Root {
			for p := range n {
				add(false, send+gpurt.DevicePtr(p)*block, k.Param, p)
			}
		}
		add(true, recv, k.Param, c.Root)
	case collectives.SendRecv:
		add(false, send, k.Param, (me+1)%n)
		add(true, recv, k.Param, (me+n-1)%n)
	case collectives.AllToAllV:
		for p := range n {
			if k.SendCounts[p] > 0 {
				add(false, send+gpurt.DevicePtr(k.SendDispls[p])*es, k.SendCounts[p], p)
			}
			if k.RecvCounts[p] > 0 {
				add(true, recv+gpurt.DevicePtr(k.RecvDispls[p])*es, k.RecvCounts[p], p)
			}
		}
	}
	return out
}

// hyperCubeStep is step mask (1, 2, 4 ... below n) of hypercube for local rank l: it sends the mask blocks it
// holds (those of the ranks equal to it above the step's bit) to me^mask and receives the partner's as many.
// Out of place, its own block reaches the receive buffer as a send to itself in the first step (nccl-tests
// copies it with cudaMemcpyAsync before the steps), and that step sends from the send buffer, which holds the
// same block. One rank makes only that copy.
func hyperCubeStep(c *collectives.Call, l, me, n, mask int, send, recv gpurt.DevicePtr) []p2p {
	count := c.Counts[l].Param
	block := gpurt.DevicePtr(count) * gpurt.DevicePtr(c.DType.Size())
	src := recv + gpurt.DevicePtr(me&^(mask-1))*block
	var out []p2p
	if mask == 1 && !c.InPlace(l) {
		out = append(out, p2p{ptr: send, count: count, peer: me},
			p2p{recv: true, ptr: recv + gpurt.DevicePtr(me)*block, count: count, peer: me})
		src = send
	}
	if peer := me ^ mask; mask < n {
		out = append(out, p2p{ptr: src, count: count * int64(mask), peer: peer},
			p2p{recv: true, ptr: recv + gpurt.DevicePtr(peer&^(mask-1))*block, count: count * int64(mask), peer: peer})
	}
	return out
}
