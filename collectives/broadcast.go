package collectives

// Broadcast: the root sends S bytes and every rank receives them (S bytes). In place, one buffer per rank.
var Broadcast = &Collective{
	Name:            "broadcast",
	Rooted:          true,
	sameOnEveryRank: true,
	algorithm:       Direct,
	counts: func(elems int64, nranks, rank int, dt DType) Counts {
		return Counts{Send: elems, Recv: elems, Param: elems}
	},
	busFactor: func(int) float64 { return 1 },
	source: func(rank, root, nranks int, c Counts, i int64) (int, int64, bool) {
		return root, i, false
	},
}
