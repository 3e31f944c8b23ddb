package gpuengine

import (
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// A launcher runs every posted job once, in order, on one OS thread, reports each job's own error, wakes up
// after parking, and ends its thread on close.
func TestLauncherRunsEachPostOnce(t *testing.T) {
	var setupThread, jobs atomic.Int64
	var got []string
	fail := errors.New("planted")
	failAt := rand.IntN(50)
	w := startLauncher(func() error { setupThread.Store(threadID()); return nil },
		func(j job) error {
			jobs.Add(1)
			if threadID() != setupThread.Load() {
				return errors.New("job ran on another thread than setup")
			}
			got = append(got, j.algo)
			if len(got) == failAt+1 {
				return fail
			}
			return nil
		})
	defer w.close()
	for i := range 50 {
		algo := string(rune('A' + i%26))
		w.post(job{call: &collectives.Call{}, algo: algo})
		err := w.wait()
		if i == failAt && !errors.Is(err, fail) {
			t.Errorf("job %d: error %v, want the planted one", i, err)
		}
		if i != failAt && err != nil {
			t.Errorf("job %d: %v", i, err)
		}
		if got[len(got)-1] != algo {
			t.Fatalf("job %d ran %q", i, got[len(got)-1])
		}
		if i%10 == 9 {
			time.Sleep(2 * launcherSpin) // parked: the next post must wake it
		}
	}
	if n := jobs.Load(); n != 50 {
		t.Errorf("%d jobs ran, want 50", n)
	}
}

// Wake reaches every parked launcher without running a job, and leaves nothing pending.
func TestWakeRunsNoJob(t *testing.T) {
	var jobs atomic.Int64
	g := &group{launchers: []*launcher{nil}}
	for range 3 {
		g.launchers = append(g.launchers, startLauncher(func() error { return nil },
			func(job) error { jobs.Add(1); return nil }))
	}
	defer g.stopLaunchers()
	time.Sleep(2 * launcherSpin) // parked
	g.Wake()
	for l, w := range g.launchers[1:] {
		if w.done.Load() != w.posted.Load() || w.posted.Load() != 1 {
			t.Errorf("launcher %d: %d posted, %d done after Wake", l+1, w.posted.Load(), w.done.Load())
		}
	}
	if n := jobs.Load(); n != 0 {
		t.Errorf("Wake ran %d jobs", n)
	}
}

// A failed setup (the rank's context) fails every job without running it.
func TestLauncherSetupFailure(t *testing.T) {
	bad := errors.New("no context")
	ran := false
	w := startLauncher(func() error { return bad }, func(job) error { ran = true; return nil })
	w.post(job{call: &collectives.Call{}, algo: "x"})
	if err := w.wait(); !errors.Is(err, bad) || ran {
		t.Errorf("error %v, job ran %v", err, ran)
	}
	w.close()
	select {
	case <-w.exited:
	default:
		t.Error("close returned before the launcher ended")
	}
}

func threadID() int64 { return int64(syscall.Gettid()) }
