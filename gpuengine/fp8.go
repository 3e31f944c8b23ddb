package gpuengine

import (
	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// FP8Flavour is the flavour the kernels compute the FP8 types in (collectives.FP8Reporter): FNUZ on gfx942,
// whose modules get RX_FP8_FNUZ, OCP elsewhere; every device of the process has the same (open refuses a mix).
func (c *comm) FP8Flavour() collectives.FP8Flavour { return c.fp8 }
