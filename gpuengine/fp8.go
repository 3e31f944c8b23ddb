package gpuengine

import (
	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

// FP8Flavour is the flavour the kernels compute the FP8 types in (collectives.FP8Reporter): FNUZ on gfx942,
// whose modules get RX_FP8_FNUZ, OCP elsewhere; the first rank's device's, for the data of the whole process.
func (c *comm) FP8Flavour() collectives.FP8Flavour {
	if len(c.ranks) > 0 && c.ranks[0].caps.FP8 == gpurt.FP8FNUZ {
		return collectives.FP8FNUZ
	}
	return collectives.FP8OCP
}
