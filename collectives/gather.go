package collectives

// Gather: every rank sends S/n bytes; the root receives all ranks' pieces in rank order (S bytes). In place,
// a rank's piece sits at its own offset of the receive buffer. The other ranks' receive buffers must keep what
// they held.
var Gather = &Collective{
	Name:      "gather",
	Rooted:    true,
	algorithm: Direct,
	counts: func(elems int64, nranks, rank int, dt DType) Counts {
		p := perRank(elems, nranks, dt)
		return Counts{Send: p, Recv: p * int64(nranks), Param: p, SendInPlace: int64(rank) * p}
	},
	busFactor: func(n int) float64 { return float64(n-1) / float64(n) },
	source: func(rank, root, nranks int, c Counts, i int64) (int, int64, bool) {
		return int(i / c.Param), i % c.Param, false
	},
	rootOnly: true,
}
