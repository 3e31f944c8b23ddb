package gpuengine

import (
	"strings"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/internal/fakehip"
)

// The engine tells the harness the FP8 flavour its kernels compute in: FNUZ on an MI300X (gfx942), OCP on an
// MI250X (gfx90a), so that FP8 data is generated and checked in the kernels' own flavour; devices of both in
// one process are refused (the process's data has one flavour).
func TestFakeHIPFP8Flavour(t *testing.T) {
	flavours := map[fakehip.Device]collectives.FP8Flavour{fakehip.MI300X: collectives.FP8FNUZ, fakehip.MI250X: collectives.FP8OCP}
	for dev, want := range flavours {
		t.Run(dev.Arch, func(t *testing.T) {
			startFakeHIP(t, &fakehip.HIP{Devices: []fakehip.Device{dev}})
			if got := collectives.FP8FlavourOf(open(t, New(), 1, nil, 0)); got != want {
				t.Errorf("FP8 flavour %s, want %s", got, want)
			}
		})
	}
	t.Run("mixed", func(t *testing.T) {
		startFakeHIP(t, &fakehip.HIP{Devices: []fakehip.Device{fakehip.MI300X, fakehip.MI250X}})
		c, err := New().Open(collectives.Config{NThreads: 1, NGpus: 2})
		if err == nil {
			c.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "gfx942:sramecc+:xnack- computes FP8 in fnuz, gfx90a:sramecc+:xnack- in ocp") {
			t.Errorf("gfx942 and gfx90a in one process: %v", err)
		}
	})
}
