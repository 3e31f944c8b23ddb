package bench

import (
	"sync"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/bootstrap"
)

// TestBarrier: many generations over several threads, and an abort releases every waiter.
func TestBarrier(t *testing.T) {
	const threads, rounds = 4, 200
	b := newBarrier(threads, bootstrap.Single())
	var counter [rounds]int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				mu.Lock()
				counter[r]++
				mu.Unlock()
				if err := b.wait(); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if counter[r] != threads {
					t.Errorf("round %d: left the barrier with %d arrivals", r, counter[r])
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	done := make(chan error)
	go func() { done <- b.wait() }()
	b.abort()
	if err := <-done; err != errAborted {
		t.Errorf("after abort: %v", err)
	}
}
