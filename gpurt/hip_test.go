package gpurt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ebitengine/purego"
)

// debianHIP is the HIP runtime Debian 12 ships (libamdhip64-5, ROCm 5.2), which CI installs.
const debianHIP = "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5"

func openDebianHIP(t *testing.T) func(string) uintptr {
	t.Helper()
	if _, err := os.Stat(debianHIP); err != nil {
		t.Skipf("no %s (Debian: apt-get install -y libamdhip64-5 libhiprtc-builtins5)", debianHIP)
	}
	h, err := purego.Dlopen(debianHIP, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		t.Fatal(err)
	}
	return dlsym(h)
}

// Every entry point the layer binds has its HIP name in the real libamdhip64 (hiprtc's too, which ROCm 5 keeps
// there), but for those CUDA alone has; a misspelt name fails here.
func TestHIPEntryPointsResolve(t *testing.T) {
	sym := openDebianHIP(t)
	n := 0
	for _, lib := range []*library{&driverLib, &compilerLib} {
		for _, f := range lib.funcs {
			names := f.names[HIP]
			if len(names) == 0 {
				if !cudaOnly[f.firstName(CUDA)] {
					t.Errorf("%s has no HIP name", f.firstName(CUDA))
				}
				continue
			}
			found := ""
			for _, name := range names {
				if sym(name) != 0 {
					found = name
					break
				}
			}
			if found == "" {
				t.Errorf("%s exports none of %s", debianHIP, strings.Join(names, ", "))
			}
			n++
		}
	}
	if sym("hipGetDevicePropertiesR0600") != 0 {
		t.Error("ROCm 5.2 exports hipGetDevicePropertiesR0600: the R0000 fallback is not what this test checks")
	}
	t.Logf("%d HIP entry points resolve in %s", n, debianHIP)
}

// cudaOnly are the entry points HIP has no counterpart of; the layer branches around them.
var cudaOnly = map[string]bool{
	"cuGetErrorName": true, "cuGetErrorString": true, // hipGetErrorName/String return the text
	"cuDeviceGet":              true,                                       // HIP takes the ordinal
	"cuDevicePrimaryCtxRetain": true, "cuDevicePrimaryCtxRelease_v2": true, // no contexts on HIP
	"cuFuncSetAttribute": true, // no dynamic shared memory opt-in on AMD
	"cuLaunchKernelEx":   true, // no programmatic dependent launch
}

// Without an AMD GPU the real HIP runtime fails to initialize, and Load says so in one line naming the library,
// its version and HIP's error.
func TestHIPLoadWithoutGPU(t *testing.T) {
	openDebianHIP(t)
	if Loaded() != None {
		t.Skipf("%s is loaded already", Loaded().Title())
	}
	t.Setenv(RuntimeVariable, "hip")
	t.Setenv("RCCLX_TESTS_LIBAMDHIP64", debianHIP)
	err := Load()
	if err == nil {
		defer Unload()
		t.Skip("HIP found a GPU here")
	}
	msg := err.Error()
	for _, want := range []string{"gpu runtime: HIP: " + debianHIP, "HIP 5.2.", "hipInit", "no usable GPU"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Load error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "\n") || strings.Contains(msg, "cuda:") || strings.Contains(msg, "CUDA") {
		t.Errorf("Load error is not one line about HIP alone:\n%s", msg)
	}
	if Loaded() != None {
		t.Errorf("a failed Load left %s bound", Loaded().Title())
	}
	t.Log(msg)
}

// Where no runtime sees a GPU, FindGPUs (what --engine auto asks) names what it tried of both runtimes, in one
// line.
func TestFindGPUsWithoutGPUNamesBothRuntimes(t *testing.T) {
	openDebianHIP(t)
	if Loaded() != None {
		t.Skipf("%s is loaded already", Loaded().Title())
	}
	t.Setenv(RuntimeVariable, "")
	t.Setenv("RCCLX_TESTS_LIBCUDA", "/nonexistent/rcclx/libcuda.so.1")
	g := FindGPUs()
	if g.Count > 0 {
		Unload()
		t.Skipf("%s sees %d GPUs here", g.Runtime, g.Count)
	}
	msg := g.Tried
	for _, want := range []string{"CUDA: cannot load the CUDA driver", "/nonexistent/rcclx/libcuda.so.1", "HIP: " + filepath.Base(debianHIP), "HIP 5.2."} {
		if !strings.Contains(msg, want) {
			t.Errorf("FindGPUs lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "\n") || g.Runtime != "" {
		t.Errorf("FindGPUs = %+v; want no runtime and one line", g)
	}
}

// The HIP-over-CUDA shim the GPU machine's HIP runs use (testdata/hipshim) defines every entry point gpurt binds
// under HIP; one it lacks would fail that run's load.
func TestHIPShimDefinesEveryEntryPoint(t *testing.T) {
	src, err := os.ReadFile("testdata/hipshim/hipshim.cpp")
	if err != nil {
		t.Fatal(err)
	}
	for _, lib := range []*library{&driverLib, &compilerLib} {
		for _, f := range lib.funcs {
			names := f.names[HIP]
			if len(names) == 0 {
				continue
			}
			ok := false
			for _, n := range names {
				ok = ok || strings.Contains(string(src), " "+n+"(")
			}
			if !ok {
				t.Errorf("the shim defines none of %s", strings.Join(names, ", "))
			}
		}
	}
}
