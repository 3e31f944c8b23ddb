// Package gpurt is the GPU runtime layer: the CUDA driver API and NVRTC, or HIP and hiprtc, bound through purego
// (no cgo) and chosen at run time (Load). Both runtimes pass through one API: each entry point is declared
// once with its CUDA and its HIP name, and the few calls that differ branch on the loaded runtime. Features
// that only some GPUs have are told by Device.Caps, never by a compute-capability number (AMD's gfx942 reports
// 9.4).
//
// Every call returns *Error naming the C function on failure. The current device is per OS thread (a context
// on CUDA, the device ordinal on HIP): drive each GPU from one goroutine that called runtime.LockOSThread and
// Context.SetCurrent.
package gpurt

import (
	"unsafe"
)

// driverLib is libcuda or libamdhip64.
var driverLib library

func init() { driverLib.newError = driverError }

var (
	cuInit                      = driverLib.fn("cuInit", "hipInit")
	cuDriverGetVersion          = driverLib.fn("cuDriverGetVersion", "hipDriverGetVersion")
	hipRuntimeGetVersion        = driverLib.fn("", "hipRuntimeGetVersion")
	cuGetErrorName              = driverLib.fn("cuGetErrorName", "")
	cuGetErrorString            = driverLib.fn("cuGetErrorString", "")
	hipGetErrorName             = driverLib.fn("", "hipGetErrorName")
	hipGetErrorString           = driverLib.fn("", "hipGetErrorString")
	cuDeviceGetCount            = driverLib.fn("cuDeviceGetCount", "hipGetDeviceCount")
	cuDeviceGet                 = driverLib.fn("cuDeviceGet", "")
	cuDeviceGetName             = driverLib.fn("cuDeviceGetName", "hipDeviceGetName")
	cuDeviceGetPCIBusId         = driverLib.fn("cuDeviceGetPCIBusId", "hipDeviceGetPCIBusId")
	cuDeviceGetAttribute        = driverLib.fn("cuDeviceGetAttribute", "hipDeviceGetAttribute")
	hipGetDeviceProperties      = driverLib.fn("", "hipGetDevicePropertiesR0600|hipGetDeviceProperties")
	cuDeviceTotalMem            = driverLib.fn("cuDeviceTotalMem_v2", "hipDeviceTotalMem")
	cuDeviceCanAccessPeer       = driverLib.fn("cuDeviceCanAccessPeer", "hipDeviceCanAccessPeer")
	cuDevicePrimaryCtxRetain    = driverLib.fn("cuDevicePrimaryCtxRetain", "")
	cuDevicePrimaryCtxRelease   = driverLib.fn("cuDevicePrimaryCtxRelease_v2", "")
	cuCtxSetCurrent             = driverLib.fn("cuCtxSetCurrent", "hipSetDevice")
	cuCtxSynchronize            = driverLib.fn("cuCtxSynchronize", "hipDeviceSynchronize")
	cuCtxEnablePeerAccess       = driverLib.fn("cuCtxEnablePeerAccess", "hipDeviceEnablePeerAccess")
	cuMemAlloc                  = driverLib.fn("cuMemAlloc_v2", "hipMalloc")
	hipExtMallocWithFlags       = driverLib.fn("", "hipExtMallocWithFlags")
	cuMemFree                   = driverLib.fn("cuMemFree_v2", "hipFree")
	cuMemAllocManaged           = driverLib.fn("cuMemAllocManaged", "hipMallocManaged")
	cuMemGetInfo                = driverLib.fn("cuMemGetInfo_v2", "hipMemGetInfo")
	cuMemcpyHtoD                = driverLib.fn("cuMemcpyHtoD_v2", "hipMemcpyHtoD")
	cuMemcpyHtoDAsync           = driverLib.fn("cuMemcpyHtoDAsync_v2", "hipMemcpyHtoDAsync")
	cuMemcpyDtoH                = driverLib.fn("cuMemcpyDtoH_v2", "hipMemcpyDtoH")
	cuMemcpyDtoD                = driverLib.fn("cuMemcpyDtoD_v2", "hipMemcpyDtoD")
	cuMemcpyDtoDAsync           = driverLib.fn("cuMemcpyDtoDAsync_v2", "hipMemcpyDtoDAsync")
	cuMemcpyPeerAsync           = driverLib.fn("cuMemcpyPeerAsync", "hipMemcpyPeerAsync")
	cuMemsetD8                  = driverLib.fn("cuMemsetD8_v2", "hipMemsetD8")
	cuMemsetD32Async            = driverLib.fn("cuMemsetD32Async", "hipMemsetD32Async")
	cuMemHostAlloc              = driverLib.fn("cuMemHostAlloc", "hipHostMalloc")
	cuMemFreeHost               = driverLib.fn("cuMemFreeHost", "hipHostFree")
	cuMemHostGetDevicePointer   = driverLib.fn("cuMemHostGetDevicePointer_v2", "hipHostGetDevicePointer")
	cuStreamCreate              = driverLib.fn("cuStreamCreate", "hipStreamCreateWithFlags")
	cuStreamSynchronize         = driverLib.fn("cuStreamSynchronize", "hipStreamSynchronize")
	cuStreamQuery               = driverLib.fn("cuStreamQuery", "hipStreamQuery")
	cuStreamDestroy             = driverLib.fn("cuStreamDestroy_v2", "hipStreamDestroy")
	cuStreamWaitEvent           = driverLib.fn("cuStreamWaitEvent", "hipStreamWaitEvent")
	cuStreamBeginCapture        = driverLib.fn("cuStreamBeginCapture_v2", "hipStreamBeginCapture")
	cuStreamEndCapture          = driverLib.fn("cuStreamEndCapture", "hipStreamEndCapture")
	cuEventCreate               = driverLib.fn("cuEventCreate", "hipEventCreateWithFlags")
	cuEventRecord               = driverLib.fn("cuEventRecord", "hipEventRecord")
	cuEventSynchronize          = driverLib.fn("cuEventSynchronize", "hipEventSynchronize")
	cuEventQuery                = driverLib.fn("cuEventQuery", "hipEventQuery")
	cuEventDestroy              = driverLib.fn("cuEventDestroy_v2", "hipEventDestroy")
	cuEventElapsedTime          = driverLib.fn("cuEventElapsedTime_v2|cuEventElapsedTime", "hipEventElapsedTime")
	cuIpcGetMemHandle           = driverLib.fn("cuIpcGetMemHandle", "hipIpcGetMemHandle")
	cuIpcOpenMemHandle          = driverLib.fn("cuIpcOpenMemHandle_v2", "hipIpcOpenMemHandle")
	cuIpcCloseMemHandle         = driverLib.fn("cuIpcCloseMemHandle", "hipIpcCloseMemHandle")
	cuModuleLoadData            = driverLib.fn("cuModuleLoadData", "hipModuleLoadData")
	cuModuleGetFunction         = driverLib.fn("cuModuleGetFunction", "hipModuleGetFunction")
	cuModuleUnload              = driverLib.fn("cuModuleUnload", "hipModuleUnload")
	cuFuncSetAttribute          = driverLib.fn("cuFuncSetAttribute", "")
	cuLaunchKernel              = driverLib.fn("cuLaunchKernel", "hipModuleLaunchKernel")
	cuLaunchKernelEx            = driverLib.fn("cuLaunchKernelEx", "")
	cuGraphInstantiateWithFlags = driverLib.fn("cuGraphInstantiateWithFlags", "hipGraphInstantiateWithFlags")
	cuGraphLaunch               = driverLib.fn("cuGraphLaunch", "hipGraphLaunch")
	cuGraphExecDestroy          = driverLib.fn("cuGraphExecDestroy", "hipGraphExecDestroy")
	cuGraphDestroy              = driverLib.fn("cuGraphDestroy", "hipGraphDestroy")
)

// DriverVersion returns the driver's version: the CUDA driver API version (13000 for CUDA 13.0), or HIP's
// driver version.
func DriverVersion() (int, error) {
	var v int32
	err := cuDriverGetVersion.call(uintptr(unsafe.Pointer(&v)))
	return int(v), err
}
