// Package cuda binds the CUDA driver API and NVRTC through purego (no cgo).
//
// Every call returns *Error naming the C function on failure. The current
// context is per OS thread: drive each GPU from one goroutine that called
// runtime.LockOSThread and Context.SetCurrent.
package cuda

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

var driverFuncs []*cfunc

// driverFunc declares a libcuda entry point; later names are fallbacks for older drivers.
func driverFunc(names ...string) *cfunc {
	f := &cfunc{names: names, name: names[0]}
	driverFuncs = append(driverFuncs, f)
	return f
}

var (
	cuInit                      = driverFunc("cuInit")
	cuDriverGetVersion          = driverFunc("cuDriverGetVersion")
	cuGetErrorName              = driverFunc("cuGetErrorName")
	cuGetErrorString            = driverFunc("cuGetErrorString")
	cuDeviceGetCount            = driverFunc("cuDeviceGetCount")
	cuDeviceGet                 = driverFunc("cuDeviceGet")
	cuDeviceGetName             = driverFunc("cuDeviceGetName")
	cuDeviceGetPCIBusId         = driverFunc("cuDeviceGetPCIBusId")
	cuDeviceGetAttribute        = driverFunc("cuDeviceGetAttribute")
	cuDeviceTotalMem            = driverFunc("cuDeviceTotalMem_v2")
	cuDeviceCanAccessPeer       = driverFunc("cuDeviceCanAccessPeer")
	cuDevicePrimaryCtxRetain    = driverFunc("cuDevicePrimaryCtxRetain")
	cuDevicePrimaryCtxRelease   = driverFunc("cuDevicePrimaryCtxRelease_v2")
	cuCtxSetCurrent             = driverFunc("cuCtxSetCurrent")
	cuCtxEnablePeerAccess       = driverFunc("cuCtxEnablePeerAccess")
	cuMemAlloc                  = driverFunc("cuMemAlloc_v2")
	cuMemFree                   = driverFunc("cuMemFree_v2")
	cuMemGetInfo                = driverFunc("cuMemGetInfo_v2")
	cuMemcpyHtoD                = driverFunc("cuMemcpyHtoD_v2")
	cuMemcpyDtoH                = driverFunc("cuMemcpyDtoH_v2")
	cuMemcpyDtoD                = driverFunc("cuMemcpyDtoD_v2")
	cuMemcpyDtoDAsync           = driverFunc("cuMemcpyDtoDAsync_v2")
	cuMemcpyPeerAsync           = driverFunc("cuMemcpyPeerAsync")
	cuMemsetD8                  = driverFunc("cuMemsetD8_v2")
	cuMemsetD32Async            = driverFunc("cuMemsetD32Async")
	cuMemHostAlloc              = driverFunc("cuMemHostAlloc")
	cuMemFreeHost               = driverFunc("cuMemFreeHost")
	cuMemHostGetDevicePointer   = driverFunc("cuMemHostGetDevicePointer_v2")
	cuStreamCreate              = driverFunc("cuStreamCreate")
	cuStreamSynchronize         = driverFunc("cuStreamSynchronize")
	cuStreamQuery               = driverFunc("cuStreamQuery")
	cuStreamDestroy             = driverFunc("cuStreamDestroy_v2")
	cuStreamWaitEvent           = driverFunc("cuStreamWaitEvent")
	cuStreamBeginCapture        = driverFunc("cuStreamBeginCapture_v2")
	cuStreamEndCapture          = driverFunc("cuStreamEndCapture")
	cuEventCreate               = driverFunc("cuEventCreate")
	cuEventRecord               = driverFunc("cuEventRecord")
	cuEventSynchronize          = driverFunc("cuEventSynchronize")
	cuEventQuery                = driverFunc("cuEventQuery")
	cuEventDestroy              = driverFunc("cuEventDestroy_v2")
	cuEventElapsedTime          = driverFunc("cuEventElapsedTime_v2", "cuEventElapsedTime")
	cuIpcGetMemHandle           = driverFunc("cuIpcGetMemHandle")
	cuIpcOpenMemHandle          = driverFunc("cuIpcOpenMemHandle_v2")
	cuIpcCloseMemHandle         = driverFunc("cuIpcCloseMemHandle")
	cuModuleLoadData            = driverFunc("cuModuleLoadData")
	cuModuleGetFunction         = driverFunc("cuModuleGetFunction")
	cuModuleUnload              = driverFunc("cuModuleUnload")
	cuFuncSetAttribute          = driverFunc("cuFuncSetAttribute")
	cuLaunchKernel              = driverFunc("cuLaunchKernel")
	cuGraphInstantiateWithFlags = driverFunc("cuGraphInstantiateWithFlags")
	cuGraphLaunch               = driverFunc("cuGraphLaunch")
	cuGraphExecDestroy          = driverFunc("cuGraphExecDestroy")
	cuGraphDestroy              = driverFunc("cuGraphDestroy")
)

// raw calls f with integer/pointer arguments and returns the C int result.
//
//go:uintptrescapes
func (f *cfunc) raw(args ...uintptr) uint32 {
	r, _, _ := purego.SyscallN(f.addr, args...)
	return uint32(r)
}

// call calls a driver function and turns a non-zero CUresult into *Error.
//
//go:uintptrescapes
func (f *cfunc) call(args ...uintptr) error {
	if f.addr == 0 {
		return errNotLoaded
	}
	r, _, _ := purego.SyscallN(f.addr, args...)
	if r := uint32(r); r != 0 {
		return driverError(f.name, int(r))
	}
	return nil
}

var driver struct {
	sync.Mutex
	path string // set once Load succeeded
}

// driverCandidates lists where Load looks for libcuda, in order. The toolkit's
// stubs directory is left out on purpose: its libcuda only fails every call.
func driverCandidates(getenv func(string) string) []string {
	var c []string
	if p := getenv("RCCLX_TESTS_LIBCUDA"); p != "" {
		c = append(c, p)
	}
	c = append(c, "libcuda.so.1", "libcuda.so")
	for _, dir := range []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/nvidia/lib64", "/usr/lib/wsl/lib"} {
		c = append(c, filepath.Join(dir, "libcuda.so.1"))
	}
	return c
}

// Load opens libcuda, resolves every entry point and calls cuInit(0).
// It is safe to call many times and from many goroutines.
func Load() error {
	driver.Lock()
	defer driver.Unlock()
	if driver.path != "" {
		return nil
	}
	h, path, err := openFirst("the CUDA driver (libcuda.so.1)", driverCandidates(os.Getenv))
	if err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	if err := resolve(path, h, driverFuncs); err != nil {
		unresolve(driverFuncs)
		return fmt.Errorf("cuda: %w", err)
	}
	if err := cuInit.call(0); err != nil {
		unresolve(driverFuncs)
		if e, ok := err.(*Error); ok && e.Code == errorStubLibrary {
			return fmt.Errorf("cuda: %s is the toolkit's stub, not a driver: %w", path, err)
		}
		return fmt.Errorf("cuda: %s: %w", path, err)
	}
	driver.path = path
	return nil
}

// DriverVersion returns the driver API version, e.g. 13000 for CUDA 13.0.
func DriverVersion() (int, error) {
	var v int32
	err := cuDriverGetVersion.call(uintptr(unsafe.Pointer(&v)))
	return int(v), err
}
