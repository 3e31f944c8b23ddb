package hostengine

// Gather: the root copies every rank's input into block r of its output (its own too; in place that block
// already holds it). The other ranks' outputs are untouched.
func (x *run) gather() error {
	base := x.announce(x.send, nil)
	if x.r.id == x.root {
		block := int64(len(x.send))
		for p := range x.n {
			in, err := x.exposedBy(x.peer(p), base)
			if err != nil {
				return err
			}
			copy(x.recv[int64(p)*block:int64(p+1)*block], in.in)
		}
	}
	return x.barrier(1)
}
