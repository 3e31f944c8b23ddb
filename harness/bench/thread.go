package bench

import (
	"fmt"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/internal/roctx"
)

// thread is what one harness thread owns: its group and its ranks' buffers. Every method runs on the thread's
// own goroutine (see team).
type thread struct {
	coll   *collectives.Collective
	group  collectives.Group
	ranks  []int // global ranks, in local order
	nranks int
	opts   *plan.Options
	send   []collectives.Buffer
	recv   []collectives.Buffer
	// bufBytes is the usable length of every buffer: the largest view at -e plus the -u shift.
	bufBytes int64
	scratch  [][]byte      // host copies of received data for validation
	index    int           // the thread's number (-t)
	proc     int           // the process's rank among its communicator's processes
	graph    int           // -G as it applies to the engine
	kt       *ktThread     // RCCL_TESTS_KERNEL_TIMING; nil when off
	ranges   *roctx.Ranges // RCCL_TESTS_ROCTX; nil when off
}

// alloc allocates each rank's send and receive buffer of bufBytes; on failure, what it got stays in t.send and
// t.recv for session.close to free.
func (t *thread) alloc() error {
	for l, r := range t.ranks {
		s, err := t.group.Alloc(l, t.bufBytes)
		if err != nil {
			return fmt.Errorf("rank %d: allocating %d bytes: %w", r, t.bufBytes, err)
		}
		t.send = append(t.send, s)
		d, err := t.group.Alloc(l, t.bufBytes)
		if err != nil {
			return fmt.Errorf("rank %d: allocating %d bytes: %w", r, t.bufBytes, err)
		}
		t.recv = append(t.recv, d)
	}
	return nil
}

// touch writes every buffer once, so that memory an engine maps lazily (host pages) is in place before the
// first timed iteration rather than faulted in by it.
func (t *thread) touch(pattern []byte, stop <-chan struct{}) error {
	for l := range t.ranks {
		for _, b := range []collectives.Buffer{t.send[l], t.recv[l]} {
			if err := t.write(collectives.View{Buf: b}, pattern[:t.bufBytes], stop); err != nil {
				return err
			}
		}
	}
	return nil
}

// writePiece is how much of a buffer write goes at once between two looks at a signal: tens of milliseconds
// of copying.
const writePiece = 64 << 20

// write copies data into v, a piece at a time; once stop is closed (a signal) it returns exit.ErrInterrupted,
// leaving the rest unwritten.
func (t *thread) write(v collectives.View, data []byte, stop <-chan struct{}) error {
	for lo := 0; lo < len(data) || lo == 0; lo += writePiece {
		if stopped(stop) {
			return exit.ErrInterrupted
		}
		hi := min(lo+writePiece, len(data))
		if err := t.group.Write(collectives.View{Buf: v.Buf, Off: v.Off + int64(lo)}, data[lo:hi]); err != nil {
			return err
		}
		if hi == len(data) {
			return nil
		}
	}
	return nil
}

// stopped reports whether stop is closed (a nil channel never is).
func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// free releases every buffer; it reports the first error but frees them all.
func (t *thread) free() error {
	var first error
	for _, b := range append(t.send, t.recv...) {
		if err := t.group.Free(b); err != nil && first == nil {
			first = err
		}
	}
	t.send, t.recv = nil, nil
	return first
}

// warmUp runs -w out-of-place operations of p and waits for them (see session.warmUp).
func (t *thread) warmUp(p plan.Point) error {
	if err := t.launchIters(t.timedCalls(p, false, t.opts.Warmup), 0, t.opts.Warmup, 1); err != nil {
		return err
	}
	return t.group.Wait()
}

// counts are local rank l's counts for p.
func (t *thread) counts(p plan.Point, l int) collectives.Counts {
	return t.coll.Counts(p.Size, t.nranks, t.ranks[l], p.DType)
}

// call builds the call of p on every local rank with views shifted by shift bytes (plus -u elements). In place,
// both views point into the receive buffer at the collective's in-place offsets.
func (t *thread) call(p plan.Point, inPlace bool, shift int64) *collectives.Call {
	g := len(t.ranks)
	c := &collectives.Call{Coll: t.coll, DType: p.DType, Op: p.Op, Root: p.Root,
		Counts: make([]collectives.Counts, g), Send: make([]collectives.View, g), Recv: make([]collectives.View, g)}
	es := int64(p.DType.Size())
	base := shift + int64(t.opts.Unalign)*es
	for l := range t.ranks {
		k := t.counts(p, l)
		c.Counts[l] = k
		var send, recv collectives.Buffer // nil before alloc: the header's Algorithm reads counts and offsets
		if l < len(t.send) && l < len(t.recv) {
			send, recv = t.send[l], t.recv[l]
		}
		if inPlace {
			c.Send[l] = collectives.View{Buf: recv, Off: base + k.SendInPlace*es}
			c.Recv[l] = collectives.View{Buf: recv, Off: base + k.RecvInPlace*es}
		} else {
			c.Send[l] = collectives.View{Buf: send, Off: base}
			c.Recv[l] = collectives.View{Buf: recv, Off: base}
		}
	}
	return c
}

// rotation is how many distinct buffer offsets the timed iterations cycle through: like nccl-tests, successive
// iterations move along the buffer so small sizes do not run from cache. Steps are 64-byte multiples so the
// alignment an algorithm sees (and so the algorithm) is the same in every iteration.
const maxRotation = 64

func (t *thread) timedCalls(p plan.Point, inPlace bool, iterations int) []*collectives.Call {
	if t.opts.RCCL.RotatingTensor == 1 {
		// rccl-tests' rotating tensor: even iterations at the buffer's start, odd ones plan.RotatingBytes further.
		return []*collectives.Call{t.call(p, inPlace, 0), t.call(p, inPlace, plan.RotatingBytes)}
	}
	es := int64(p.DType.Size())
	k := t.counts(p, 0)
	span := max(k.Send, k.Recv) * es
	stride := (span + 63) &^ 63
	steps := int64(1)
	if stride > 0 {
		steps = max(1, (t.bufBytes-int64(t.opts.Unalign)*es-span)/stride+1)
	}
	n := min(steps, int64(max(iterations, 1)), maxRotation)
	calls := make([]*collectives.Call, n)
	for i := range calls {
		calls[i] = t.call(p, inPlace, int64(i)*stride)
	}
	return calls
}
