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

// In-place alltoall has a scratch slot of one piece per peer and goes through the transport only when every
// rank's send and receive views coincide; out of place it needs none.
func TestCEAlltoallInPlaceScratch(t *testing.T) {
	const n, p = 3, 1001
	bufs := []*buffer{{ptr: 1 << 20, n: 4 * n * p}, {ptr: 2 << 20, n: 4 * n * p}, {ptr: 3 << 20, n: 4 * n * p}}
	k := collectives.AllToAll.Counts(4*n*p, n, 0, collectives.Float)
	call := func(inPlace bool, recvOff int64) *collectives.Call {
		c := &collectives.Call{Coll: collectives.AllToAll, DType: collectives.Float}
		for l, b := range bufs {
			c.Counts = append(c.Counts, k)
			c.Send = append(c.Send, collectives.View{Buf: b})
			recv := collectives.View{Buf: bufs[(l+1)%n], Off: recvOff}
			if inPlace {
				recv.Buf = b
			}
			c.Recv = append(c.Recv, recv)
		}
		return c
	}
	if slot, ok := ceScratchElems(call(true, 0), n); !ok || slot != k.Param || !sameViews(call(true, 0)) {
		t.Errorf("in place: slot %d, %v, same views %v; want %d elements per peer", slot, ok, sameViews(call(true, 0)), k.Param)
	}
	if slot, ok := ceScratchElems(call(false, 0), n); !ok || slot != 0 {
		t.Errorf("out of place: slot %d, %v; want none", slot, ok)
	}
	if sameViews(call(true, 64)) || sameViews(call(false, 0)) {
		t.Error("views at different addresses reported the same")
	}
}
