package hostengine

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// TestBarrierOrdersPlainMemory has every rank write a plain variable, pass the barrier, and read every peer's
// variable: each must hold the current epoch's value, and under -race the detector checks that the barrier's
// atomics order those plain accesses. A second barrier per epoch keeps the next write after every read.
func TestBarrierOrdersPlainMemory(t *testing.T) {
	const n, blocks = 8, 3
	epochs := uint64(400)
	if testing.Short() {
		epochs = 100
	}
	c := &comm{nranks: n, parkers: newParkers(n)}
	b := newBarrier(n, blocks)
	shared := make([][]uint64, blocks)
	for i := range shared {
		shared[i] = make([]uint64, n)
	}
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			w := &waiter{c: c, rank: r}
			for e := uint64(1); e <= epochs; e++ {
				for blk := range blocks {
					shared[blk][r] = e
					if err := b.wait(w, r, blk, 2*e-1, newPhase("write")); err != nil {
						t.Error(err)
						return
					}
					for p, v := range shared[blk] {
						if v != e {
							t.Errorf("epoch %d block %d: rank %d sees rank %d's value %d", e, blk, r, p, v)
						}
					}
					if err := b.wait(w, r, blk, 2*e, newPhase("read")); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

// TestBarrierTimeout leaves rank 3 out: the others time out, naming themselves and the barrier, and abort.
func TestBarrierTimeout(t *testing.T) {
	const n = 4
	timeout := 100 * time.Millisecond
	c := &comm{nranks: n, timeout: timeout, parkers: newParkers(n)}
	b := newBarrier(n, 1)
	errs := make([]error, n-1)
	start := time.Now()
	var wg sync.WaitGroup
	for r := range n - 1 {
		wg.Go(func() {
			w := &waiter{c: c, rank: r, deadline: time.Now().Add(timeout)}
			errs[r] = b.wait(w, r, 0, 1, newPhase("dda_flat barrier %d", 1))
		})
	}
	wg.Wait()
	if el := time.Since(start); el > timeout+time.Second {
		t.Errorf("waited %v", el)
	}
	for r, err := range errs {
		var te *collectives.TimeoutError
		if !errors.As(err, &te) || te.Rank == 3 || te.Phase != "dda_flat barrier 1" || te.After != timeout {
			t.Errorf("rank %d: %v (%#v)", r, err, te)
		}
	}
	if !c.aborted.Load() {
		t.Error("communicator not aborted")
	}
}

// TestAbortWakesParkedRanks leaves rank 3 out with no deadline: the others must park, and abort must wake
// them with its error.
func TestAbortWakesParkedRanks(t *testing.T) {
	const n = 4
	c := &comm{nranks: n, parkers: newParkers(n)}
	b := newBarrier(n, 1)
	errs := make(chan error, n-1)
	for r := range n - 1 {
		go func() { errs <- b.wait(&waiter{c: c, rank: r}, r, 0, 1, newPhase("barrier")) }()
	}
	for r := range n - 1 {
		for start := time.Now(); c.parkers[r].waitingOn.Load() == nil; time.Sleep(time.Millisecond) {
			if time.Since(start) > 5*time.Second {
				t.Fatalf("rank %d never parked", r)
			}
		}
	}
	stop := errors.New("stop")
	c.abort(stop)
	for range n - 1 {
		select {
		case err := <-errs:
			if err != stop {
				t.Errorf("wait returned %v, want %v", err, stop)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a parked rank did not wake on abort")
		}
	}
}
