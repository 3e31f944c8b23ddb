package gpuengine

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// Wait blocks until every local rank's stream is idle. With a timeout, when it passes, the host sets the abort
// flag every kernel wait polls, waits for the kernels to give up, and returns a *collectives.TimeoutError
// naming the first local rank that gave up and its phase; the communicator is unusable afterwards.
//
// The polling never sleeps, as nccl-tests' and the vendor engine's waits do not: a timed loop ends when Wait
// returns, and a sleep wakes late (time.Sleep by up to a millisecond on Linux when no other thread runs),
// which the loop's time would include.
func (g *group) Wait() error {
	if g.c.timeout <= 0 {
		for _, r := range g.ranks {
			if err := r.ctx.SetCurrent(); err != nil {
				return runtimeError(r, err)
			}
			if err := r.stream.Synchronize(); err != nil {
				return runtimeError(r, err)
			}
		}
		return g.c.usable()
	}
	deadline := time.Now().Add(g.c.timeout)
	for {
		idle, err := g.idleAll()
		if err != nil || idle {
			if err == nil {
				err = g.c.usable()
			}
			return err
		}
		if time.Now().After(deadline) {
			return g.timedOut()
		}
		runtime.Gosched()
	}
}

func (g *group) idleAll() (bool, error) {
	for _, r := range g.ranks {
		if err := r.ctx.SetCurrent(); err != nil {
			return false, runtimeError(r, err)
		}
		done, err := r.stream.Query()
		if err != nil {
			return false, runtimeError(r, err)
		}
		if !done {
			return false, nil
		}
	}
	return true, nil
}

// timedOut aborts the communicator, waits for this group's kernels to return and names who was stuck where.
func (g *group) timedOut() error {
	cause := &collectives.TimeoutError{Rank: g.ranks[0].global, Phase: g.ranks[0].lastCall(), After: g.c.timeout,
		Missing: g.c.arrivals.Missing()}
	_ = g.c.abort(cause) // raises the flag every kernel wait polls; cause is returned below
	found := false
	for _, r := range g.ranks {
		// Best effort: the kernels give up once they see the flag, and the cause is the error to report.
		_ = r.ctx.SetCurrent()
		_ = r.stream.Synchronize()
		if w := atomic.LoadUint32(g.c.phaseWord(r.local)); w != 0 && !found {
			found = true
			cause.Rank, cause.Phase = r.global, r.lastCall()+" "+phaseName(w)
		}
	}
	return g.c.abort(cause)
}

// phaseName names a phase code of kernels/comm.cuh (kind << 16 | step).
func phaseName(w uint32) string {
	kind, step := w>>16, w&0xffff
	switch kind {
	case 1:
		return fmt.Sprintf("barrier %d", step)
	case 2:
		return fmt.Sprintf("ring step %d receive", step)
	case 3:
		return fmt.Sprintf("ring step %d send", step)
	case 4:
		return fmt.Sprintf("LL receive from rank %d", step)
	}
	return fmt.Sprintf("phase %#x", w)
}
