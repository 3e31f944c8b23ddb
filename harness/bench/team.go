package bench

import (
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/world"
)

// abandonAfter bounds how long the harness waits for the other threads once one thread has failed: an engine
// whose peers never launch may not return from Wait, and the process is about to exit anyway.
var abandonAfter = 5 * time.Second

// errStuck reports threads that did not return after another thread failed.
var errStuck = errors.New("other threads did not finish after the failure")

// team is the harness threads of one process (-t): one goroutine per thread, locked to its OS thread for the
// whole run because engines keep per-thread device state, plus a barrier across threads and processes.
type team struct {
	jobs   []chan func()
	bar    *barrier
	broken bool // a thread never came back: its group must not be used again
	// stopNow, once closed, makes each return exit.ErrInterrupted without waiting for its threads (a run stopped
	// by a signal while a thread is stuck in the engine); nil while buffers are set up and freed.
	stopNow <-chan struct{}
	// lost, once the run is lost (another process died), makes each return the loss after world.LostGrace without
	// waiting for threads that are still busy (nil: one process).
	lost *world.Watch
}

func newTeam(threads int, world collectives.World) *team {
	t := &team{bar: newBarrier(threads, world)}
	for range threads {
		jobs := make(chan func())
		t.jobs = append(t.jobs, jobs)
		go func() {
			runtime.LockOSThread()
			for job := range jobs {
				job()
			}
		}()
	}
	return t
}

// each runs fn(thread) on every thread at once and waits for all. A failing thread aborts the barrier so the
// others cannot wait for it forever; the error returned is the most telling one (see severity). When every
// thread reports ErrUnsupported the barrier stays usable: nothing was launched.
func (t *team) each(fn func(thread int) error) error {
	if t.broken {
		return errStuck
	}
	type result struct {
		thread int
		err    error
	}
	done := make(chan result, len(t.jobs))
	for i, jobs := range t.jobs {
		jobs <- func() {
			err := fn(i)
			if err != nil && !errors.Is(err, collectives.ErrUnsupported) {
				t.bar.abort()
			}
			done <- result{i, err}
		}
	}
	errs := make([]error, len(t.jobs))
	var timer, grace <-chan time.Time
	lost := t.lost.Lost()
	for got := 0; got < len(t.jobs); {
		select {
		case r := <-done:
			got++
			errs[r.thread] = r.err
			if r.err != nil && timer == nil {
				timer = time.After(abandonAfter)
			}
		case <-timer:
			t.broken = true
			return worst(errs)
		case <-t.stopNow:
			t.broken = true
			return exit.ErrInterrupted
		case <-lost:
			lost, grace = nil, time.After(world.LostGrace)
		case <-grace:
			t.broken = true
			return t.lost.Err()
		}
	}
	return worst(errs)
}

// worst picks the error to report: a timeout names the stuck rank, a device or library error comes next, and
// an aborted barrier only echoes another thread's failure.
func worst(errs []error) error {
	var best error
	for _, err := range errs {
		if err != nil && (best == nil || severity(err) > severity(best)) {
			best = err
		}
	}
	return best
}

func severity(err error) int {
	var te *collectives.TimeoutError
	var re *collectives.RuntimeError
	var le *collectives.LibraryError
	switch {
	case errors.As(err, &te):
		return 4
	case errors.As(err, &re), errors.As(err, &le):
		return 3
	case errors.Is(err, errAborted):
		return 1
	}
	return 2
}

// close ends the thread goroutines (a broken team leaves its stuck goroutines to the exiting process).
func (t *team) close() {
	for _, jobs := range t.jobs {
		close(jobs)
	}
}

// errAborted is what threads waiting at an aborted barrier return.
var errAborted = errors.New("aborted by another thread")

// barrier is a reusable barrier over the threads of this process; the last thread to arrive also meets the
// other processes (World.Barrier) before anyone leaves, as nccl-tests' Barrier does.
type barrier struct {
	mu      sync.Mutex
	cond    *sync.Cond
	n       int
	arrived int
	gen     uint64
	err     error
	world   collectives.World
}

func newBarrier(n int, world collectives.World) *barrier {
	b := &barrier{n: n, world: world}
	b.cond = sync.NewCond(&b.mu)
	return b
}

func (b *barrier) wait() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return b.err
	}
	gen := b.gen
	b.arrived++
	if b.arrived == b.n {
		if b.world.Size() > 1 {
			b.mu.Unlock()
			err := b.world.Barrier()
			b.mu.Lock()
			if err != nil {
				b.err = err
			}
		}
		b.arrived = 0
		b.gen++
		b.cond.Broadcast()
		return b.err
	}
	for gen == b.gen && b.err == nil {
		b.cond.Wait()
	}
	return b.err
}

// abort releases every waiter, now and later, with errAborted (the failing thread reports the cause).
func (b *barrier) abort() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.err = errAborted
	b.cond.Broadcast()
}
