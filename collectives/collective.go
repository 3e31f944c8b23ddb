package collectives

// Counts are the element counts of one collective call on one rank, derived from a requested size in bytes the
// way nccl-tests derives them.
type Counts struct {
	Send, Recv int64 // elements in each rank's send and receive buffer
	Param      int64 // the count column of the report and the count argument of the library call
	// In-place runs use one buffer of max(Send, Recv) elements: the send view starts at SendInPlace elements, the
	// receive view at RecvInPlace (nccl-tests' send/recv in-place offsets; they depend on the rank).
	SendInPlace, RecvInPlace int64
}

// Collective is one operation the suite measures. Each is defined in its own file.
type Collective struct {
	Name    string // "all_reduce": the report's and JSON's name; binaries are Name+"_perf"
	Reduces bool   // whether redop applies; the report prints "none" otherwise
	// sameOnEveryRank: every rank receives the same data, so one expectation serves them all.
	sameOnEveryRank bool
	// counts derives the per-rank counts from the requested size in elements (size / element size).
	counts func(elems int64, nranks, rank int, dt DType) Counts
	// busFactor converts algorithm bandwidth into bus bandwidth for n ranks.
	busFactor func(n int) float64
	// source names, for element i of rank's receive buffer, the ranks and element indices of the inputs
	// it is made from: a reduction over all ranks at one index, or a copy of one (rank, index).
	source func(rank, nranks int, c Counts, i int64) (srcRank int, srcIndex int64, reduced bool)
}

// All lists the four collectives, in the order of their binaries.
func All() []*Collective { return []*Collective{AllReduce, AllGather, AllToAll, ReduceScatter} }

// Counts derives rank's counts for a requested size in bytes.
func (c *Collective) Counts(sizeBytes int64, nranks, rank int, dt DType) Counts {
	return c.counts(sizeBytes/int64(dt.Size()), nranks, rank, dt)
}

// Bytes is the report's size column: the larger of the per-rank send and receive sizes.
func (c *Collective) Bytes(k Counts, dt DType) int64 {
	return max(k.Send, k.Recv) * int64(dt.Size())
}

// AlgBW is the algorithm bandwidth in GB/s (1e9 bytes) of moving the size column in sec seconds.
func (c *Collective) AlgBW(k Counts, dt DType, sec float64) float64 {
	if sec <= 0 {
		return 0
	}
	return float64(c.Bytes(k, dt)) / 1e9 / sec
}

// BusBW is the bus bandwidth in GB/s, comparable across rank counts (nccl-tests' definition).
func (c *Collective) BusBW(k Counts, dt DType, sec float64, nranks int) float64 {
	return c.AlgBW(k, dt, sec) * c.busFactor(nranks)
}

// BusFactor is busbw / algbw for n ranks.
func (c *Collective) BusFactor(n int) float64 { return c.busFactor(n) }

// Source names the inputs element i of rank's receive buffer is made from: every rank's element srcIndex
// (reduced), or element srcIndex of rank srcRank.
func (c *Collective) Source(rank, nranks int, k Counts, i int64) (srcRank int, srcIndex int64, reduced bool) {
	return c.source(rank, nranks, k, i)
}

// SameOnEveryRank reports whether every rank receives the same data (all_reduce, all_gather).
func (c *Collective) SameOnEveryRank() bool { return c.sameOnEveryRank }

// RedOpName is the report's redop column.
func (c *Collective) RedOpName(op Op) string {
	if !c.Reduces {
		return "none"
	}
	return op.String()
}

// perRank rounds a per-rank element count down to a multiple of 16 bytes, as nccl-tests does.
func perRank(elems int64, nranks int, dt DType) int64 {
	align := int64(16 / dt.Size())
	return elems / int64(nranks) / align * align
}
