package memkind

import (
	"strings"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

// TestKindsAndNotes: fine, host and managed get their allocations, the rest device memory; every -Y value gets
// its own header line naming it, the default none. On HIP coarse and fine are real kinds; elsewhere they say
// they mean nothing, and never name HIP's calls.
func TestKindsAndNotes(t *testing.T) {
	for _, c := range []struct {
		k         collectives.MemoryKind
		want      gpurt.MemKind
		note, hip string
	}{
		{collectives.MemoryDefault, gpurt.MemDevice, "", ""},
		{collectives.MemoryCoarse, gpurt.MemDevice, "-Y coarse means nothing on this GPU", "coarse-grained device memory (-Y coarse, hipMalloc)"},
		{collectives.MemoryFine, gpurt.MemFine, "-Y fine means nothing on this GPU", "fine-grained device memory (-Y fine, hipExtMallocWithFlags"},
		{collectives.MemoryHost, gpurt.MemHostMapped, "pinned host memory mapped for the device (-Y host)", "(-Y host)"},
		{collectives.MemoryManaged, gpurt.MemManaged, "managed memory (-Y managed)", "(-Y managed)"},
	} {
		for rt, want := range map[gpurt.Runtime]string{gpurt.CUDA: c.note, gpurt.HIP: c.hip} {
			n := note(c.k, rt)
			if Of(c.k) != c.want || (want == "") != (n == "") || !strings.Contains(n, want) || strings.Contains(n, "\n") ||
				rt == gpurt.CUDA && strings.Contains(n, "hip") {
				t.Errorf("kind %d on %s: %v %q", c.k, rt.Title(), Of(c.k), n)
			}
		}
	}
}
