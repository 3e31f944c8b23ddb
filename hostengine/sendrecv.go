package hostengine

// SendRecv: every rank copies rank-1's input into its output (in place from a staged copy of its own input,
// which rank+1 is still reading).
func (x *run) sendRecv() error {
	in, err := x.staged()
	if err != nil {
		return err
	}
	base := x.announce(in, nil)
	src, err := x.exposedBy(x.peer(x.r.id-1), base)
	if err != nil {
		return err
	}
	copy(x.recv, src.in[:len(x.recv)])
	return x.barrier(1)
}
