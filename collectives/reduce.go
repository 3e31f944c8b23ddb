package collectives

// Reduce: every rank sends S bytes; the root receives the reduction of all ranks' inputs (S bytes). The other
// ranks' receive buffers must keep what they held.
var Reduce = &Collective{
	Name:      "reduce",
	Reduces:   true,
	Rooted:    true,
	algorithm: Direct,
	counts: func(elems int64, nranks, rank int, dt DType) Counts {
		return Counts{Send: elems, Recv: elems, Param: elems}
	},
	busFactor: func(int) float64 { return 1 },
	source: func(rank, root, nranks int, c Counts, i int64) (int, int64, bool) {
		return 0, i, true
	},
	rootOnly: true,
}
