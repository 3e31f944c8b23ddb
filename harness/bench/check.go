package bench

import (
	"runtime"
	"sync"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/harness/world"
)

// poisonByte fills receive buffers before a validation run, so an engine that writes nothing is caught.
const poisonByte = 0xA5

// truth is the validation data of one point, computed once and shared by both halves, every -c repetition and
// every thread: each local rank's input, and the expected outputs (memoized per rank and tolerance).
type truth struct {
	coll   *collectives.Collective
	p      plan.Point
	nranks int
	seed   uint64
	inputs map[int][]byte // by global rank

	mu      sync.Mutex
	expects map[expectKey]*expectOnce
}

type expectKey struct {
	rank int // -1 when every rank expects the same data
	lp   bool
}

type expectOnce struct {
	once sync.Once
	e    *collectives.Expectation
}

// newTruth generates the inputs of ranks for p.
func newTruth(coll *collectives.Collective, p plan.Point, nranks int, ranks []int, seed uint64) *truth {
	tr := &truth{coll: coll, p: p, nranks: nranks, seed: seed, inputs: map[int][]byte{},
		expects: map[expectKey]*expectOnce{}}
	for _, r := range ranks {
		k := coll.Counts(p.Size, nranks, r, p.DType)
		tr.inputs[r] = coll.Input(p.DType, p.Op, r, nranks, k, seed)
	}
	return tr
}

// checkable reports whether a half can be validated: every half, except in-place forms nccl-tests leaves
// unchecked (sendrecv, alltoallv) and those the engine's library does not define (NCCL's alltoall).
func (s *Session) checkable(inPlace bool) bool {
	if !inPlace {
		return true
	}
	l, ok := s.threads[0].group.(collectives.InPlaceLimiter)
	return s.Coll.InPlaceChecked() && (!ok || !l.NoInPlace(s.Coll))
}

// expect returns rank's expectation, computing it on first use; lp selects the low-precision tolerance.
func (tr *truth) expect(rank int, lp bool) *collectives.Expectation {
	key := expectKey{rank, lp}
	if tr.coll.SameOnEveryRank() {
		key.rank = -1
	}
	tr.mu.Lock()
	eo := tr.expects[key]
	if eo == nil {
		eo = &expectOnce{}
		tr.expects[key] = eo
	}
	tr.mu.Unlock()
	eo.once.Do(func() {
		k := tr.coll.Counts(tr.p.Size, tr.nranks, rank, tr.p.DType)
		tol := tr.coll.Tolerance(tr.p.DType, tr.p.Op, tr.nranks, lp)
		eo.e = tr.coll.Expect(tr.p.DType, tr.p.Op, rank, tr.p.Root, tr.nranks, k, tr.seed, tol)
	})
	return eo.e
}

// check runs one validation of a half on this thread, once every process has written its inputs (writeInputs
// poisons the receive buffers first): launch once, wait, read every rank's output back and compare it with the
// truth. Reading is serial (one thread owns the group) and comparing overlaps it on other cores.
func (t *thread) check(tr *truth, c *collectives.Call) (summary, error) {
	kept, err := t.untouched(tr, c)
	if err != nil {
		return summary{}, err
	}
	if err := t.group.Launch(c); err != nil {
		return summary{}, err
	}
	if err := t.group.Wait(); err != nil {
		return summary{}, err
	}
	var v summary
	for _, k := range kept {
		after := make([]byte, len(k.before))
		if err := t.group.Read(after, k.view); err != nil {
			return summary{}, err
		}
		v.merge(summary{Errors: collectives.Unchanged(c.DType, k.before, after)})
	}
	lp := t.group.Algorithm(c) == collectives.LowPrecision
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		bufs = make(chan []byte, len(t.scratch))
	)
	for _, b := range t.scratch {
		bufs <- b
	}
	defer wg.Wait()
	for l, r := range t.ranks {
		e := tr.expect(r, lp)
		buf := (<-bufs)[:len(e.Want())] // the part of the receive view the call defines
		if err := t.group.Read(buf, c.Recv[l]); err != nil {
			return summary{}, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs := e.Compare(buf)
			mu.Lock()
			v.merge(summary{Errors: errs})
			mu.Unlock()
			bufs <- buf[:cap(buf)]
		}()
	}
	wg.Wait()
	return v, nil
}

// keptPart is a part of a receive view that a call must leave as it was, and what it held before.
type keptPart struct {
	view   collectives.View
	before []byte
}

// untouched reads, before the call, the parts of the receive views past what the call defines
// (collectives.Checked), which it must leave as they are: all of the view on the ranks other than the root of
// reduce and gather, the tail past a rank's own total in alltoallv's matrix mode (nccl-tests checks both).
func (t *thread) untouched(tr *truth, c *collectives.Call) ([]keptPart, error) {
	var kept []keptPart
	es := int64(c.DType.Size())
	for l, r := range t.ranks {
		k := c.Counts[l]
		from := tr.coll.Checked(r, tr.p.Root, tr.nranks, k)
		if from >= k.Recv {
			continue
		}
		p := keptPart{view: collectives.View{Buf: c.Recv[l].Buf, Off: c.Recv[l].Off + from*es}, before: make([]byte, (k.Recv-from)*es)}
		if err := t.group.Read(p.before, p.view); err != nil {
			return nil, err
		}
		kept = append(kept, p)
	}
	return kept, nil
}

// writeInputs fills the receive views with poison (when given) and then the send views with the inputs, and
// returns the call over those views.
func (t *thread) writeInputs(tr *truth, inPlace bool, poison []byte, stop <-chan struct{}) (*collectives.Call, error) {
	c := t.call(tr.p, inPlace, 0)
	es := int64(tr.p.DType.Size())
	for l, r := range t.ranks {
		if poison != nil {
			if err := t.write(c.Recv[l], poison[:c.Counts[l].Recv*es], stop); err != nil {
				return nil, err
			}
		}
		if err := t.write(c.Send[l], tr.inputs[r], stop); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// poisonBuffer returns n bytes of the poison pattern, or stops with the loss once the run is lost (world.Watch).
// It writes a MiB at a time and yields after each: one copy of 1 GiB into fresh memory faults its pages in for
// seconds without a point where the scheduler can stop it, and a garbage collection that starts meanwhile then
// holds up every goroutine of the process, the one that notices a lost process too.
func poisonBuffer(n int64, lost *world.Watch, stop <-chan struct{}) ([]byte, error) {
	b := make([]byte, n)
	first := b[:min(n, poisonPiece)]
	for i := range first {
		first[i] = poisonByte
	}
	for lo := int64(len(first)); lo < n; lo += poisonPiece {
		if err := lost.Err(); err != nil {
			return nil, err
		}
		if stopped(stop) {
			return nil, exit.ErrInterrupted
		}
		copy(b[lo:min(lo+poisonPiece, n)], first)
		runtime.Gosched()
	}
	return b, nil
}

const poisonPiece = 1 << 20
