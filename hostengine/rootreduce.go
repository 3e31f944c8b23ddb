package hostengine

// Reduce: the root reduces every rank's input into its output, starting from its own and going round the ranks
// (root, root+1, ..., root-1), so that in place its input is consumed before the output overwrites it. The
// other ranks' outputs are untouched.
func (x *run) rootReduce() error {
	base := x.announce(x.send, nil)
	if x.r.id == x.root {
		if x.n == 1 {
			copy(x.recv, x.send)
			return x.barrier(1)
		}
		for s := 1; s < x.n; s++ {
			p := x.peer(x.root + s)
			in, err := x.exposedBy(p, base)
			if err != nil {
				return err
			}
			acc, preA := x.recv, 1
			if s == 1 {
				acc, preA = x.send, pre(x.root)
			}
			x.red.combine(x.recv, acc, in.in[:len(x.recv)], preA, pre(p.id))
		}
		if x.red.finish != nil {
			x.red.finish(x.recv, x.n)
		}
	}
	return x.barrier(1)
}
