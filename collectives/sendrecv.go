package collectives

// SendRecv: every rank sends S bytes to rank+1 and receives S bytes from rank-1. nccl-tests runs (and prints)
// every -o operation though nothing is reduced, and leaves the in-place half unchecked.
var SendRecv = &Collective{
	Name:             "sendrecv",
	opCol:            opEvery,
	inPlaceUnchecked: true,
	algorithm:        Direct,
	counts: func(elems int64, nranks, rank int, dt DType) Counts {
		return Counts{Send: elems, Recv: elems, Param: elems}
	},
	busFactor: func(int) float64 { return 1 },
	source: func(rank, root, nranks int, c Counts, i int64) (int, int64, bool) {
		return (rank + nranks - 1) % nranks, i, false
	},
}
