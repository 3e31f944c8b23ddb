// Package cuda binds the CUDA driver API and NVRTC through purego (no cgo).
//
// Every call returns *Error naming the C function on failure. The current
// context is per OS thread: drive each GPU from one goroutine that called
// runtime.LockOSThread and Context.SetCurrent.
package gpurt

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"unsafe"
)

var driverLib library

func init() { driverLib.newError = driverError }

var (
	cuInit                      = driverLib.fn("cuInit")
	cuDriverGetVersion          = driverLib.fn("cuDriverGetVersion")
	cuGetErrorName              = driverLib.fn("cuGetErrorName")
	cuGetErrorString            = driverLib.fn("cuGetErrorString")
	cuDeviceGetCount            = driverLib.fn("cuDeviceGetCount")
	cuDeviceGet                 = driverLib.fn("cuDeviceGet")
	cuDeviceGetName             = driverLib.fn("cuDeviceGetName")
	cuDeviceGetPCIBusId         = driverLib.fn("cuDeviceGetPCIBusId")
	cuDeviceGetAttribute        = driverLib.fn("cuDeviceGetAttribute")
	cuDeviceTotalMem            = driverLib.fn("cuDeviceTotalMem_v2")
	cuDeviceCanAccessPeer       = driverLib.fn("cuDeviceCanAccessPeer")
	cuDevicePrimaryCtxRetain    = driverLib.fn("cuDevicePrimaryCtxRetain")
	cuDevicePrimaryCtxRelease   = driverLib.fn("cuDevicePrimaryCtxRelease_v2")
	cuCtxSetCurrent             = driverLib.fn("cuCtxSetCurrent")
	cuCtxSynchronize            = driverLib.fn("cuCtxSynchronize")
	cuCtxEnablePeerAccess       = driverLib.fn("cuCtxEnablePeerAccess")
	cuMemAlloc                  = driverLib.fn("cuMemAlloc_v2")
	cuMemFree                   = driverLib.fn("cuMemFree_v2")
	cuMemAllocManaged           = driverLib.fn("cuMemAllocManaged")
	cuMemGetInfo                = driverLib.fn("cuMemGetInfo_v2")
	cuMemcpyHtoD                = driverLib.fn("cuMemcpyHtoD_v2")
	cuMemcpyHtoDAsync           = driverLib.fn("cuMemcpyHtoDAsync_v2")
	cuMemcpyDtoH                = driverLib.fn("cuMemcpyDtoH_v2")
	cuMemcpyDtoD                = driverLib.fn("cuMemcpyDtoD_v2")
	cuMemcpyDtoDAsync           = driverLib.fn("cuMemcpyDtoDAsync_v2")
	cuMemcpyPeerAsync           = driverLib.fn("cuMemcpyPeerAsync")
	cuMemsetD8                  = driverLib.fn("cuMemsetD8_v2")
	cuMemsetD32Async            = driverLib.fn("cuMemsetD32Async")
	cuMemHostAlloc              = driverLib.fn("cuMemHostAlloc")
	cuMemFreeHost               = driverLib.fn("cuMemFreeHost")
	cuMemHostGetDevicePointer   = driverLib.fn("cuMemHostGetDevicePointer_v2")
	cuStreamCreate              = driverLib.fn("cuStreamCreate")
	cuStreamSynchronize         = driverLib.fn("cuStreamSynchronize")
	cuStreamQuery               = driverLib.fn("cuStreamQuery")
	cuStreamDestroy             = driverLib.fn("cuStreamDestroy_v2")
	cuStreamWaitEvent           = driverLib.fn("cuStreamWaitEvent")
	cuStreamBeginCapture        = driverLib.fn("cuStreamBeginCapture_v2")
	cuStreamEndCapture          = driverLib.fn("cuStreamEndCapture")
	cuEventCreate               = driverLib.fn("cuEventCreate")
	cuEventRecord               = driverLib.fn("cuEventRecord")
	cuEventSynchronize          = driverLib.fn("cuEventSynchronize")
	cuEventQuery                = driverLib.fn("cuEventQuery")
	cuEventDestroy              = driverLib.fn("cuEventDestroy_v2")
	cuEventElapsedTime          = driverLib.fn("cuEventElapsedTime_v2", "cuEventElapsedTime")
	cuIpcGetMemHandle           = driverLib.fn("cuIpcGetMemHandle")
	cuIpcOpenMemHandle          = driverLib.fn("cuIpcOpenMemHandle_v2")
	cuIpcCloseMemHandle         = driverLib.fn("cuIpcCloseMemHandle")
	cuModuleLoadData            = driverLib.fn("cuModuleLoadData")
	cuModuleGetFunction         = driverLib.fn("cuModuleGetFunction")
	cuModuleUnload              = driverLib.fn("cuModuleUnload")
	cuFuncSetAttribute          = driverLib.fn("cuFuncSetAttribute")
	cuLaunchKernel              = driverLib.fn("cuLaunchKernel")
	cuLaunchKernelEx            = driverLib.fn("cuLaunchKernelEx")
	cuGraphInstantiateWithFlags = driverLib.fn("cuGraphInstantiateWithFlags")
	cuGraphLaunch               = driverLib.fn("cuGraphLaunch")
	cuGraphExecDestroy          = driverLib.fn("cuGraphExecDestroy")
	cuGraphDestroy              = driverLib.fn("cuGraphDestroy")
)

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
	if err := resolve(path, h, driverLib.funcs); err != nil {
		unresolve(driverLib.funcs)
		return fmt.Errorf("cuda: %w", err)
	}
	return initDriver(path)
}

// BindDriver makes the functions sym finds by name (0 where there is none) the CUDA driver and calls cuInit(0),
// as Load does with the library it opens; path names the driver in messages. A test stands Go functions in for
// a driver so (purego.NewCallback).
func BindDriver(path string, sym func(name string) uintptr) error {
	driver.Lock()
	defer driver.Unlock()
	if err := resolveSym(path, sym, driverLib.funcs); err != nil {
		unresolve(driverLib.funcs)
		return fmt.Errorf("cuda: %w", err)
	}
	return initDriver(path)
}

// initDriver calls cuInit(0) on the resolved driver at path; the caller holds driver's lock.
func initDriver(path string) error {
	if err := cuInit.call(0); err != nil {
		unresolve(driverLib.funcs)
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
