package gpuengine

import (
	"fmt"
	"strconv"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// tuning holds the engine's own knobs, read at Open like the policy (cfg.Env overrides the environment):
//
//	RCCLX_TESTS_GPU_RING_BLOCKS  most blocks (ring channels) of a ring kernel (default 64)
//	RCCLX_TESTS_GPU_LP_BLOCKS    most blocks of an LP or direct alltoall kernel (default 128)
//	RCCLX_TESTS_GPU_CE_BYTES     smallest per-rank buffer that goes through the copy-engine transport
//	                             (copyengine.go; default 8M; "off" never)
//	RCCLX_TESTS_GPU_CE_CHUNK     the chunk of a copy-engine reduce_scatter and in-place alltoall (default 16M)
//	RCCLX_TESTS_GPU_LL_BYTES     largest DDA all_reduce that uses the LL kernels (kernels/ll.cu; default 1M,
//	                             within what the LL area holds; 0 never)
//	RCCLX_TESTS_GPU_LAUNCHERS    on (default): a thread of its own launches each local rank after the first
//	                             (launchers.go); off: the harness thread launches every rank
//
// DDA kernels use at most RCCL_DDA_MAX_BLOCKS. Every kernel also stays under the communicator's block cap.
type tuning struct {
	ringBlocks, lpBlocks int
	ceBytes              int64 // -1: never
	ceChunk, llMax       int64
	launchers            bool
}

const (
	defaultCEBytes = 8 << 20
	defaultLLMax   = 1 << 20
)

func readTuning(getenv func(string) string) (tuning, error) {
	t := tuning{ringBlocks: 64, lpBlocks: maxBlocks, ceBytes: defaultCEBytes, ceChunk: ceChunkBytes, llMax: defaultLLMax,
		launchers: true}
	switch s := getenv("RCCLX_TESTS_GPU_LAUNCHERS"); s {
	case "", "on", "1":
	case "off", "0":
		t.launchers = false
	default:
		return tuning{}, fmt.Errorf("RCCLX_TESTS_GPU_LAUNCHERS=%q: want on or off", s)
	}
	for _, v := range []struct {
		name string
		dst  *int64
	}{{"RCCLX_TESTS_GPU_CE_CHUNK", &t.ceChunk}, {"RCCLX_TESTS_GPU_LL_BYTES", &t.llMax}} {
		if s := getenv(v.name); s != "" {
			n, err := collectives.ParseSize(s)
			if err != nil {
				return tuning{}, fmt.Errorf("%s=%q: want a size", v.name, s)
			}
			*v.dst = n
		}
	}
	if s := getenv("RCCLX_TESTS_GPU_CE_BYTES"); s == "off" {
		t.ceBytes = -1
	} else if s != "" {
		n, err := collectives.ParseSize(s)
		if err != nil {
			return tuning{}, fmt.Errorf("RCCLX_TESTS_GPU_CE_BYTES=%q: want a size or off", s)
		}
		t.ceBytes = n
	}
	for _, v := range []struct {
		name string
		dst  *int
	}{{"RCCLX_TESTS_GPU_RING_BLOCKS", &t.ringBlocks}, {"RCCLX_TESTS_GPU_LP_BLOCKS", &t.lpBlocks}} {
		s := getenv(v.name)
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxBlocks {
			return tuning{}, fmt.Errorf("%s=%q: want 1..%d", v.name, s, maxBlocks)
		}
		*v.dst = n
	}
	return t, nil
}
