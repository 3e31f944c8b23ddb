package collectives

// AllToAll: every rank sends S/n bytes to each peer and receives S/n bytes from each (S bytes each way).
var AllToAll = &Collective{
	Name: "alltoall",
	counts: func(elems int64, nranks, rank int, dt DType) Counts {
		p := perRank(elems, nranks, dt)
		return Counts{Send: p * int64(nranks), Recv: p * int64(nranks), Param: p}
	},
	busFactor: func(n int) float64 { return float64(n-1) / float64(n) },
	source: func(rank, root, nranks int, c Counts, i int64) (int, int64, bool) {
		// Block p of my receive buffer is block <my rank> of peer p's send buffer.
		return int(i / c.Param), int64(rank)*c.Param + i%c.Param, false
	},
}
