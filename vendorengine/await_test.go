package vendorengine

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/nccl"
)

// busyFor is a fake communicator state: in progress for its first n polls, then done.
type busyFor struct{ n, polls int }

func (b *busyFor) ready() (bool, error) {
	b.polls++
	return b.polls > b.n, nil
}

func TestSettleWaitsUntilEveryOneIsDone(t *testing.T) {
	fakes := []*busyFor{{n: 3}, {n: 0}, {n: 40}}
	at, err := settle(len(fakes), func(i int) (bool, error) { return fakes[i].ready() }, time.Minute)
	if at != -1 || err != nil {
		t.Fatalf("settle = %d, %v; want -1, nil", at, err)
	}
	for i, f := range fakes {
		if f.polls != f.n+1 { // polled until done, never after
			t.Errorf("fake %d polled %d times, want %d", i, f.polls, f.n+1)
		}
	}
}

func TestSettleTimesOutOnTheOneStillBusy(t *testing.T) {
	fakes := []*busyFor{{n: 0}, {n: 1 << 30}, {n: 1 << 30}}
	start := time.Now()
	late := 0 // polls after the spinning phase
	at, err := settle(len(fakes), func(i int) (bool, error) {
		if time.Since(start) > 2*spinFor {
			late++
		}
		return fakes[i].ready()
	}, 50*time.Millisecond)
	if el := time.Since(start); el < 50*time.Millisecond || el > time.Second {
		t.Errorf("gave up after %v, want just past 50ms", el)
	}
	if at != 1 || !errors.Is(err, errStillInProgress) {
		t.Errorf("settle = %d, %v; want 1, errStillInProgress", at, err)
	}
	if limit := 4 * int(50*time.Millisecond/pollSleep); late > limit {
		t.Errorf("%d polls after the first %v, want at most %d: the wait does not sleep", late, 2*spinFor, limit)
	}
}

func TestSettleStopsAtTheFirstFailure(t *testing.T) {
	boom := errors.New("boom")
	polls := 0
	at, err := settle(3, func(i int) (bool, error) {
		polls++
		if i == 2 && polls > 5 {
			return false, boom
		}
		return i == 0, nil
	}, 0)
	if at != 2 || err != boom {
		t.Errorf("settle = %d, %v; want 2, boom", at, err)
	}
}

func fakeRanks(globals ...int) []*rank {
	var rs []*rank
	for _, g := range globals {
		rs = append(rs, &rank{global: g})
	}
	return rs
}

func TestAwaitTimeoutAbortsAndNamesRankAndPhase(t *testing.T) {
	c := &comm{timeout: 30 * time.Millisecond}
	ranks := fakeRanks(4, 5, 6)
	err := c.await(ranks, "ncclCommInitRank", func(r *rank) (bool, error) { return r.global == 4, nil })
	var te *collectives.TimeoutError
	if !errors.As(err, &te) || te.Rank != 5 || te.Phase != "ncclCommInitRank" || te.After != c.timeout {
		t.Fatalf("await = %v, want a timeout of rank 5 in ncclCommInitRank after 30ms", err)
	}
	if c.usable() != err {
		t.Errorf("after the timeout usable() = %v, want the timeout (communicators aborted)", c.usable())
	}
	// A later wait, on any thread, reports the first cause at once.
	start := time.Now()
	if err2 := c.await(ranks, "ncclAllReduce", func(*rank) (bool, error) { return false, c.usable() }); err2 != err ||
		time.Since(start) > 10*time.Millisecond {
		t.Errorf("await after abort = %v after %v, want the first timeout at once", err2, time.Since(start))
	}
}

func TestAwaitFailureIsALibraryErrorNamingRank(t *testing.T) {
	c := &comm{}
	remote := &nccl.Error{Call: "ncclCommGetAsyncError", Code: nccl.RemoteError, Msg: "remote process exited"}
	err := c.await(fakeRanks(0, 1), "ncclAllReduce", func(r *rank) (bool, error) {
		if r.global == 1 {
			return false, remote
		}
		return true, nil
	})
	var le *collectives.LibraryError
	var ne *nccl.Error
	if !errors.As(err, &le) || !errors.As(err, &ne) || ne.Code != nccl.RemoteError ||
		!strings.Contains(err.Error(), "rank 1 in ncclAllReduce") {
		t.Fatalf("await = %v, want a *LibraryError naming rank 1 and ncclAllReduce", err)
	}
	if c.usable() != err {
		t.Error("a failed communicator does not abort the others")
	}
}

func TestFinishPassesResultsThatNeedNoWait(t *testing.T) {
	c := &comm{}
	if err := c.finish(nil, "ncclGroupEnd", nil); err != nil {
		t.Errorf("finish(nil) = %v", err)
	}
	bad := &nccl.Error{Call: "ncclGroupEnd", Code: nccl.InvalidUsage}
	var le *collectives.LibraryError
	if err := c.finish(nil, "ncclGroupEnd", bad); !errors.As(err, &le) || !errors.Is(err, bad) {
		t.Errorf("finish(invalid usage) = %v, want it as a *LibraryError", err)
	}
	if c.usable() != nil {
		t.Error("a call that failed at once aborted the communicators")
	}
}
