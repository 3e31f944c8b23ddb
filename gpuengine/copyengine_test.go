package gpuengine

import (
	"math/rand/v2"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// Chunks of a reduction cover the segment, are whole 16-byte vectors but the last, and number at most
// ceMaxChunks; copies are never chunked.
func TestCEChunks(t *testing.T) {
	for range 1000 {
		size := []int64{1, 2, 4, 8}[rand.IntN(4)]
		slot := rand.Int64N(1 << uint(rand.IntN(32)))
		chunk, chunks := ceChunks(slot, size, int64(rand.IntN(64<<20)), true)
		ve := vecElems(int(size))
		if chunks < 1 || chunks > ceMaxChunks || (slot > 0 && chunk%ve != 0) || int64(chunks)*chunk < slot ||
			(slot > 0 && int64(chunks-1)*chunk >= slot) {
			t.Fatalf("slot %d x %d B: %d chunks of %d", slot, size, chunks, chunk)
		}
		if _, n := ceChunks(slot, size, collectives.DefaultGPUTuning.CEChunk, false); n != 1 {
			t.Fatalf("a copy in %d chunks", n)
		}
	}
}

// all_reduce's segments are hostengine's: ceil(count/n) rounded up to 16 bytes.
func TestRingSegment(t *testing.T) {
	for _, c := range []struct {
		count   int64
		n, size int
		want    int64
	}{{10, 3, 4, 4}, {12, 3, 4, 4}, {13, 3, 4, 8}, {1, 8, 2, 8}, {0, 2, 4, 0}, {1 << 20, 2, 4, 1 << 19}} {
		if got := ringSegment(c.count, c.n, c.size); got != c.want {
			t.Errorf("ringSegment(%d, %d, %d) = %d, want %d", c.count, c.n, c.size, got, c.want)
		}
	}
}
