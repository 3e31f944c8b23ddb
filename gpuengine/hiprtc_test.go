package gpuengine

import (
	"bytes"
	"debug/elf"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ebitengine/purego"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

// debianHIP is Debian 12's HIP runtime (libamdhip64-5, ROCm 5.2), whose hiprtc compiles for gfx90a and knows no
// MI300 (gfx94x).
const debianHIP = "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5"

var hipInitOK = sync.OnceValue(func() uintptr { return purego.NewCallback(func(uintptr) uintptr { return 0 }) })

// bindDebianHIP binds the real libamdhip64.so.5 through gpurt with only hipInit standing in (there is no AMD GPU
// to initialize): the real hiprtc compiles through the engine's own compile path.
func bindDebianHIP(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(debianHIP); err != nil {
		t.Skipf("no %s (Debian: apt-get install -y libamdhip64-5 libhiprtc-builtins5)", debianHIP)
	}
	if rt := gpurt.Loaded(); rt != gpurt.None {
		t.Skipf("%s is bound in this process", rt.Title())
	}
	h, err := purego.Dlopen(debianHIP, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		t.Fatal(err)
	}
	sym := func(name string) uintptr {
		if name == "hipInit" {
			return hipInitOK()
		}
		a, _ := purego.Dlsym(h, name)
		return a
	}
	if err := gpurt.Bind(gpurt.HIP, debianHIP, sym); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gpurt.Unload)
	t.Setenv("RCCLX_TESTS_KERNEL_CACHE", t.TempDir())
	cubins.Clear()
	t.Cleanup(cubins.Clear)
}

// hipKernels are the kernels the planner may look up in the sum module of dt on HIP: every algorithm's, the
// barrier, copy engine and fault hook; for float also LP's entries (but the bulk one) and the LL and LL128
// protocols (LL128 on RCCLX_TESTS_GPU_LL128=1), which the kernels define for floating types only.
func hipKernels(dt collectives.DType) []string {
	float := dt == collectives.Float
	names := []string{flipKernel, barrierKernel, ceReduceKernel, pushKernel}
	if float {
		names = append(names, llFlatKernel, llTreeKernel, ll128Kernel)
	}
	for coll, byAlgo := range kernelNames {
		for algo, name := range byAlgo {
			if algo != collectives.LowPrecision {
				names = append(names, name)
				continue
			}
			if float {
				names = append(names, name, name+"_scaled")
				if lpNarrow(coll, dt.Size(), false, 0) {
					names = append(names, name+"_narrow")
				}
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// The real hiprtc of ROCm 5.2 compiles the float/sum and int8/sum modules for gfx90a through the engine's compile
// path (gpurt's options, the module's defines, the cache), each into an AMDGPU code object that defines every
// kernel the HIP planner may look up and none of the CUDA-only ones. About 35 s of CPU; all 72 modules are
// scripts/hip-check.sh's.
func TestHIPRTCCompilesModulesForGfx90a(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: compiling with hiprtc takes about 35 s")
	}
	bindDebianHIP(t)
	mi250 := target{arch: "gfx90a:sramecc+:xnack-", warpShift: 6}
	keys := []cubinKey{{mi250, collectives.Float, collectives.Sum}, {mi250, collectives.Int8, collectives.Sum}}
	start := time.Now()
	must(t, precompile(keys, func(line string) { t.Log(line) }))
	t.Logf("hiprtc compiled %d modules in %v", len(keys), time.Since(start).Round(time.Millisecond))
	for _, k := range keys {
		image, err := cubin(k)
		must(t, err)
		f, err := elf.NewFile(bytes.NewReader(image))
		if err != nil {
			t.Fatalf("%v: not an ELF: %v", k, err)
		}
		if f.Machine != elf.EM_AMDGPU {
			t.Errorf("%v: ELF machine %v, want EM_AMDGPU", k, f.Machine)
		}
		syms, err := f.DynamicSymbols()
		if err != nil || len(syms) == 0 {
			syms, err = f.Symbols()
		}
		must(t, err)
		defined := map[string]bool{}
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Section != elf.SHN_UNDEF {
				defined[s.Name] = true
			}
		}
		for _, name := range hipKernels(k.dt) {
			if !defined[name] {
				t.Errorf("%v: kernel %s missing from the code object", k, name)
			}
		}
		for _, name := range cudaOnlyKernels {
			if defined[name] {
				t.Errorf("%v: CUDA-only kernel %s in the code object", k, name)
			}
		}
		t.Logf("%v: %d-byte AMDGPU code object, %d kernels", k, len(image), len(defined))
	}
}

// hiprtc aborts the whole process on an architecture it does not know (ROCm 5.2 on MI300's gfx942): the engine's
// compile path refuses one in one line before calling it. Without that guard this test's process dies.
func TestHIPRTCUnknownArchRefusedBeforeCompiling(t *testing.T) {
	bindDebianHIP(t)
	mi300 := target{arch: "gfx942:sramecc+:xnack-", fnuz: true, warpShift: 6}
	_, err := cubin(cubinKey{mi300, collectives.Int8, collectives.Sum})
	if err == nil || !strings.Contains(err.Error(), "gfx942") || !strings.Contains(err.Error(), "HIP 5.2") ||
		!strings.Contains(err.Error(), "not calling it") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("compiling for gfx942 with ROCm 5.2's hiprtc: %v; want one line refusing it", err)
	}
	t.Log(err)
	runtime.KeepAlive(mi300)
}
