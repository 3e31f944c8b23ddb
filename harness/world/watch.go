package world

import (
	"slices"
	"sync"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
)

// A multi-process run is lost when another process dies (kill -9, a crash, the OOM killer: its connection to
// rank 0 closes without the goodbye a process says when its run ends) or ends the run on an error of its own
// (World.Abort, a -T timeout there). The others must stop promptly whatever they are doing: a rank in the
// middle of a 1 GiB reduction, the harness writing or checking a 1 GiB buffer, a GPU kernel that would wait
// for the dead process for ever. A Watch waits on the World's Lost channel and, at once:
//
//   - cancels the open communicators (collectives.Canceler): host-engine ranks stop at their next chunk, GPU
//     kernels give up their waits, NCCL communicators are aborted;
//   - makes team.each stop waiting for threads that have not come back within LostGrace, and the harness's
//     own long computations (a size's inputs) be left unfinished;
//
// so the run fails as on any error: one line naming the lost rank and the size (failAt), exit 2 (4 for a
// timeout elsewhere), rank 0's -J record marked incomplete. As a last resort, a process still busy in its
// sweep LostDeadline after the loss (stuck where nothing looks) prints that line itself and exits.

// LostGrace is how long team.each waits for its threads once the run is lost: a cancelled engine returns
// within milliseconds, harness work (checking a buffer) may take seconds and is left behind.
var LostGrace = 200 * time.Millisecond

// LostDeadline is how long after the loss a process still busy in its sweep may take before the watch
// prints the loss itself and exits (the -J record is then not written).
var LostDeadline = 1500 * time.Millisecond

// Watch is the watch of one multi-process run; nil (a run of one process) never fires.
type Watch struct {
	done chan struct{} // closed once the run is lost
	err  error         // why; set before done is closed
	quit chan struct{} // closed when the run ends: the watch stops

	mu    sync.Mutex
	comms []collectives.Comm // open communicators, cancelled once the run is lost
	busy  bool               // a session is running (open to the end of the sweep)
	at    int64              // the size column of the row in progress (-1: none)
}

// NewWatch starts the watch of world, or returns nil where the World cannot tell a loss (one process, the
// tests' worlds). lastResort, when set, reports the loss at the size column at and ends the process; stop the
// watch when the run ends.
func NewWatch(world collectives.World, lastResort func(err error, at int64)) *Watch {
	w, ok := world.(interface {
		Lost() <-chan struct{}
		Err() error
	})
	if !ok || world.Size() == 1 {
		return nil
	}
	l := &Watch{done: make(chan struct{}), quit: make(chan struct{}), at: -1}
	go func() {
		select {
		case <-w.Lost():
		case <-l.quit:
			return
		}
		l.err = w.Err()
		close(l.done)
		l.mu.Lock()
		for _, c := range l.comms {
			if cc, ok := c.(collectives.Canceler); ok {
				cc.Cancel(l.err)
			}
		}
		l.mu.Unlock()
		t := time.NewTimer(LostDeadline)
		defer t.Stop()
		select {
		case <-t.C:
		case <-l.quit:
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock() // held until the process exits: the run's own report cannot start meanwhile
		if l.busy && lastResort != nil {
			lastResort(l.err, l.at)
		}
	}()
	return l
}

// Stop ends the watch (the run is over: a process leaving now is no loss).
func (l *Watch) Stop() {
	if l != nil {
		close(l.quit)
	}
}

// Lost is closed once the run is lost (nil, which never is, without a watch).
func (l *Watch) Lost() <-chan struct{} {
	if l == nil {
		return nil
	}
	return l.done
}

// Err is why the run was lost; nil while it is not.
func (l *Watch) Err() error {
	select {
	case <-l.Lost():
		return l.err
	default:
		return nil
	}
}

// Track adds c to the communicators cancelled once the run is lost (at once, if it is already).
func (l *Watch) Track(c collectives.Comm) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.comms = append(l.comms, c)
	if cc, ok := c.(collectives.Canceler); ok && l.Err() != nil {
		cc.Cancel(l.err)
	}
}

// Untrack removes c before it is closed: no Cancel reaches a closed communicator.
func (l *Watch) Untrack(c collectives.Comm) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.comms = slices.DeleteFunc(l.comms, func(x collectives.Comm) bool { return x == c })
}

// SetBusy says whether a session runs: only then may the last resort end the process.
func (l *Watch) SetBusy(busy bool) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.busy = busy
	if !busy {
		l.at = -1
	}
}

// SetAt records the size column of the row in progress, for the last resort's line.
func (l *Watch) SetAt(size int64) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at = size
}

// OrLost runs fn, a computation of this process alone, and returns its result; once the run is lost it
// returns the loss at once, and once stop is closed (a signal) exit.ErrInterrupted, leaving fn to finish unseen
// (the process is about to exit, or the run to end).
func OrLost[T any](l *Watch, stop <-chan struct{}, fn func() T) (T, error) {
	if l == nil && stop == nil {
		return fn(), nil
	}
	done := make(chan T, 1)
	go func() { done <- fn() }()
	var zero T
	select {
	case v := <-done:
		return v, nil
	case <-l.Lost():
		return zero, l.err
	case <-stop:
		return zero, exit.ErrInterrupted
	}
}
