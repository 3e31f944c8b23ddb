package vendorengine

import (
	"errors"
	"fmt"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/nccl"
)

// Non-blocking communicators (made when the library has ncclCommInitRankConfig and -T is set): init, group
// end and collective calls may return ncclInProgress while the library goes on in its own threads (the
// bootstrap with peers, the lazy connection setup of a first collective, the launch). Each such call is
// followed by polling ncclCommGetAsyncError on the communicators involved, so that -T bounds a wait inside the
// library too: past it every communicator is aborted, which also stops the library's threads.

// Polls spin at first (a launch's host work ends within microseconds), then sleep between rounds so that a
// long init does not hold a core.
const (
	spinFor   = time.Millisecond
	pollSleep = 100 * time.Microsecond
)

var errStillInProgress = errors.New("still in progress")

// settle calls ready(i) for every i in [0, n) until each has reported done. It returns -1 and nil then; the
// index and error of the first failure; or, once timeout (> 0) has passed, the index of one still not done
// and errStillInProgress. timeout 0 waits for ever.
func settle(n int, ready func(i int) (bool, error), timeout time.Duration) (int, error) {
	start := time.Now()
	done := make([]bool, n)
	for {
		pending := -1
		for i := range n {
			if done[i] {
				continue
			}
			ok, err := ready(i)
			if err != nil {
				return i, err
			}
			if done[i] = ok; !ok && pending < 0 {
				pending = i
			}
		}
		if pending < 0 {
			return -1, nil
		}
		elapsed := time.Since(start)
		if timeout > 0 && elapsed > timeout {
			return pending, errStillInProgress
		}
		if elapsed > spinFor {
			time.Sleep(pollSleep)
		}
	}
}

// finish completes a library call on the communicators of ranks: err is what the call returned; a failure
// becomes a *LibraryError; ncclInProgress waits until the communicators are ready (nil), failed, or past the
// timeout (every communicator aborted, a *TimeoutError naming a rank still busy and phase, the library call).
func (c *comm) finish(ranks []*rank, phase string, err error) error {
	if err == nil {
		return nil
	}
	if !nccl.IsInProgress(err) {
		return libraryError(fmt.Errorf("vendor: %w", err))
	}
	return c.await(ranks, phase, c.ready)
}

// await is finish's wait, with the readiness check as a parameter (the library's, or a test's).
func (c *comm) await(ranks []*rank, phase string, ready func(*rank) (bool, error)) error {
	at, err := settle(len(ranks), func(i int) (bool, error) { return ready(ranks[i]) }, c.timeout)
	if err == nil {
		return nil
	}
	if cause := c.usable(); cause != nil {
		return cause // another thread aborted everything
	}
	if errors.Is(err, errStillInProgress) {
		return c.abort(&collectives.TimeoutError{Rank: ranks[at].global, Phase: phase, After: c.timeout,
			Missing: c.arrivals.Missing()})
	}
	return c.abort(libraryError(fmt.Errorf("vendor: rank %d in %s: %w", ranks[at].global, phase, err)))
}

// ready reports whether r's communicator finished its last call: false while it is in progress, an error when
// it failed or the communicators were aborted (under the abort lock: an aborted communicator is freed memory).
func (c *comm) ready(r *rank) (bool, error) {
	c.abortMu.Lock()
	defer c.abortMu.Unlock()
	if c.abortErr != nil {
		return false, c.abortErr
	}
	state, err := c.lib.CommGetAsyncError(r.comm)
	switch {
	case err != nil:
		return false, err
	case state == nccl.Success:
		return true, nil
	case state == nccl.InProgress:
		return false, nil
	}
	return false, c.lib.Check("ncclCommGetAsyncError", state)
}
