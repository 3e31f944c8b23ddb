package memkind

import (
	"strings"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

// TestKindsAndNotes: host and managed get their allocations, the rest device memory; every -Y value gets its
// own header line naming it, the default none.
func TestKindsAndNotes(t *testing.T) {
	for _, c := range []struct {
		k    collectives.MemoryKind
		want gpurt.MemKind
		note string
	}{
		{collectives.MemoryDefault, gpurt.MemDevice, ""},
		{collectives.MemoryCoarse, gpurt.MemDevice, "-Y coarse means nothing on this GPU"},
		{collectives.MemoryFine, gpurt.MemDevice, "-Y fine means nothing on this GPU"},
		{collectives.MemoryHost, gpurt.MemHostMapped, "pinned host memory mapped for the device (-Y host)"},
		{collectives.MemoryManaged, gpurt.MemManaged, "managed memory (-Y managed)"},
	} {
		n := Note(c.k)
		if Of(c.k) != c.want || (c.note == "") != (n == "") || !strings.Contains(n, c.note) || strings.Contains(n, "\n") {
			t.Errorf("kind %d: %v %q", c.k, Of(c.k), n)
		}
	}
}
