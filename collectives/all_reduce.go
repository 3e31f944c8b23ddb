package collectives

// AllReduce: every rank sends S bytes and receives the reduction of all ranks' inputs (S bytes).
var AllReduce = &Collective{
	Name:            "all_reduce",
	Reduces:         true,
	sameOnEveryRank: true,
	counts: func(elems int64, nranks, rank int, dt DType) Counts {
		return Counts{Send: elems, Recv: elems, Param: elems}
	},
	busFactor: func(n int) float64 { return 2 * float64(n-1) / float64(n) },
	source: func(rank, root, nranks int, c Counts, i int64) (int, int64, bool) {
		return 0, i, true
	},
}
