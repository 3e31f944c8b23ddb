package collectives

// ReduceScatter: every rank sends S bytes and receives its 1/n slice of the reduction (S/n bytes).
var ReduceScatter = &Collective{
	Name:    "reduce_scatter",
	Reduces: true,
	counts: func(elems int64, nranks, rank int, dt DType) Counts {
		p := perRank(elems, nranks, dt)
		return Counts{Send: p * int64(nranks), Recv: p, Param: p, RecvInPlace: int64(rank) * p}
	},
	busFactor: func(n int) float64 { return float64(n-1) / float64(n) },
	source: func(rank, root, nranks int, c Counts, i int64) (int, int64, bool) {
		return 0, int64(rank)*c.Param + i, true
	},
}
