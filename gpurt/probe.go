package gpurt

import "fmt"

// GPUs is what a look for GPUs found: the runtime that sees them and how many, or what was tried.
type GPUs struct {
	Runtime string // "cuda" where a runtime sees devices, "" where none does
	Count   int
	Driver  int    // the runtime's driver version, e.g. 13000 for CUDA 13.0 (0: unknown)
	Tried   string // where none is seen: what was tried, and why each attempt found nothing
}

// FindGPUs looks for GPUs through the runtimes this package binds, loading them as needed. It never fails: a
// runtime that does not load, or sees no device, is a line in Tried.
func FindGPUs() GPUs {
	if err := Load(); err != nil {
		return GPUs{Tried: err.Error()}
	}
	n, err := DeviceCount()
	if err != nil {
		return GPUs{Tried: fmt.Sprintf("cuda: the driver loads, but cuDeviceGetCount: %v", err)}
	}
	if n == 0 {
		return GPUs{Tried: "cuda: the driver loads and sees no device"}
	}
	v, _ := DriverVersion()
	return GPUs{Runtime: "cuda", Count: n, Driver: v}
}
