package bench

import "testing"

// A process keeps ktKeep records at most; the rest count as dropped (an endless run stays bounded).
func TestKernelTimingKeepsABoundedFile(t *testing.T) {
	defer func(k int) { ktKeep = k }(ktKeep)
	ktKeep = 5
	f := &ktFile{}
	f.keep(make([]ktRow, 3))
	f.keep(make([]ktRow, 3))
	f.keep(make([]ktRow, 2))
	if len(f.rows) != 5 || f.lost != 3 {
		t.Errorf("%d rows kept, %d lost; want 5 and 3", len(f.rows), f.lost)
	}
}
