package memkind

import (
	"strings"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/cuda"
)

// TestKindsAndNotes: host and managed get their allocations, the rest device memory; every -Y value gets its
// own header line naming it, the default none.
func TestKindsAndNotes(t *testing.T) {
	for _, c := range []struct {
		k    collectives.MemoryKind
		want cuda.MemKind
		note string
	}{
		{collectives.MemoryDefault, cuda.MemDevice, ""},
		{collectives.MemoryCoarse, cuda.MemDevice, "-Y coarse means nothing on this GPU"},
		{collectives.MemoryFine, cuda.MemDevice, "-Y fine means nothing on this GPU"},
		{collectives.MemoryHost, cuda.MemHostMapped, "pinned host memory mapped for the device (-Y host)"},
		{collectives.MemoryManaged, cuda.MemManaged, "managed memory (-Y managed)"},
	} {
		n := Note(c.k)
		if Of(c.k) != c.want || (c.note == "") != (n == "") || !strings.Contains(n, c.note) || strings.Contains(n, "\n") {
			t.Errorf("kind %d: %v %q", c.k, Of(c.k), n)
		}
	}
}
