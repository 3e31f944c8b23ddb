package gpuengine

import (
	"fmt"

	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

// LL128Variable turns the LL128 protocol on (1) or off (0) where the GPU runtime's default differs: off on HIP,
// whose line visibility over xGMI no AMD machine of ours has checked.
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

// gatesOf is what a rank with caps goes without; c.ll128 is RCCLX_TESTS_GPU_LL128.
func (c *comm) gatesOf(caps gpurt.Caps) gates {
	ll128 := caps.LL128
	if c.ll128 != nil {
		ll128 = *c.ll128
	}
	return gates{Early: !caps.EarlyLaunch, Bulk: !caps.BulkCopy, LL128: !ll128, CopyEngine: !caps.CopyEngine}
}

// setGates records what the communicator goes without; without early launches no plan keeps blocks for them.
func (c *comm) setGates(off gates) {
	c.gatedOff = off
	if off.Early {
		c.earlyCap = 0
	}
}

// onOff reads a variable that is 1, 0 or unset (nil).
func onOff(getenv func(string) string, name string) (*bool, error) {
	switch v := getenv(name); v {
	case "":
		return nil, nil
	case "0", "1":
		on := v == "1"
		return &on, nil
	default:
		return nil, fmt.Errorf("%s=%q: want 1 or 0", name, v)
	}
}
