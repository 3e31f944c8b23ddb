package gpuengine

import (
	"encoding/binary"
	"slices"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/cuda"
)

// vTableBytes is the size of an alltoallv table of n ranks.
func vTableBytes(n int) int64 { return 4 * 8 * int64(n) }

// vTable is a rank's alltoallv table in device memory (kernels/direct.cu's direct_alltoallv: send counts, send
// displacements, receive counts, receive displacements, 4n int64) and the values it holds. A sweep calls with
// the same counts many times, so the table is written only when they change, in the order of the rank's
// stream (kernels queued earlier still read the old values) and never with a context-wide synchronize or free,
// which would wait for kernels of ranks sharing the GPU that wait for launches still to come. A graph
// captures the table's address, which stays valid.
type vTable struct {
	dev  cuda.DevicePtr
	held []int64
}

// alltoallvTable returns the address of a table holding k's counts; r's context is current.
func (r *rank) alltoallvTable(k collectives.Counts) (int64, error) {
	want := slices.Concat(k.SendCounts, k.SendDispls, k.RecvCounts, k.RecvDispls)
	t := &r.vtable
	if t.held != nil && slices.Equal(t.held, want) {
		return int64(t.dev), nil
	}
	b := make([]byte, 8*len(want))
	for i, v := range want {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
	}
	if err := cuda.MemcpyHtoDStream(t.dev, b, r.stream); err != nil {
		return 0, err
	}
	t.held = want
	return int64(t.dev), nil
}
