package collectives

// Counts are the element counts of one collective call on one rank, derived from a requested size in bytes the
// way nccl-tests derives them.
type Counts struct {
	Send, Recv int64 // elements in each rank's send and receive buffer
	Param      int64 // the count column of the report and the count argument of the library call
	// In-place runs use one buffer of max(Send, Recv) elements: the send view starts at SendInPlace elements, the
	// receive view at RecvInPlace (nccl-tests' send/recv in-place offsets; they depend on the rank).
	SendInPlace, RecvInPlace int64
	// Per-peer counts and displacements in elements, set for alltoallv only (nil otherwise): SendCounts[p]
	// elements from SendDispls[p] of the send view go to peer p, RecvCounts[p] elements from peer p land at
	// RecvDispls[p] of the receive view. Send and Recv are then the largest totals of any rank (every rank's
	// buffers are that large, as in nccl-tests).
	SendCounts, SendDispls, RecvCounts, RecvDispls []int64
	// SrcDispls[p] is where, in peer p's send view, the elements p sends to this rank start (peer p's
	// SendDispls[this rank]): for engines that read their peers' buffers.
	SrcDispls []int64
	// MaxPeer is the most elements any rank sends any one peer (the same on every rank): what rounds that move
	// a part of every peer's piece at once must cover.
	MaxPeer int64
}

// opColumn says which -o operations the sweep runs for a collective and what its redop column holds.
type opColumn int

const (
	opNone  opColumn = iota // one pass, "none" (copies: all_gather, broadcast ...)
	opEvery                 // every -o operation, printed, though nothing is reduced (sendrecv)
	opBlank                 // one pass, an empty column (hypercube)
)

// Collective is one operation the suite measures. Each is defined in its own file.
//
// Engines dispatch on the descriptor: compare c.Base() with the variables of this package (AllReduce,
// AllToAllV ...), as Prepare may return a configured copy (alltoallv's pattern).
type Collective struct {
	Name    string // "all_reduce": the report's and JSON's name; binaries are Name+"_perf"
	Reduces bool   // whether redop applies (-o runs every op and the report prints it)
	// Rooted: the call takes a root (-r; -r -1 runs a row per root) and the report prints it.
	Rooted bool
	opCol  opColumn // for collectives that do not reduce
	// sameOnEveryRank: every rank receives the same data, so one expectation serves them all.
	sameOnEveryRank bool
	// bias: rccl-tests' all_reduce_bias: the send view holds the input, then the rank's bias (Param elements
	// each), which the library combines (op) with the reduction.
	bias bool
	// sizeElems is the size column's element count; nil: the larger of the send and receive counts.
	sizeElems func(k Counts) int64
	// inPlaceUnchecked: nccl-tests leaves the in-place half unchecked (#wrong N/A): the send and receive
	// ranges overlap in ways the library does not define (sendrecv, alltoallv).
	inPlaceUnchecked bool
	// algorithm is what the host and GPU engines run for collectives outside the RCCLX policy ("" = the policy).
	algorithm string
	// counts derives the per-rank counts from the requested size in elements (size / element size).
	counts func(elems int64, nranks, rank int, dt DType) Counts
	// busFactor converts algorithm bandwidth into bus bandwidth for n ranks.
	busFactor func(n int) float64
	// algElems is the element count the algorithm bandwidth counts; nil: the size column's.
	algElems func(k Counts) int64
	// source names, for element i of rank's receive buffer, the ranks and element indices of the inputs
	// it is made from: a reduction over all ranks at one index, or a copy of one (rank, index).
	source func(rank, root, nranks int, c Counts, i int64) (srcRank int, srcIndex int64, reduced bool)
	// checked is how many leading elements of rank's receive view a call defines and validation checks;
	// nil: all of k.Recv (0 on the ranks other than the root where rootOnly).
	checked func(rank, root, nranks int, k Counts) int64
	// rootOnly: the result exists only at the root (reduce, gather); the other ranks' receive views must keep
	// what they held before the call, which nccl-tests checks too.
	rootOnly bool
	// prepare configures the collective for a run (see Prepare); nil: nothing to configure.
	prepare func(c *Collective, getenv func(string) string, nranks int, minBytes, maxBytes int64) (*Collective, error)
	// summary is alltoallv's NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY output; nil: none.
	summary func(k Counts, dt DType, nranks int, sec float64) []string
	note    string      // a header line on how Prepare read the run's configuration ("": none)
	base    *Collective // the registered descriptor a prepared copy was made from
}

// All lists nccl-tests' collectives, in the order of its binaries (rccl-tests' AllReduceBias, which only some
// libraries run, is not among them).
func All() []*Collective {
	return []*Collective{AllReduce, AllGather, AllToAll, ReduceScatter, Broadcast, Reduce, Gather, Scatter,
		SendRecv, AllToAllV, HyperCube}
}

// Base is the registered descriptor c is (or was prepared from): what engines compare against.
func (c *Collective) Base() *Collective {
	if c.base != nil {
		return c.base
	}
	return c
}

// Prepare checks that c can run on nranks ranks between minBytes and maxBytes and reads its own environment
// (getenv: alltoallv's NCCL_TESTS_ALLTOALLV_* pattern). It returns the collective to run: c itself, or a
// configured copy. An error is one line for the user, to be reported before anything is measured.
func (c *Collective) Prepare(getenv func(string) string, nranks int, minBytes, maxBytes int64) (*Collective, error) {
	b := c.Base()
	if b.prepare == nil {
		return b, nil
	}
	return b.prepare(b, getenv, nranks, minBytes, maxBytes)
}

// Counts derives rank's counts for a requested size in bytes.
func (c *Collective) Counts(sizeBytes int64, nranks, rank int, dt DType) Counts {
	return c.counts(sizeBytes/int64(dt.Size()), nranks, rank, dt)
}

// Bytes is the report's size column: the larger of the per-rank send and receive sizes (all_reduce_bias:
// the input's, without the bias).
func (c *Collective) Bytes(k Counts, dt DType) int64 {
	if c.sizeElems != nil {
		return c.sizeElems(k) * int64(dt.Size())
	}
	return max(k.Send, k.Recv) * int64(dt.Size())
}

// AlgBW is the algorithm bandwidth in GB/s (1e9 bytes) of a call with counts k taking sec seconds: the size
// column over the time, except where nccl-tests counts other bytes (hypercube: what each rank receives).
func (c *Collective) AlgBW(k Counts, dt DType, sec float64) float64 {
	if sec <= 0 {
		return 0
	}
	bytes := c.Bytes(k, dt)
	if c.algElems != nil {
		bytes = c.algElems(k) * int64(dt.Size())
	}
	return float64(bytes) / 1e9 / sec
}

// BusBW is the bus bandwidth in GB/s, comparable across rank counts (nccl-tests' definition).
func (c *Collective) BusBW(k Counts, dt DType, sec float64, nranks int) float64 {
	return c.AlgBW(k, dt, sec) * c.busFactor(nranks)
}

// BusFactor is busbw / algbw for n ranks.
func (c *Collective) BusFactor(n int) float64 { return c.busFactor(n) }

// Source names the inputs element i of rank's receive buffer is made from (root: the call's root, -1 for
// none): every rank's element srcIndex (reduced), or element srcIndex of rank srcRank.
func (c *Collective) Source(rank, root, nranks int, k Counts, i int64) (srcRank int, srcIndex int64, reduced bool) {
	return c.source(rank, root, nranks, k, i)
}

// SameOnEveryRank reports whether every rank receives the same data (all_reduce, all_gather, broadcast ...).
func (c *Collective) SameOnEveryRank() bool { return c.sameOnEveryRank }

// InPlaceChecked reports whether the in-place half is validated (nccl-tests: not for sendrecv and alltoallv).
func (c *Collective) InPlaceChecked() bool { return !c.inPlaceUnchecked }

// SweepsOps reports whether the sweep runs every -o operation (reductions, and sendrecv as nccl-tests does).
func (c *Collective) SweepsOps() bool { return c.Reduces || c.opCol == opEvery }

// RedOpName is the report's redop column.
func (c *Collective) RedOpName(op Op) string {
	switch {
	case c.Reduces || c.opCol == opEvery:
		return op.String()
	case c.opCol == opBlank:
		return ""
	}
	return "none"
}

// Checked is how many leading elements of rank's receive view a call with root defines: k.Recv, except where
// the result exists only at the root (reduce, gather: 0 elsewhere) or a rank receives less than its buffer holds
// (alltoallv). Validation compares exactly these with the expected values, and the rest of the view with what
// it held before the call.
func (c *Collective) Checked(rank, root, nranks int, k Counts) int64 {
	switch {
	case c.rootOnly && rank != root:
		return 0
	case c.checked == nil:
		return k.Recv
	}
	return c.checked(rank, root, nranks, k)
}

// Note is a header line on how Prepare read the collective's configuration ("" when there is nothing to say):
// alltoallv's matrix larger than the run.
func (c *Collective) Note() string { return c.note }

// Summary is the `#` lines a collective adds after a half measured in sec seconds (alltoallv with
// NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY=1: per-rank bytes and bandwidth); nil for the others.
func (c *Collective) Summary(k Counts, dt DType, nranks int, sec float64) []string {
	if c.summary == nil {
		return nil
	}
	return c.summary(k, dt, nranks, sec)
}

// perRank rounds a per-rank element count down to a multiple of 16 bytes, as nccl-tests does.
func perRank(elems int64, nranks int, dt DType) int64 {
	align := int64(16 / dt.Size())
	return elems / int64(nranks) / align * align
}
