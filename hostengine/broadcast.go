package hostengine

// Broadcast: every rank copies the root's input into its output; the root copies its own, except in place
// (where its output is that input, which the others are reading).
func (x *run) broadcast() error {
	base := x.announce(x.send, nil)
	src, err := x.exposedBy(x.peer(x.root), base)
	if err != nil {
		return err
	}
	if x.r.id != x.root || !x.inPlace {
		copy(x.recv, src.in[:len(x.recv)])
	}
	return x.barrier(1)
}
