package gpuengine

import (
	"fmt"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// CanRun refuses all_reduce_bias, a library call (RCCL's ncclAllReduceWithBias) this engine has no kernel for.
func (c *comm) CanRun(coll *collectives.Collective) error {
	if coll.HasBias() {
		return fmt.Errorf("engine gpu has no all_reduce_bias (RCCL's ncclAllReduceWithBias): %w", collectives.ErrUnsupported)
	}
	return nil
}
