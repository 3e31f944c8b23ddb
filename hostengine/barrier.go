package hostengine

import "sync/atomic"

// barrier is SPEC's DDA barrier. Every rank has a mailbox per block index with one flag per peer. To pass
// barrier number e (its epoch) with block b, rank r stores e into its slot of block b in every peer's mailbox
// (release), then waits until every peer's slot in its own block-b mailbox holds at least e (acquire). Epochs
// only grow, so nothing is reset between calls: a peer that has already moved on to e+1 still satisfies e, and
// no peer can get to e+2 before this rank has stored e+1. Blocks are independent barriers; the host engine
// runs one block per rank, a GPU kernel one per thread block.
type barrier struct {
	n, blocks int
	boxes     [][]atomic.Uint64 // rank r's block-b slot for peer p: boxes[r][b*n+p] (shared memory across processes)
}

func newBarrier(n, blocks int) *barrier {
	mail := make([]atomic.Uint64, n*blocks*n)
	b := &barrier{n: n, blocks: blocks}
	for r := range n {
		b.boxes = append(b.boxes, mail[r*blocks*n:(r+1)*blocks*n])
	}
	return b
}

func (b *barrier) slot(owner, block, peer int) *atomic.Uint64 {
	return &b.boxes[owner][block*b.n+peer]
}

// wait is rank's arrival at barrier epoch on block.
func (b *barrier) wait(w *waiter, rank, block int, epoch uint64, p phase) error {
	for peer := range b.n {
		if peer != rank {
			w.c.publish(b.slot(peer, block, rank), epoch, peer)
		}
	}
	for peer := range b.n {
		if peer != rank {
			if err := w.waitAtLeast(b.slot(rank, block, peer), epoch, p); err != nil {
				return err
			}
		}
	}
	return nil
}
