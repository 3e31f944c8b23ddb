package hostengine

// Direct (pairwise) alltoall. At step s (0..n-1) rank r copies block r of rank r-s's input (mod n) into block
// r-s of its output; step 0 is its own block. Each rank exposes its input and announces the call
// (progress = epoch<<32, see ring.go); a reader waits only for the one peer it reads next, so ranks do not
// move in lock-step. A closing barrier keeps every input in place until all peers have read it. In place,
// the output overwrites blocks peers still need, so the input is first staged in the rank's scratch buffer.
func (x *run) direct() error {
	r := x.r
	block := x.k.Param * int64(x.dt.Size())
	src, err := x.staged()
	if err != nil {
		return err
	}
	base := x.announce(src, nil) // every peer reads this rank's input
	mine := int64(r.id) * block
	for s := range x.n {
		p := x.peer(r.id - s)
		if err := x.waitAtLeast(p.progress, base, newPhase("direct step %d, waiting for rank %d", s, p.id)); err != nil {
			return err
		}
		theirs := int64(p.id) * block
		copy(x.recv[theirs:theirs+block], x.view(p).in[mine:mine+block])
	}
	return x.barrier(1)
}
