package hostengine

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"rcclx-tests/collectives"
)

const (
	// spinLoads is how many times a wait re-reads a flag before it starts yielding the processor: ranks
	// outnumber cores, so the rank that will set the flag usually needs this one's core.
	spinLoads = 64
	// yieldsPerClockCheck is how often (in yields) a wait reads the clock for the -T deadline.
	yieldsPerClockCheck = 16
)

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
	for i := 0; ; i++ {
		if flag.Load() >= target {
			return nil
		}
		if i < spinLoads {
			continue
		}
		if err := w.c.err(); err != nil {
			return err
		}
		if !w.deadline.IsZero() && i%yieldsPerClockCheck == 0 && time.Now().After(w.deadline) {
			w.c.abort(&collectives.TimeoutError{Rank: w.rank, Phase: p.String(), After: w.c.timeout})
			return w.c.err()
		}
		runtime.Gosched()
	}
}
