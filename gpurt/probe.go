package gpurt

import "fmt"

// GPUs is what a look for GPUs found: the runtime that sees them and how many, or what was tried.
type GPUs struct {
	Runtime string // "cuda" or "hip" where a runtime sees devices, "" where none does
	Count   int
	Driver  int    // the runtime's driver version, e.g. 13000 for CUDA 13.0 (0: unknown)
	Tried   string // where none is seen: what was tried of each runtime, and why each attempt found nothing
}

// FindGPUs looks for GPUs through the runtimes this package binds (Load: CUDA, then HIP, or the one
// RCCLX_TESTS_GPU_RUNTIME names), loading them as needed. It never fails: a runtime that does not load, or sees no
// device, is part of Tried, in one line.
func FindGPUs() GPUs {
	if err := Load(); err != nil {
		return GPUs{Tried: err.Error()}
	}
	rt := Loaded()
	n, err := DeviceCount()
	if err != nil {
		return GPUs{Tried: fmt.Sprintf("%s: %s loads, but counting its devices failed: %v", rt, Library(), err)}
	}
	if n == 0 {
		return GPUs{Tried: fmt.Sprintf("%s: %s loads and sees no device", rt, Library())}
	}
	v, _ := DriverVersion()
	return GPUs{Runtime: rt.String(), Count: n, Driver: v}
}

// BindDriver makes the functions sym finds by name (0 where there is none) the CUDA driver and calls cuInit(0), as
// Load does with the library it opens; path names the driver in messages. A test stands Go functions in for a
// driver so (purego.NewCallback); Bind binds a whole runtime, compiler included.
func BindDriver(path string, sym func(name string) uintptr) error {
	state.Lock()
	defer state.Unlock()
	if cur := Loaded(); cur != None {
		return fmt.Errorf("gpu runtime: %s is already loaded (%s)", cur.Title(), state.path)
	}
	return prefix(bindLocked(CUDA, path, 0, sym))
}
