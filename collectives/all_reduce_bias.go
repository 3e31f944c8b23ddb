package collectives

// AllReduceBias: rccl-tests' all_reduce_bias_perf over RCCL's ncclAllReduceWithBias: an all_reduce whose result
// each rank combines (op) with a bias vector of its own. The send view holds the input and then the bias
// (Param elements each: engines find the bias at Param elements past the send view); sizes and bandwidth are
// all_reduce's. Only libraries exporting ncclAllReduceWithBias run it, for sum, prod, max and min.
var AllReduceBias = &Collective{
	Name:    "all_reduce_bias",
	Reduces: true,
	bias:    true,
	counts: func(elems int64, nranks, rank int, dt DType) Counts {
		return Counts{Send: 2 * elems, Recv: elems, Param: elems}
	},
	sizeElems: func(k Counts) int64 { return k.Param },
	busFactor: func(n int) float64 { return 2 * float64(n-1) / float64(n) },
	source: func(rank, root, nranks int, c Counts, i int64) (int, int64, bool) {
		return 0, i, true
	},
}

// HasBias reports whether c's send view carries a bias after the input (all_reduce_bias).
func (c *Collective) HasBias() bool { return c.bias }
