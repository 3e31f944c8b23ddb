package gpuengine

import (
	"encoding/binary"
	"errors"
	"slices"
	"unsafe"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

// vTableBytes is the size of an alltoallv table of n ranks.
func vTableBytes(n int) int64 { return 4 * 8 * int64(n) }

// vTable is a rank's alltoallv table in device memory (kernels/direct.cu's direct_alltoallv: send counts, send
// displacements, receive counts, receive displacements, 4n int64) and the values it holds. A sweep calls with
// the same counts many times, so the table is written only when they change, in the order of the rank's
// stream (kernels queued earlier still read the old values) and never with a context-wide synchronize or free,
// which would wait for kernels of ranks sharing the GPU that wait for launches still to come.
//
// A graph carries its own tables: while a graph is captured, stage is pinned host memory the graph owns, and
// the rank's first alltoallv launch in it copies its table from there (a copy node, run at every replay), so
// replays read the counts they were captured with whatever ran in between. A stream's upload cannot be
// captured: it waits for the stream.
type vTable struct {
	dev    gpurt.DevicePtr
	held   []int64
	stage  unsafe.Pointer // inside a capture: the graph's copy of this table; nil otherwise
	staged bool           // the capture holds a copy node for this table
}

var errTwoTables = errors.New("gpu: one graph holds one alltoallv table per rank (the counts changed within the capture)")

// alltoallvTable returns the address of a table holding k's counts; r's context is current.
func (r *rank) alltoallvTable(k collectives.Counts) (int64, error) {
	want := slices.Concat(k.SendCounts, k.SendDispls, k.RecvCounts, k.RecvDispls)
	t := &r.vtable
	same := t.held != nil && slices.Equal(t.held, want)
	switch {
	case t.stage != nil && t.staged && same:
		return int64(t.dev), nil
	case t.stage != nil && t.staged:
		return 0, errTwoTables
	case t.stage != nil:
		putTable(unsafe.Slice((*byte)(t.stage), 8*len(want)), want)
		if err := gpurt.MemcpyHtoDAsync(t.dev, t.stage, int64(8*len(want)), r.stream); err != nil {
			return 0, err
		}
		t.staged = true
	case same:
		return int64(t.dev), nil
	default:
		b := make([]byte, 8*len(want))
		putTable(b, want)
		if err := gpurt.MemcpyHtoDStream(t.dev, b, r.stream); err != nil {
			return 0, err
		}
	}
	t.held = want
	return int64(t.dev), nil
}

func putTable(b []byte, v []int64) {
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
}

// beginCapture gives the table the graph's host copy stage.
func (t *vTable) beginCapture(stage unsafe.Pointer) { t.stage, t.staged = stage, false }

// endCapture: once captured, what the device table holds depends on when the graph replays, so the next
// launch outside the graph writes it again.
func (t *vTable) endCapture() {
	if t.staged {
		t.held = nil
	}
	t.stage, t.staged = nil, false
}
