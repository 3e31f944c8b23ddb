package gpuengine

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// Chunks of a reduction cover the segment in order, are whole 16-byte vectors but the last, number at most
// ceMaxChunks, and none is longer than the first; the last of several is cut into halves down to an eighth of
// a chunk. Copies are never chunked.
func TestCEChunks(t *testing.T) {
	for range 1000 {
		size := []int64{1, 2, 4, 8}[rand.IntN(4)]
		slot := rand.Int64N(1 << uint(rand.IntN(32)))
		bytes := int64(rand.IntN(1 << uint(rand.IntN(27))))
		b := ceChunks(slot, size, bytes, true)
		ve, n := vecElems(int(size)), len(b)-1
		if n < 1 || n > ceMaxChunks || b[0] != 0 || b[n] != max(slot, 1) {
			t.Fatalf("slot %d x %d B: bounds %v", slot, size, b)
		}
		for i := 1; i <= n; i++ {
			if b[i] <= b[i-1] || (i < n && b[i]%ve != 0) {
				t.Fatalf("slot %d x %d B: bounds %v", slot, size, b)
			}
		}
		if n > 1 && slot-b[n-1] > b[1] {
			t.Fatalf("slot %d x %d B: last chunk longer than the first: %v", slot, size, b)
		}
		if n := len(ceChunks(slot, size, collectives.DefaultGPUTuning.CEChunk, false)) - 1; n != 1 {
			t.Fatalf("a copy in %d chunks", n)
		}
	}
	// 1 GiB of float reduce_scatter at 2 ranks: 512 MiB pieces in 64 MiB chunks, the last cut to 32, 16, 8, 8.
	const mib = 1 << 18 // floats
	b := ceChunks(512*mib, 4, 64<<20, true)
	var got []int64
	for i := 1; i < len(b); i++ {
		got = append(got, (b[i]-b[i-1])/mib)
	}
	if fmt.Sprint(got) != "[64 64 64 64 64 64 64 32 16 8 8]" {
		t.Errorf("512 MiB in chunks of %v MiB", got)
	}
}

// all_reduce's gather takes the reduction's chunks short first: 1 GiB of float at 2 ranks, 512 MiB segments.
func TestCEGatherChunks(t *testing.T) {
	const mib = 1 << 18 // floats
	b := growing(ceChunks(512*mib, 4, 64<<20, true))
	var got []int64
	for i := 1; i < len(b); i++ {
		got = append(got, (b[i]-b[i-1])/mib)
	}
	if b[0] != 0 || b[len(b)-1] != 512*mib || fmt.Sprint(got) != "[8 8 16 32 64 64 64 64 64 64 64]" {
		t.Errorf("bounds %v: chunks of %v MiB", b, got)
	}
	// With the default 64 MiB chunks, 2 ranks: 512 MiB and more in chunks, 256 MiB whole with stores into the peer;
	// 3 ranks in chunks too.
	for _, c := range []struct {
		n     int
		bytes int64
		far   bool
	}{{2, 512 << 20, false}, {2, 256 << 20, true}, {2, 1 << 30, false}, {3, 768 << 20, false}} {
		pl := makeCEPlan(ceCall(collectives.AllReduce, c.n, 0, c.bytes, false), c.n, collectives.DefaultGPUTuning)
		if pl.storesFar != c.far || (len(pl.gather) > 2) == c.far {
			t.Errorf("%d ranks, %d B: stores far %v, gather %v", c.n, c.bytes, pl.storesFar, pl.gather)
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
