package gpuengine

import (
	"testing"

	"github.com/rcclx-tests/rcclx-tests/gpurt"
	"github.com/rcclx-tests/rcclx-tests/internal/fakehip"
)

// Marks stay valid until the series is read, however many there are (-I, kernel timing: -n 5000 takes 5001
// marks before the harness reads one); the series after a read reuses the events instead of making more.
func TestMarksLiveUntilRead(t *testing.T) {
	startFakeHIP(t, &fakehip.HIP{Devices: []fakehip.Device{fakehip.MI300X}})
	g := open(t, New(), 1, nil, 0).(*comm).groups[0]
	series := func() map[gpurt.Event]bool {
		seen := map[gpurt.Event]bool{}
		var first, last any
		for i := range 5001 {
			m, err := g.Mark()
			must(t, err)
			ev := m.(mark)[0]
			if seen[ev] {
				t.Fatalf("mark %d reuses the event of an earlier mark of its series", i)
			}
			seen[ev] = true
			if i == 0 {
				first = m
			}
			last = m
		}
		if _, err := g.Elapsed(first, last); err != nil {
			t.Fatal(err)
		}
		return seen
	}
	one, two := series(), series()
	for ev := range two {
		if !one[ev] {
			t.Fatal("the second series made events instead of reusing the first's")
		}
	}
}
