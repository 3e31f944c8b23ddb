package bench

import "testing"

// TestIterGate: threads that ask for iterations at different paces stop at the same iteration once
// interrupted: the furthest one's.
func TestIterGate(t *testing.T) {
	stop := false
	g := newIterGate(func() bool { return stop })
	for it := range 3 {
		if !g.next(it) { // thread A runs ahead to iteration 2
			t.Fatal("refused before the interrupt")
		}
	}
	g.next(0) // thread B is at iteration 0
	stop = true
	for it := 1; it < 3; it++ {
		if !g.next(it) {
			t.Errorf("thread B refused iteration %d, which thread A started", it)
		}
	}
	for range 2 { // thread A, then thread B
		if g.next(3) {
			t.Error("iteration 3 granted after the interrupt")
		}
	}
	var nilGate *iterGate
	if !nilGate.next(5) {
		t.Error("a nil gate refused")
	}
}
