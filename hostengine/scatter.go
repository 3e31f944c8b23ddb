package hostengine

// Scatter: every rank copies block <its rank> of the root's input into its output.
func (x *run) scatter() error {
	base := x.announce(x.send, nil)
	src, err := x.exposedBy(x.peer(x.root), base)
	if err != nil {
		return err
	}
	block := int64(len(x.recv))
	mine := int64(x.r.id) * block
	copy(x.recv, src.in[mine:mine+block])
	return x.barrier(1)
}
