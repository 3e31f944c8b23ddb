package hostengine

// AllToAllV: every rank copies, from each peer p in turn starting with itself, the part of p's input meant for
// it (k.SrcDispls[p], k.RecvCounts[p] elements) to k.RecvDispls[p] of its output. In place the input is staged.
func (x *run) allToAllV() error {
	in, err := x.staged()
	if err != nil {
		return err
	}
	base := x.announce(in, nil)
	es := int64(x.dt.Size())
	for s := range x.n {
		p := x.peer(x.r.id - s)
		n := x.k.RecvCounts[p.id] * es
		if n == 0 {
			continue
		}
		src, err := x.exposedBy(p, base)
		if err != nil {
			return err
		}
		from, to := x.k.SrcDispls[p.id]*es, x.k.RecvDispls[p.id]*es
		copy(x.recv[to:to+n], src.in[from:from+n])
	}
	return x.barrier(1)
}
