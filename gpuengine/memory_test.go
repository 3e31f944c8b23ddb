package gpuengine

import (
	"errors"
	"testing"
	"time"

	"rcclx-tests/collectives"
	"rcclx-tests/cuda"
)

// Device memory comes back after Close on every exit path: a run on every algorithm family (the copy-engine
// scratch included), and a run that timed out and aborted. The tolerance covers what the driver keeps per
// process (modules loaded on first use, 2 MiB page granularity); a leak is the 2 x 64 MiB buffers per rank or
// the 2 x 4 MiB + 68 MiB communicator buffer.
func TestGPUCloseReleasesDeviceMemory(t *testing.T) {
	onGPU(t)
	const tolerance = 32 << 20
	ndev, err := cuda.DeviceCount()
	must(t, err)
	n := min(ndev, 2)
	var ctxs []*cuda.Context
	for d := range n {
		ctx, err := cuda.Device(d).RetainPrimaryContext()
		must(t, err)
		t.Cleanup(func() { ctx.Release() })
		ctxs = append(ctxs, ctx)
	}
	freeMem := func() []int64 {
		out := make([]int64, n)
		for d, ctx := range ctxs {
			must(t, ctx.SetCurrent())
			free, _, err := cuda.MemGetInfo()
			must(t, err)
			out[d] = free
		}
		return out
	}
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
			s := callSpec{coll, collectives.Float, collectives.Sum, 64 << 20, false, 0}
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
	compare := func(what string, base, now []int64) {
		t.Helper()
		for d := range base {
			lost := base[d] - now[d]
			t.Logf("device %d after %s: %d MiB free, %+d MiB against the baseline", d, what, now[d]>>20, -lost>>20)
			if lost > tolerance {
				t.Errorf("device %d: %d MiB not given back after %s (tolerance %d MiB)", d, lost>>20, what, tolerance>>20)
			}
		}
	}
	cycle(nil, false) // modules load once per process
	base := freeMem()
	for _, env := range []map[string]string{nil, ceOffEnv, ddaEnv, lpEnv} {
		cycle(env, false)
		compare("a run with env "+mapString(env), base, freeMem())
	}
	if n < 2 {
		t.Log("timeout path not tried: needs two GPUs")
		return
	}
	cycle(ceOffEnv, true)
	compare("a timeout and abort", base, freeMem())
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
