package gpuengine

import (
	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

// LL128Variable is the tuning's LL128 switch (collectives.GPUTuning).
const LL128Variable = "RCCLX_TESTS_GPU_LL128"

// gates are the features that some rank of the communicator must go without, by its GPU's capabilities
// (gpurt.Caps), never by a compute-capability number (AMD's gfx942 reports 9.4). Every rank computes the same,
// as the plans must be the same everywhere: the processes exchange them with their rank info.
type gates struct {
	Early      bool // no programmatic dependent launch
	Bulk       bool // no bulk copies
	LL128      bool // no LL128
	CopyEngine bool // no copy-engine transport by default
}

func (g gates) or(h gates) gates {
	return gates{g.Early || h.Early, g.Bulk || h.Bulk, g.LL128 || h.LL128, g.CopyEngine || h.CopyEngine}
}

// gatesOf is what a rank with caps goes without, LL128 as the tuning says where it says.
func (c *comm) gatesOf(caps gpurt.Caps) gates {
	ll128 := caps.LL128 && c.tuning.LL128 >= 0 || c.tuning.LL128 > 0
	return gates{Early: !caps.EarlyLaunch, Bulk: !caps.BulkCopy, LL128: !ll128, CopyEngine: !caps.CopyEngine}
}

// setGates records what the communicator goes without; without early launches no plan keeps blocks for them.
func (c *comm) setGates(off gates) {
	c.gatedOff = off
	if off.Early {
		c.earlyCap = 0
	}
}
