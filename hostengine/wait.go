package hostengine

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

const (
	// spinLoads is how many times a wait re-reads a flag before it starts yielding the processor: ranks
	// outnumber cores, so the rank that will set the flag usually needs this one's core.
	spinLoads = 64
	// yieldsBeforePark bounds the yields before a wait parks its goroutine. A few yields keep both of Go's
	// processors busy, so a barrier often completes without waking a sleeping OS thread (DDA's small calls
	// stayed at ~7 us; parking at once cost ~10). Endless yield loops made small calls take 10-300x their
	// median on a shared box, we think because they keep the global run queue full: a processor that never
	// runs dry never steals the ranks queued behind a thread the OS has descheduled
	// (0, 4 and 16 yields were measured).
	yieldsBeforePark = 4
	// firstNap and lastNap bound the sleeps of a wait across processes: it sleeps on its doorbell, which every
	// publish to it rings, at most a nap at a time, then looks for failures outside (which ring no bell); a long
	// wait costs a wake-up per lastNap instead of a core, and a failure is seen within lastNap.
	firstNap = 100 * time.Microsecond
	lastNap  = 10 * time.Millisecond
)

// parker is where one rank's goroutine sleeps while it waits for a flag that peers set. Only that goroutine
// parks on it; every writer of a flag wakes the ranks parked on that flag (publish).
type parker struct {
	waitingOn atomic.Pointer[atomic.Uint64] // the flag the rank sleeps on, nil when it runs
	wake      chan struct{}                 // capacity 1: a wake-up sent before the sleep starts is kept
	timer     *time.Timer                   // the -T deadline while asleep; used by the owner only
	_         [40]byte                      // a cache line of its own
}

func newParkers(n int) []parker {
	ps := make([]parker, n)
	for i := range ps {
		ps[i].wake = make(chan struct{}, 1)
	}
	return ps
}

// sleep blocks until a wake-up arrives or the deadline (zero: none) passes.
func (p *parker) sleep(deadline time.Time) {
	if deadline.IsZero() {
		<-p.wake
		return
	}
	if p.timer == nil {
		p.timer = time.NewTimer(time.Until(deadline))
	} else {
		p.timer.Reset(time.Until(deadline))
	}
	select {
	case <-p.wake:
	case <-p.timer.C:
	}
	p.timer.Stop()
}

// wake ends rank's sleep if it sleeps (or is about to) on flag; a nil flag means on any flag. Waking only the
// ranks that wait for this very flag matters at a barrier: a rank waiting for its last peer would otherwise
// be woken by every earlier arrival.
func (c *comm) wake(rank int, flag *atomic.Uint64) {
	if c.sh != nil { // any flag: ring the rank's doorbell, in whichever process it runs
		rk := c.ranks[rank]
		rk.bell.Add(1)
		if rk.sleepers.Load() != 0 {
			futexWake(rk.bell)
		}
		return
	}
	p := &c.parkers[rank]
	if on := p.waitingOn.Load(); on != nil && (flag == nil || on == flag) {
		select {
		case p.wake <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}

// wakeAll wakes every rank parked on flag (nil: on any flag).
func (c *comm) wakeAll(flag *atomic.Uint64) {
	for r := range c.parkers {
		c.wake(r, flag)
	}
}

// publish stores v into flag (release) and wakes readers, the ranks that may be waiting for it.
func (c *comm) publish(flag *atomic.Uint64, v uint64, readers ...int) {
	flag.Store(v)
	for _, r := range readers {
		c.wake(r, flag)
	}
}

// waiter is the waiting side of one rank's call: whom to name on timeout and when to give up.
type waiter struct {
	c        *comm
	rank     int
	deadline time.Time // zero: wait forever
}

// phase names what a rank waits for: a format with up to two integer verbs, formatted only when a wait times
// out (the hot path allocates nothing).
type phase struct {
	format string
	args   [2]int
	nargs  int
}

func newPhase(format string, args ...int) phase {
	p := phase{format: format, nargs: len(args)}
	copy(p.args[:], args)
	return p
}

func (p phase) String() string {
	a := make([]any, p.nargs)
	for i := range a {
		a[i] = p.args[i]
	}
	return fmt.Sprintf(p.format, a...)
}

// waitAtLeast returns once flag >= target (an atomic load: acquire), or with the communicator's error once it
// is aborted, or with a *collectives.TimeoutError, aborting the communicator, once the deadline has passed.
func (w *waiter) waitAtLeast(flag *atomic.Uint64, target uint64, p phase) error {
	if err := w.c.err(); err != nil { // once per chunk of work: a cancelled call stops here
		return err
	}
	for i := range spinLoads + yieldsBeforePark {
		if flag.Load() >= target {
			return nil
		}
		if i >= spinLoads {
			runtime.Gosched()
		}
	}
	if w.c.sh != nil {
		return w.poll(flag, target, p)
	}
	return w.park(flag, target, p)
}

// poll is waitAtLeast after the spin and the yields when ranks live in several processes: it sleeps on the
// rank's doorbell, at most a nap at a time (longer each time up to lastNap), and looks each time at the flag,
// the deadline, this communicator's error, and failures from outside (an abort another process posted, a
// process that died). A publisher stores the flag, rings the bell, then looks at sleepers; the rank counts
// itself a sleeper, looks at the flag again and sleeps only while the bell still holds the value it read
// before: so either it sees the flag, or the futex sees the bell move, or the publisher sees the sleeper.
func (w *waiter) poll(flag *atomic.Uint64, target uint64, p phase) error {
	me := w.c.ranks[w.rank]
	nap := firstNap
	for {
		bell := me.bell.Load()
		if flag.Load() >= target {
			return nil
		}
		if err := w.c.err(); err != nil {
			return err
		}
		if err := w.c.sh.failure(); err != nil {
			w.c.stop(err, false)
			return w.c.err()
		}
		if !w.deadline.IsZero() && !time.Now().Before(w.deadline) {
			w.c.abort(&collectives.TimeoutError{Rank: w.rank, Phase: p.String(), After: w.c.timeout,
				Missing: w.c.arrivals.Missing()})
			return w.c.err()
		}
		d := nap
		if !w.deadline.IsZero() {
			d = min(d, time.Until(w.deadline))
		}
		me.sleepers.Add(1)
		if flag.Load() < target {
			futexWait(me.bell, bell, d)
		}
		me.sleepers.Add(^uint32(0))
		nap = min(2*nap, lastNap)
	}
}

// park is waitAtLeast after the spin and the yields. The rank records the flag it parks on before every look
// at the flag, and a publisher stores before it looks at the record; Go's atomics are sequentially consistent,
// so either the rank sees the new value or the publisher sees the record and wakes it. abort, likewise, sets
// its flag before it wakes every parked rank.
func (w *waiter) park(flag *atomic.Uint64, target uint64, p phase) error {
	me := &w.c.parkers[w.rank]
	me.waitingOn.Store(flag)
	defer me.waitingOn.Store(nil)
	for flag.Load() < target {
		if err := w.c.err(); err != nil {
			return err
		}
		if !w.deadline.IsZero() && !time.Now().Before(w.deadline) {
			w.c.abort(&collectives.TimeoutError{Rank: w.rank, Phase: p.String(), After: w.c.timeout,
				Missing: w.c.arrivals.Missing()})
			return w.c.err()
		}
		me.sleep(w.deadline)
	}
	return nil
}
