package collectives

// Scatter: the root sends S bytes, piece r (S/n bytes) to rank r. In place, a rank receives at its own offset
// of the send buffer.
var Scatter = &Collective{
	Name:      "scatter",
	Rooted:    true,
	algorithm: Direct,
	counts: func(elems int64, nranks, rank int, dt DType) Counts {
		p := perRank(elems, nranks, dt)
		return Counts{Send: p * int64(nranks), Recv: p, Param: p, RecvInPlace: int64(rank) * p}
	},
	busFactor: func(n int) float64 { return float64(n-1) / float64(n) },
	source: func(rank, root, nranks int, c Counts, i int64) (int, int64, bool) {
		return root, int64(rank)*c.Param + i, false
	},
}
