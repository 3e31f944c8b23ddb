package vendorengine

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
	"github.com/rcclx-tests/rcclx-tests/internal/fakehip"
)

// -F N on HIP, as rccl-tests places it: in the loop, inside each iteration's group, before each rank's call of
// every N-th operation (the first included), the flush kernel on that rank's stream, loaded on its
// device, CUs*60 blocks of 64 threads; none with -F 0 and none outside the loop.
func TestHIPCacheFlush(t *testing.T) {
	t.Setenv("RCCLX_TESTS_KERNEL_CACHE", t.TempDir())
	flushed := "group{ flush@0 allreduce 1 flush@1 allreduce 2 } "
	plain := "group{ allreduce 1 allreduce 2 } "
	for _, c := range []struct {
		every, first, iters, agg int
		want                     string
	}{
		{2, 0, 5, 1, flushed + plain + flushed + plain + flushed},
		{0, 0, 3, 1, strings.Repeat(plain, 3)},
		// Operations are counted across an iteration's aggregated ones: 0 and 3 of 0..5 flush.
		{3, 0, 3, 2, "group{ " + flushed + plain + "} group{ " + plain + flushed + "} group{ " + plain + plain + "} "},
		// A loop launched iteration by iteration (-z 3, -I) counts operations from the first iteration: 3 and 4.
		{2, 3, 2, 1, plain + flushed},
	} {
		t.Run(fmt.Sprintf("F%d-from%d-agg%d", c.every, c.first, c.agg), func(t *testing.T) {
			h := startHIP(t, &fakehip.HIP{Devices: []fakehip.Device{fakehip.MI300X, fakehip.MI300X}})
			cm := openHIP(t, h, collectives.Config{NThreads: 1, NGpus: 2})
			if err := cm.FlushICache(c.every); err != nil {
				t.Fatal(err)
			}
			g := cm.groups[0]
			calls := []*collectives.Call{onesCall(t, g, 16)}
			if err := g.Launch(calls[0]); err != nil { // a call outside a timed loop flushes nothing
				t.Fatal(err)
			}
			rccl.calls = nil
			launched := h.LaunchCount()
			launch, err := g.PrepareLoop(calls, c.first, c.iters, c.agg)
			if err != nil {
				t.Fatal(err)
			}
			if err := launch(); err != nil {
				t.Fatal(err)
			}
			if got := flushSequence(t, h, launched, g); got != c.want {
				t.Errorf("-F %d, %d iterations of %d:\n got %s\nwant %s", c.every, c.iters, c.agg, got, c.want)
			}
		})
	}
}

// flushSequence is the fake RCCL's calls since the loop began, with the kernels launched before each (from the
// launched-th on) as flush@<device of its stream>; it checks each launch is the flush in rccl-tests' shape.
func flushSequence(t *testing.T, h *fakehip.HIP, launched int, g *group) string {
	t.Helper()
	var b strings.Builder
	next := launched
	emit := func(upTo int) {
		for ; next < upTo; next++ {
			l := h.Launches[next]
			want := [3]uint32{uint32(fakehip.MI300X.CUs) * 60, 1, 1}
			if l.Kernel != "rcclx_icache_flush" || l.Grid != want || l.Block != [3]uint32{64, 1, 1} ||
				l.ModuleDevice != l.StreamDevice || l.StreamDevice < 0 || l.Stream != uintptr(g.ranks[l.StreamDevice].stream) {
				t.Errorf("launch %+v: want rcclx_icache_flush, grid %v, block 64, on its rank's stream and device", l, want)
			}
			fmt.Fprintf(&b, "flush@%d ", l.StreamDevice)
		}
	}
	for _, c := range rccl.calls {
		emit(c.launched)
		b.WriteString(c.name + " ")
	}
	emit(h.LaunchCount())
	return b.String()
}

// Where the runtime has no flush (CUDA), FlushICache says so, and the engine flushes nothing.
func TestCacheFlushCUDA(t *testing.T) {
	c := &comm{ranks: []*rank{{caps: gpurt.Caps{Runtime: gpurt.CUDA}}}}
	err := c.FlushICache(2)
	if !errors.Is(err, gpurt.ErrNoICacheFlush) || !strings.Contains(err.Error(), "CUDA") || c.flushEvery != 0 {
		t.Errorf("FlushICache on CUDA: %v (flushEvery %d)", err, c.flushEvery)
	}
}
