package gpuengine

import (
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/internal/fakehip"
)

// The engine tells the harness the FP8 flavour its kernels compute in: FNUZ on an MI300X (gfx942), OCP on an
// MI250X (gfx90a), so that FP8 data is generated and checked in the kernels' own flavour.
func TestFakeHIPFP8Flavour(t *testing.T) {
	mi250 := fakehip.Device{Name: "AMD Instinct MI250X", Arch: "gfx90a:sramecc+:xnack-", CUs: 110, WarpSize: 64,
		CC: [2]int{9, 0}, Mem: 64 << 30}
	flavours := map[fakehip.Device]collectives.FP8Flavour{fakehip.MI300X: collectives.FP8FNUZ, mi250: collectives.FP8OCP}
	for dev, want := range flavours {
		t.Run(dev.Arch, func(t *testing.T) {
			startFakeHIP(t, &fakehip.HIP{Devices: []fakehip.Device{dev}})
			if got := collectives.FP8FlavourOf(open(t, New(), 1, nil, 0)); got != want {
				t.Errorf("FP8 flavour %s, want %s", got, want)
			}
		})
	}
}
