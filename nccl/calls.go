package nccl

import (
	"github.com/rcclx-tests/rcclx-tests/gpurt"
	"github.com/rcclx-tests/rcclx-tests/internal/ccall"
)

// Calls is a list of library calls made in one crossing from Go into the library (see ccall): a timed loop
// made as one Calls costs the host what the same loop costs in C. Add calls with the methods named after the
// C functions, then Run, on one OS thread (NCCL's group state is per thread). The pointers and handles given
// are device memory, communicators and streams: nothing in Go memory.
type Calls struct {
	lib     *Library
	batch   ccall.Batch
	funcs   []*cfunc // each call's function, for its error
	missing *cfunc   // the first function added that the library does not export
}

// NewCalls returns an empty list of calls into l.
func (l *Library) NewCalls() *Calls { return &Calls{lib: l} }

func (q *Calls) add(f *cfunc, args ...uintptr) *Calls {
	if f.addr == 0 {
		if q.missing == nil {
			q.missing = f
		}
		return q
	}
	q.batch.Add(f.addr, args...)
	q.funcs = append(q.funcs, f)
	return q
}

// Len is the number of calls added since the last Reset.
func (q *Calls) Len() int { return len(q.funcs) }

// Reset empties the list, keeping its memory.
func (q *Calls) Reset() {
	q.batch.Reset()
	q.funcs, q.missing = q.funcs[:0], nil
}

// Run makes the calls in order. A call answering ncclInProgress (non-blocking communicators) does not stop
// the rest. At the first call that fails, Run stops, ends the groups the calls had left open (the group
// depth is the thread's, and would swallow later calls) and returns that call's *Error (a Foreign call's
// error as its fail makes it). Otherwise it returns
// an error for which IsInProgress holds if some call answered so, else nil. A list naming a function the
// library does not export makes no call and returns an error wrapping collectives.ErrUnsupported.
func (q *Calls) Run() error {
	if q.missing != nil {
		return q.lib.unsupported(q.missing)
	}
	var pending error
	for from := 0; ; {
		at, ret := q.batch.Run(from)
		if at == q.batch.Len() {
			return pending
		}
		f, r := q.funcs[at], Result(int32(ret))
		var err error
		if f.fail != nil {
			err = f.fail(int(r))
		} else {
			err = q.lib.check(f.name(), r)
		}
		if f.fail != nil || r != InProgress {
			for range q.openGroups(at) {
				ccall.Call(q.lib.groupEnd.addr)
			}
			return err
		}
		pending, from = err, at+1
	}
}

// openGroups counts the groups left open when the at-th call failed: a failed ncclGroupEnd still closes its
// group, a failed ncclGroupStart opened none.
func (q *Calls) openGroups(at int) int {
	open := 0
	for i, f := range q.funcs[:at+1] {
		switch {
		case f == &q.lib.groupStart && i < at:
			open++
		case f == &q.lib.groupEnd:
			open--
		}
	}
	return open
}

// Foreign is a C function outside the library that a list of calls may make between the library's (a kernel
// launch); fail turns a non-zero status it returns into Run's error.
type Foreign struct{ f cfunc }

// NewForeign names the function at addr.
func NewForeign(name string, addr uintptr, fail func(status int) error) *Foreign {
	return &Foreign{cfunc{names: []string{name}, addr: addr, fail: fail}}
}

// Call adds a call of f with args.
func (q *Calls) Call(f *Foreign, args ...uintptr) *Calls { return q.add(&f.f, args...) }

// GroupStart and GroupEnd are ncclGroupStart and ncclGroupEnd.
func (q *Calls) GroupStart() *Calls { return q.add(&q.lib.groupStart) }
func (q *Calls) GroupEnd() *Calls   { return q.add(&q.lib.groupEnd) }

// AllReduce is ncclAllReduce.
func (q *Calls) AllReduce(send, recv gpurt.DevicePtr, count int64, dt DataType, op RedOp, c Comm, s gpurt.Stream) *Calls {
	return q.add(&q.lib.allReduce, uintptr(send), uintptr(recv), uintptr(count), uintptr(dt), uintptr(op), uintptr(c), uintptr(s))
}

// AllGather is ncclAllGather; count is each rank's send count.
func (q *Calls) AllGather(send, recv gpurt.DevicePtr, count int64, dt DataType, c Comm, s gpurt.Stream) *Calls {
	return q.add(&q.lib.allGather, uintptr(send), uintptr(recv), uintptr(count), uintptr(dt), uintptr(c), uintptr(s))
}

// ReduceScatter is ncclReduceScatter; count is each rank's receive count.
func (q *Calls) ReduceScatter(send, recv gpurt.DevicePtr, count int64, dt DataType, op RedOp, c Comm, s gpurt.Stream) *Calls {
	return q.add(&q.lib.reduceScatter, uintptr(send), uintptr(recv), uintptr(count), uintptr(dt), uintptr(op), uintptr(c), uintptr(s))
}

// AlltoAll is ncclAlltoAll (RCCL: ncclAllToAll); count is per peer. Libraries without it make Run report
// collectives.ErrUnsupported: use grouped Send/Recv.
func (q *Calls) AlltoAll(send, recv gpurt.DevicePtr, count int64, dt DataType, c Comm, s gpurt.Stream) *Calls {
	return q.add(&q.lib.alltoAll, uintptr(send), uintptr(recv), uintptr(count), uintptr(dt), uintptr(c), uintptr(s))
}

// Broadcast is ncclBroadcast.
func (q *Calls) Broadcast(send, recv gpurt.DevicePtr, count int64, dt DataType, root int, c Comm, s gpurt.Stream) *Calls {
	return q.add(&q.lib.broadcast, uintptr(send), uintptr(recv), uintptr(count), uintptr(dt), uintptr(root), uintptr(c), uintptr(s))
}

// Reduce is ncclReduce.
func (q *Calls) Reduce(send, recv gpurt.DevicePtr, count int64, dt DataType, op RedOp, root int, c Comm, s gpurt.Stream) *Calls {
	return q.add(&q.lib.reduce, uintptr(send), uintptr(recv), uintptr(count), uintptr(dt), uintptr(op), uintptr(root), uintptr(c), uintptr(s))
}

// Gather is ncclGather (NCCL 2.28+): count is each rank's send count; the root receives them in rank order.
// Libraries without it make Run report collectives.ErrUnsupported: use grouped Send/Recv.
func (q *Calls) Gather(send, recv gpurt.DevicePtr, count int64, dt DataType, root int, c Comm, s gpurt.Stream) *Calls {
	return q.add(&q.lib.gather, uintptr(send), uintptr(recv), uintptr(count), uintptr(dt), uintptr(root), uintptr(c), uintptr(s))
}

// Scatter is ncclScatter (NCCL 2.28+): count is each rank's receive count. Libraries without it make Run
// report collectives.ErrUnsupported: use grouped Send/Recv.
func (q *Calls) Scatter(send, recv gpurt.DevicePtr, count int64, dt DataType, root int, c Comm, s gpurt.Stream) *Calls {
	return q.add(&q.lib.scatter, uintptr(send), uintptr(recv), uintptr(count), uintptr(dt), uintptr(root), uintptr(c), uintptr(s))
}

// AllReduceWithBias is RCCL's ncclAllReduceWithBias: an all-reduce whose result is combined (op) with bias,
// count elements of device memory on each rank. Other libraries make Run report collectives.ErrUnsupported.
func (q *Calls) AllReduceWithBias(send, recv gpurt.DevicePtr, count int64, dt DataType, op RedOp, c Comm, s gpurt.Stream, bias gpurt.DevicePtr) *Calls {
	return q.add(&q.lib.allReduceWithBias, uintptr(send), uintptr(recv), uintptr(count), uintptr(dt), uintptr(op), uintptr(c), uintptr(s), uintptr(bias))
}

// Send and Recv are ncclSend and ncclRecv (point to point; group them).
func (q *Calls) Send(send gpurt.DevicePtr, count int64, dt DataType, peer int, c Comm, s gpurt.Stream) *Calls {
	return q.add(&q.lib.send, uintptr(send), uintptr(count), uintptr(dt), uintptr(peer), uintptr(c), uintptr(s))
}

func (q *Calls) Recv(recv gpurt.DevicePtr, count int64, dt DataType, peer int, c Comm, s gpurt.Stream) *Calls {
	return q.add(&q.lib.recv, uintptr(recv), uintptr(count), uintptr(dt), uintptr(peer), uintptr(c), uintptr(s))
}
