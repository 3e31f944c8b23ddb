package vendorengine

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
	"github.com/rcclx-tests/rcclx-tests/nccl"
)

// Launch issues c on every local rank in one NCCL group, on this thread, and returns once the library has
// enqueued it (on non-blocking communicators, once they are ready again), without waiting for the device.
func (g *group) Launch(c *collectives.Call) error {
	if err := g.prepare(c); err != nil {
		return err
	}
	g.c.hooks.Pause()
	if c.Coll.Base() == collectives.HyperCube && g.c.nonBlocking {
		// Each step is a group of its own, and NCCL refuses a call on a communicator whose last group is still
		// in progress (a step's first call connects new peers): each step is awaited before the next.
		g.arrive()
		for _, mask := range hyperCubeMasks(g.c.nranks) {
			g.calls.Reset()
			g.queueHyperCubeStep(g.calls, c, mask)
			if err := g.finish(g.calls.Run()); err != nil {
				return err
			}
		}
		return g.corrupt(c)
	}
	g.calls.Reset()
	g.queue(g.calls, c, -1)
	if err := g.finish(g.calls.Run()); err != nil {
		return err
	}
	return g.corrupt(c)
}

// PrepareLoop readies iters iterations of agg operations from the first-th on (the i-th is calls[i mod
// len(calls)]); as nccl-tests does for -m, an iteration of several operations is one NCCL group. The library
// calls are listed before launch is called (up to preparedCalls of them; a longer loop lists the rest as it
// goes) and go to the library in one crossing from Go per loopChunk calls. Non-blocking communicators,
// which must be ready again before their next call, and the corrupt and delay hooks go call by call, through
// Launch (without -F's flushes). The flushes of -F (FlushICache) are listed with the library calls.
func (g *group) PrepareLoop(calls []*collectives.Call, first, iters, agg int) (func() error, error) {
	if g.c.nonBlocking || g.c.hooks.CorruptRank >= 0 || g.c.hooks.Delay > 0 {
		return func() error { return collectives.LaunchEach(g, calls, first, iters*agg) }, nil
	}
	if err := g.prepare(calls[first%len(calls)]); err != nil { // one size, type and operation for all
		return nil, err
	}
	next := 0 // the next iteration to list
	list := func(q *nccl.Calls) {
		q.Reset()
		for ; next < iters && q.Len() < loopChunk; next++ {
			if agg > 1 {
				q.GroupStart()
			}
			for a := range agg {
				op := first + next*agg + a
				g.queue(q, calls[op%len(calls)], op)
			}
			if agg > 1 {
				q.GroupEnd()
			}
		}
	}
	ready := 0
	for ; next < iters && ready*loopChunk < preparedCalls; ready++ {
		if ready == len(g.loop) {
			g.loop = append(g.loop, g.c.lib.NewCalls())
		}
		list(g.loop[ready])
	}
	return func() error {
		for _, q := range g.loop[:ready] {
			if err := g.finish(q.Run()); err != nil {
				return err
			}
		}
		for next < iters {
			list(g.calls)
			if err := g.finish(g.calls.Run()); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// finish is comm.finish for the group's calls.
func (g *group) finish(err error) error {
	return fp8Refused(g.fp8, g.c.finish(g.ranks, g.lastCall, err))
}

// fp8Refused marks err, of a call on an FP8 type (fp8) that the library refused with ncclInvalidArgument, as a
// type and operation the library does not support, which the sweep skips with a "#" line, not a failed run.
// NCCL supports only some operations on the FP8 types: 2.28.3 refuses ncclAvg when the call is made and a
// PreMulSum operation (mulsum) when the operation is created.
func fp8Refused(fp8 bool, err error) error {
	var e *nccl.Error
	if fp8 && errors.As(err, &e) && e.Code == nccl.InvalidArgument {
		return fmt.Errorf("%w (%w)", err, collectives.ErrUnsupported)
	}
	return err
}

// Variables for the tests' sake.
var (
	loopChunk     = 4096  // the most calls of a loop made in one crossing
	preparedCalls = 65536 // the most calls of a loop listed before it starts (~7 MB)
)

// prepare checks that the communicators are usable and sets the data type and operations of c's calls.
func (g *group) prepare(c *collectives.Call) error {
	if err := g.c.usable(); err != nil {
		return err
	}
	if !slices.Contains(collectives.All(), c.Coll.Base()) && c.Coll.Base() != collectives.AllReduceBias {
		return fmt.Errorf("vendor: %s: %w", c.Coll.Name, collectives.ErrUnsupported)
	}
	if err := g.c.CanRun(c.Coll); err != nil {
		return err
	}
	if c.Coll.HasBias() && c.Op != collectives.Sum && c.Op != collectives.Prod && c.Op != collectives.Max && c.Op != collectives.Min {
		return fmt.Errorf("vendor: all_reduce_bias %s: %w", c.Op, collectives.ErrUnsupported)
	}
	dt, err := g.dataType(c.DType)
	if err != nil {
		return err
	}
	if c.Coll.Reduces {
		if err := g.redOps(c.Op, c.DType, dt); err != nil {
			return err
		}
	}
	g.dt, g.lastCall, g.fp8 = dt, g.c.callName(c), c.DType.FP8()
	return nil
}

// queue adds c's library calls to q, in one group where grouped says so, each rank's after its -F flush where
// op (c's index in a timed loop, -1 outside one) says so. The skip hook's rank makes none.
func (g *group) queue(q *nccl.Calls, c *collectives.Call, op int) {
	g.arrive()
	if c.Coll.Base() == collectives.HyperCube {
		for _, r := range g.ranks {
			g.queueFlush(q, r, op)
		}
		g.queueHyperCube(q, c)
		return
	}
	group := grouped(len(g.ranks), g.c.nonBlocking, g.sendRecv(c))
	if group {
		q.GroupStart()
	}
	for l, r := range g.ranks {
		g.queueFlush(q, r, op)
		if r.global != g.c.hooks.SkipRank {
			g.queueOne(q, c, l, r)
		}
	}
	if group {
		q.GroupEnd()
	}
}

// arrive counts a call entered by every local rank but the skip hook's (for a timeout's message).
func (g *group) arrive() {
	for _, r := range g.ranks {
		if r.global != g.c.hooks.SkipRank {
			g.c.arrivals.Arrive(r.global)
		}
	}
}

// grouped reports whether a call goes inside ncclGroupStart/ncclGroupEnd: as nccl-tests, only with several
// local ranks or several calls per rank (alltoall's sends and receives); and on non-blocking communicators,
// whose progress is awaited at the group's end.
func grouped(nlocal int, nonBlocking, sendRecv bool) bool {
	return nlocal > 1 || nonBlocking || sendRecv
}

// sendRecv reports whether c moves as sends and receives.
func (g *group) sendRecv(c *collectives.Call) bool {
	switch c.Coll.Base() {
	case collectives.AllToAll:
		return !(g.c.nativeAlltoAll && !c.InPlace(0))
	case collectives.Gather:
		return !g.c.nativeGather
	case collectives.Scatter:
		return !g.c.nativeScatter
	case collectives.SendRecv, collectives.AllToAllV, collectives.HyperCube:
		return true
	}
	return false
}

func (g *group) queueOne(q *nccl.Calls, c *collectives.Call, l int, r *rank) {
	// A count of 0 still goes to the library, as nccl-tests does: NCCL 2.28 takes ~13 us over an empty alltoall.
	dt, count := g.dt, c.Counts[l].Param
	send, recv := devicePtr(c.Send[l]), devicePtr(c.Recv[l])
	if g.sendRecv(c) {
		for _, op := range p2ps(c, l, r.global, g.c.nranks, send, recv) {
			op.queue(q, dt, r)
		}
		return
	}
	switch c.Coll.Base() {
	case collectives.AllReduce:
		q.AllReduce(send, recv, count, dt, g.ops[l], r.comm, r.stream)
	case collectives.AllReduceBias: // the bias follows the input in the send view
		q.AllReduceWithBias(send, recv, count, dt, g.ops[l], r.comm, r.stream, send+gpurt.DevicePtr(count*int64(c.DType.Size())))
	case collectives.AllGather:
		q.AllGather(send, recv, count, dt, r.comm, r.stream)
	case collectives.ReduceScatter:
		q.ReduceScatter(send, recv, count, dt, g.ops[l], r.comm, r.stream)
	case collectives.AllToAll:
		q.AlltoAll(send, recv, count, dt, r.comm, r.stream)
	case collectives.Broadcast:
		q.Broadcast(send, recv, count, dt, c.Root, r.comm, r.stream)
	case collectives.Reduce:
		q.Reduce(send, recv, count, dt, g.ops[l], c.Root, r.comm, r.stream)
	case collectives.Gather:
		if count > 0 { // nccl-tests makes no call for an empty gather or scatter
			q.Gather(send, recv, count, dt, c.Root, r.comm, r.stream)
		}
	case collectives.Scatter:
		if count > 0 {
			q.Scatter(send, recv, count, dt, c.Root, r.comm, r.stream)
		}
	}
}

// queueHyperCube adds hypercube's log2(n) exchanges (hyperCubeStep), one group per step over every local rank.
func (g *group) queueHyperCube(q *nccl.Calls, c *collectives.Call) {
	for _, mask := range hyperCubeMasks(g.c.nranks) {
		g.queueHyperCubeStep(q, c, mask)
	}
}

// hyperCubeMasks is the step masks of hypercube on n ranks: 1, 2, 4 ... below n (1 alone at one rank).
func hyperCubeMasks(n int) []int {
	masks := []int{1}
	for mask := 2; mask < n; mask <<= 1 {
		masks = append(masks, mask)
	}
	return masks
}

// queueHyperCubeStep adds step mask of hypercube as one group over every local rank.
func (g *group) queueHyperCubeStep(q *nccl.Calls, c *collectives.Call, mask int) {
	q.GroupStart()
	for l, r := range g.ranks {
		if r.global == g.c.hooks.SkipRank {
			continue
		}
		for _, op := range hyperCubeStep(c, l, r.global, g.c.nranks, mask, devicePtr(c.Send[l]), devicePtr(c.Recv[l])) {
			op.queue(q, g.dt, r)
		}
	}
	q.GroupEnd()
}

// callName names the library call of c, for messages.
func (c *comm) callName(call *collectives.Call) string {
	switch call.Coll.Base() {
	case collectives.AllReduce:
		return "ncclAllReduce"
	case collectives.AllReduceBias:
		return "ncclAllReduceWithBias"
	case collectives.Broadcast:
		return "ncclBroadcast"
	case collectives.Reduce:
		return "ncclReduce"
	case collectives.Gather:
		if c.nativeGather {
			return "ncclGather"
		}
		return "ncclSend/ncclRecv"
	case collectives.Scatter:
		if c.nativeScatter {
			return "ncclScatter"
		}
		return "ncclSend/ncclRecv"
	case collectives.SendRecv, collectives.AllToAllV, collectives.HyperCube:
		return "ncclSend/ncclRecv"
	case collectives.AllGather:
		return "ncclAllGather"
	case collectives.ReduceScatter:
		return "ncclReduceScatter"
	case collectives.AllToAll:
		if c.nativeAlltoAll {
			return "ncclAlltoAll"
		}
		return "ncclSend/ncclRecv"
	}
	return call.Coll.Name
}

// dataType maps d, refusing FP8 on devices of compute capability below 9.0 (NCCL's requirement; rccl-tests
// filters the same way).
func (g *group) dataType(d collectives.DType) (nccl.DataType, error) {
	dt, err := nccl.DataTypeOf(d, g.c.lib.Version())
	if err != nil {
		return 0, err
	}
	if d.FP8() {
		for _, r := range g.ranks {
			if !r.fp8 {
				return 0, fmt.Errorf("%s needs a GPU of compute capability 9.0 or later (device %d, %s, is older): %w", d, r.dev,
					r.caps.Arch, collectives.ErrUnsupported)
			}
		}
	}
	return dt, nil
}

// redOps fills g.ops for op: the built-in operation, or each rank's PreMulSum operation with its scalar
// (made once per rank and type).
func (g *group) redOps(op collectives.Op, d collectives.DType, dt nccl.DataType) error {
	if op != collectives.MulSum {
		o, err := nccl.RedOpOf(op, g.c.lib.Version())
		for l := range g.ops {
			g.ops[l] = o
		}
		return err
	}
	for l, r := range g.ranks {
		k := premulKey{l, d}
		o, ok := g.premul[k]
		if !ok {
			var err error
			scalar := nccl.Scalar(d, g.c.fp8, collectives.PreMulScalar(r.global))
			if o, err = g.c.lib.RedOpCreatePreMulSum(scalar, dt, r.comm); err != nil {
				return fp8Refused(d.FP8(), libraryError(err))
			}
			g.premul[k] = o
		}
		g.ops[l] = o
	}
	return nil
}

// Wait polls the streams and the communicators' asynchronous errors until everything launched has finished.
// Past the timeout, or on an asynchronous error, it aborts every communicator of the process.
func (g *group) Wait() error {
	// The timeout counts from the first poll that finds work pending: a wait that finds none reads no clock.
	var start time.Time
	legacy := g.ranks[0].stream == 0 // -y: each device's legacy stream, queried in its context
	if !legacy {
		if err := g.on(0); err != nil {
			return err
		}
	}
	for {
		pending := -1
		for l, r := range g.ranks {
			if legacy {
				if err := g.on(l); err != nil {
					return err
				}
			}
			done, err := r.stream.Query()
			if err != nil {
				return runtimeError(fmt.Errorf("vendor: rank %d after %s: %w", r.global, g.lastCall, err))
			}
			if !done && pending < 0 {
				pending = l
			}
		}
		if pending < 0 {
			return nil
		}
		if start.IsZero() {
			start = time.Now()
		}
		if err := g.c.usable(); err != nil {
			return err
		}
		if err := g.asyncError(); err != nil {
			return g.c.abort(err)
		}
		if g.c.timeout > 0 && time.Since(start) > g.c.timeout {
			return g.c.abort(&collectives.TimeoutError{Rank: g.global[pending], Phase: g.lastCall, After: g.c.timeout,
				Missing: g.c.arrivals.Missing()})
		}
	}
}

// asyncError reports the first communicator of this group in a failed state.
func (g *group) asyncError() error {
	for _, r := range g.ranks {
		if _, err := g.c.ready(r); err != nil {
			return libraryError(fmt.Errorf("vendor: rank %d after %s: %w", r.global, g.lastCall, err))
		}
	}
	return nil
}
