package kernels

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// module is one (dtype, op) instantiation of Source, numbered as collectives.DType and collectives.Op.
type module struct{ dt, op int }

func (m module) String() string {
	return collectives.DType(m.dt).String() + "/" + collectives.Op(m.op).String()
}

// defines are the -D options that instantiate m, as gpuengine passes them to NVRTC.
func (m module) defines() []string {
	return []string{"-DRX_DTYPE=" + strconv.Itoa(m.dt), "-DRX_OP=" + strconv.Itoa(m.op)}
}

// representativeModules reach every branch of types.cuh: every dtype with sum, and every other op with one type
// of each family (int8: wrapping integer steps; half: a narrow type reduced in float; float). -short keeps four.
func representativeModules() []module {
	if testing.Short() {
		return []module{{7, 0}, {9, 0}, {6, 2}, {10, 5}}
	}
	var ms []module
	for dt := range 12 {
		ms = append(ms, module{dt, 0})
	}
	for op := 1; op < 6; op++ {
		for _, dt := range []int{0, 6, 7} {
			ms = append(ms, module{dt, op})
		}
	}
	return ms
}

// compileModules writes Source to a temporary all.cu and runs command(all.cu, m) for every module, one per
// CPU at a time. Any compiler output fails the module: warnings included.
func compileModules(t *testing.T, ms []module, command func(src string, m module) []string) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "all.cu")
	if err := os.WriteFile(src, []byte(Source()), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.NumCPU())
	for _, m := range ms {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			args := command(src, m)
			out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
			if err != nil || len(out) > 0 {
				t.Errorf("%v %v: %v\n%s", m, m.defines(), err, out)
			}
		})
	}
	wg.Wait()
	t.Logf("compiled %d modules in %v", len(ms), time.Since(start).Round(time.Millisecond))
}
