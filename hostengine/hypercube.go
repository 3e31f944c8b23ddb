package hostengine

// HyperCube: an all-gather in log2(n) steps. A rank first places its input in block <its rank> of its output;
// at step t it holds the 2^t blocks of its group (ranks equal to it above bit t) and copies the 2^t blocks of
// the partner group from rank XOR 2^t's output, once that rank has finished step t-1. progress counts the
// steps done (epoch<<32 | t).
func (x *run) hyperCube() error {
	r := x.r
	block := int64(len(x.send))
	mine := int64(r.id) * block
	if !x.inPlace {
		copy(x.recv[mine:mine+block], x.send)
	}
	base := x.announce(nil, x.recv)
	for t, mask := 0, 1; mask < x.n; t, mask = t+1, mask<<1 {
		p := x.peer(r.id ^ mask)
		if err := x.waitAtLeast(p.progress, base|uint64(t), newPhase("hypercube step %d, waiting for rank %d", t, p.id)); err != nil {
			return err
		}
		lo := int64(p.id&^(mask-1)) * block
		hi := lo + int64(mask)*block
		copy(x.recv[lo:hi], x.view(p).out[lo:hi])
		if next := r.id ^ mask<<1; next < x.n {
			x.c.publish(r.progress, base|uint64(t+1), next) // the partner of the next step reads it
		} else {
			x.c.publish(r.progress, base|uint64(t+1))
		}
	}
	return x.barrier(1)
}
