package gpuengine

import (
	"fmt"
	"strconv"
)

// tuning holds the engine's own knobs, read at Open like the policy (cfg.Env overrides the environment):
//
//	RCCLX_TESTS_GPU_RING_BLOCKS  most blocks (ring channels) of a ring kernel (default 64)
//	RCCLX_TESTS_GPU_LP_BLOCKS    most blocks of an LP or direct alltoall kernel (default 128)
//
// DDA kernels use at most RCCL_DDA_MAX_BLOCKS. Every kernel also stays under the communicator's block cap.
type tuning struct {
	ringBlocks, lpBlocks int
}

func readTuning(getenv func(string) string) (tuning, error) {
	t := tuning{ringBlocks: 64, lpBlocks: maxBlocks}
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
