package gpuengine

import (
	"errors"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
	"github.com/rcclx-tests/rcclx-tests/internal/devmem"
)

// Device memory comes back after Close on every exit path: a run on every algorithm family (the copy-engine
// scratch included), and a run that timed out and aborted. The tolerance covers what the driver keeps per
// process (modules loaded on first use, 2 MiB page granularity); a leak is the 2 x 64 MiB buffers per rank or
// the communicator's ~224 MiB buffer per rank.
func TestGPUCloseReleasesDeviceMemory(t *testing.T) {
	onGPU(t)
	const tolerance = 32 << 20
	ndev, err := gpurt.DeviceCount()
	must(t, err)
	n := min(ndev, 2)
	mem := devmem.New(t, n)
	cycle := func(env map[string]string, hang bool) {
		t.Helper()
		timeout := time.Duration(0)
		if hang {
			timeout, env = time.Second, merge(env, map[string]string{collectives.EnvSkipRank: "1"})
		}
		c, err := New().Open(collectives.Config{NThreads: 1, NGpus: n, Env: env, Timeout: timeout, Oversubscribe: true})
		must(t, err)
		g := c.Groups()[0]
		for _, coll := range allColls {
			s := callSpec{coll, collectives.Float, collectives.Sum, 64 << 20, false, 0, 0}
			call := buildCall(t, g, s, n)
			err := g.Launch(call)
			if err == nil {
				err = g.Wait()
			}
			var te *collectives.TimeoutError
			if hang != errors.As(err, &te) || (!hang && err != nil) {
				t.Errorf("env %v hang=%v: %s returned %v", env, hang, coll.Name, err)
			}
			for l := range n {
				must(t, g.Free(call.Send[l].Buf))
				must(t, g.Free(call.Recv[l].Buf))
			}
			if hang {
				break // the communicator is unusable after the abort
			}
		}
		must(t, c.Close())
	}
	cycle(nil, false) // modules load once per process
	base := mem.Free()
	for _, env := range []map[string]string{nil, ceOffEnv, ddaEnv, lpEnv} {
		cycle(env, false)
		mem.Check("a run with env "+mapString(env), base, tolerance)
	}
	if n < 2 {
		t.Log("timeout path not tried: needs two GPUs")
		return
	}
	cycle(ceOffEnv, true)
	mem.Check("a timeout and abort", base, tolerance)
}

func mapString(m map[string]string) string {
	if len(m) == 0 {
		return "default"
	}
	s := ""
	for k, v := range m {
		s += k + "=" + v + " "
	}
	return s
}

// Opening reports the device memory it took (-M's "Initialization"): at least the data halves of the ranks on
// the busiest device, and less than the device holds.
func TestGPUOpenMemory(t *testing.T) {
	onGPU(t)
	c := open(t, New(), 2, nil, 0)
	got := c.(collectives.OpenMemoryReporter).OpenMemory()
	total, err := gpurt.Device(0).TotalMem()
	must(t, err)
	if want := 2 * halfBytes(32<<20); got < want || got >= total {
		t.Errorf("OpenMemory %d, want at least %d (two data halves) and below %d", got, want, total)
	}
}
