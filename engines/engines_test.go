package engines

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/ebitengine/purego"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
	"github.com/rcclx-tests/rcclx-tests/nccl"
)

// standInEnv makes this test binary stand a driver of its own in for libcuda before its tests run.
const standInEnv = "RCCLX_TESTS_STANDIN_GPUS"

func TestMain(m *testing.M) {
	if os.Getenv(standInEnv) != "" {
		if err := bindStandInDriver(); err != nil {
			os.Stderr.WriteString("stand-in driver: " + err.Error() + "\n")
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}

// bindStandInDriver binds a CUDA driver written in Go that sees 8 GPUs (CUDA 13.0) and fails every other call.
func bindStandInDriver() error {
	fail := purego.NewCallback(func() uintptr { return 999 }) // CUDA_ERROR_UNKNOWN
	fns := map[string]uintptr{
		"cuInit":             purego.NewCallback(func(uintptr) uintptr { return 0 }),
		"cuDeviceGetCount":   purego.NewCallback(func(n *int32) uintptr { *n = 8; return 0 }),
		"cuDriverGetVersion": purego.NewCallback(func(v *int32) uintptr { *v = 13000; return 0 }),
	}
	return gpurt.BindDriver("libcuda-standin.so.1", func(name string) uintptr {
		if a, ok := fns[name]; ok {
			return a
		}
		return fail
	})
}

// stand replaces what Choose asks of the machine for the length of the test.
func stand(t *testing.T, gpus gpurt.GPUs, library, gpu error) {
	t.Helper()
	f, o, g := findGPUs, openLibrary, gpuUsable
	t.Cleanup(func() { findGPUs, openLibrary, gpuUsable = f, o, g })
	findGPUs = func() gpurt.GPUs { return gpus }
	openLibrary = func(string) error { return library }
	gpuUsable = func() error { return gpu }
}

var (
	eightGPUs    = gpurt.GPUs{Runtime: "cuda", Count: 8, Driver: 13000}
	errNoLibrary = errors.New("nccl: no usable NCCL library; tried libnccl.so.2 (not found)")
)

func TestRegistry(t *testing.T) {
	stand(t, gpurt.GPUs{Tried: "nothing"}, errNoLibrary, errors.New("no GPU"))
	names := Names()
	if names[0] != Auto || !slices.Contains(names, "host") {
		t.Fatalf("Names() = %v", names)
	}
	for _, name := range names[1:] {
		e, err := New(name)
		if err != nil || e.Name() != name {
			t.Errorf("New(%q) = %v, %v", name, e, err)
		}
	}
	if e, err := New(Auto); err != nil || e.Name() != "host" {
		t.Errorf("New(auto) without a GPU = %v, %v", e, err)
	}
	if _, err := New("nope"); err == nil {
		t.Error("New(nope) succeeded")
	}
}

// Without a GPU auto measures the CPU, and says so with what it tried.
func TestChooseNoGPU(t *testing.T) {
	stand(t, gpurt.GPUs{Tried: "cuda: cannot load the CUDA driver (libcuda.so.1); tried libcuda.so.1: not found"}, nil, nil)
	eng, note, err := Choose("")
	if err != nil || eng.Name() != "host" {
		t.Fatalf("Choose = %v, %v", eng, err)
	}
	for _, want := range []string{"no GPU found", "libcuda.so.1: not found", "--engine host"} {
		if !strings.Contains(note, want) || strings.Contains(note, "\n") {
			t.Errorf("note %q lacks %q (or is not one line)", note, want)
		}
	}
}

// A library that loads, with a GPU, is what auto measures: here a fake NCCL written in Go.
func TestChooseLibrary(t *testing.T) {
	stand(t, eightGPUs, nil, errors.New("no NVRTC"))
	version := purego.NewCallback(func(v *int32) uintptr { *v = 22803; return 0 })
	stub := purego.NewCallback(func() uintptr { return uintptr(nccl.InternalError) })
	var asked string
	openLibrary = func(lib string) error {
		asked = lib
		_, err := nccl.Bind("libfake-nccl.so.2", func(name string) uintptr {
			if name == "ncclGetVersion" {
				return version
			}
			if strings.HasPrefix(name, "nccl") && !strings.Contains(name, "Config") {
				return stub
			}
			return 0
		})
		return err
	}
	eng, note, err := Choose("/opt/x/libnccl.so.2")
	if err != nil || eng.Name() != "vendor" || note != "" {
		t.Fatalf("Choose = %v, %q, %v; want vendor, silently", eng, note, err)
	}
	if asked != "/opt/x/libnccl.so.2" {
		t.Errorf("Choose opened %q, not --lib's library", asked)
	}
}

// A GPU without a library runs the suite's kernels, and says where it looked for one.
func TestChooseKernels(t *testing.T) {
	stand(t, eightGPUs, errNoLibrary, nil)
	eng, note, err := Choose("")
	if err != nil || eng.Name() != "gpu" {
		t.Fatalf("Choose = %v, %v", eng, err)
	}
	for _, want := range []string{"no NCCL-ABI library found", "tried libnccl.so.2", "8 cuda GPU(s)", "--engine gpu"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q lacks %q", note, want)
		}
	}
}

// A GPU that no engine can use is an error of the library kind (exit 3), never a run on the CPU.
func TestChooseRefusesUnusableGPU(t *testing.T) {
	stand(t, eightGPUs, errNoLibrary, errors.New("cuda: cannot load NVRTC"))
	eng, _, err := Choose("")
	var le *collectives.LibraryError
	if !errors.As(err, &le) || eng != nil {
		t.Fatalf("Choose = %v, %v; want a *LibraryError", eng, err)
	}
	for _, want := range []string{"8 cuda GPU(s) seen", "tried libnccl.so.2", "cannot load NVRTC", "--engine host"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// The same through the real probes, with a stand-in libcuda that sees 8 GPUs and no NVRTC to compile with: a
// child test binary binds the stand-in (it stays bound for the process).
func TestStandInDriverWithoutNVRTC(t *testing.T) {
	if os.Getenv(standInEnv) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestStandInDriverWithoutNVRTC$", "-test.v")
		cmd.Env = append(os.Environ(), standInEnv+"=8", "RCCLX_TESTS_LIBNVRTC=/nonexistent/libnvrtc.so.13")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		if strings.Contains(string(out), "SKIP") {
			t.Skipf("child skipped:\n%s", out)
		}
		return
	}
	if g := gpurt.FindGPUs(); g.Count != 8 || g.Runtime != "cuda" || g.Driver != 13000 {
		t.Fatalf("FindGPUs with the stand-in = %+v", g)
	}
	if err := gpurt.LoadCompiler(); err == nil {
		t.Skip("NVRTC is installed here: the gpu engine could run")
	}
	o := openLibrary
	t.Cleanup(func() { openLibrary = o })
	openLibrary = func(string) error { return errNoLibrary } // a real NCCL here would be found, and fail later
	eng, _, err := Choose("")
	var le *collectives.LibraryError
	if !errors.As(err, &le) || eng != nil || !strings.Contains(err.Error(), "NVRTC") {
		t.Fatalf("Choose = %v, %v; want a *LibraryError naming NVRTC", eng, err)
	}
	if r, ok := Readers(Auto); ok {
		t.Errorf("Readers(auto) = %v on a machine where auto picks nothing", r)
	}
}

func TestReaders(t *testing.T) {
	stand(t, eightGPUs, errNoLibrary, nil)
	for name, want := range map[string][]string{"auto": {"gpu"}, "host": {"host"}, "gpu": {"gpu"}} {
		if got, ok := Readers(name); !ok || !slices.Equal(got, want) {
			t.Errorf("Readers(%s) = %v, %v; want %v", name, got, ok, want)
		}
	}
	for _, name := range []string{"vendor", "nope"} {
		if got, ok := Readers(name); ok {
			t.Errorf("Readers(%s) = %v, ok", name, got)
		}
	}
	openLibrary = func(string) error { return nil }
	if got, ok := Readers(Auto); ok {
		t.Errorf("Readers(auto) = %v, ok where auto picks the vendor engine", got)
	}
}
