package bench

import "testing"

// TestAverageModes: -a picks rank 0's time, the mean, the minimum or the maximum.
func TestAverageModes(t *testing.T) {
	var a agg
	for _, v := range []float64{3, 1, 8} {
		a.add(v)
	}
	var b agg
	b.add(4)
	a.merge(b)
	for mode, want := range map[int]float64{0: 3, 1: 4, 2: 1, 3: 8} {
		if got := a.pick(mode); got != want {
			t.Errorf("pick(%d) = %v, want %v", mode, got, want)
		}
	}
}
