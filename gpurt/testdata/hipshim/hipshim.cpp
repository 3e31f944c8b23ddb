// hipshim: a HIP runtime and hiprtc over NVIDIA's driver API and NVRTC, for testing the suite's HIP backend end
// to end on NVIDIA GPUs. It defines, with AMD's own declarations (hip_runtime_api.h compiled with
// -D__HIP_PLATFORM_AMD__, so AMD's ABI: 64-byte IPC handles, hipDeviceProp_t's R0000 layout, AMD's attribute
// numbers), the entry points gpurt binds, each forwarding to CUDA:
//   - a device ordinal stands for its primary context: hipSetDevice makes it current on the calling thread;
//   - hipGetDeviceProperties fills gcnArchName with HIPSHIM_ARCH (default gfx90a:sramecc+:xnack-), and the warp
//     size attribute is HIPSHIM_WARP (default 64, as on AMD Instinct), so the engines take their AMD paths;
//   - hiprtc compiles with NVRTC for the current device: --offload-arch=X becomes --gpu-architecture=sm_NN,
//     -ffp-contract=off becomes --fmad=false; the code object is a CUBIN.
// What it cannot show: AMD device code, wave64 hardware, coherence of AMD memory kinds, FNUZ FP8 in hardware.
//
// Build (on the GPU machine), with AMD's headers in <hip> (Debian's libamdhip64-dev: /usr/include):
//   g++ -std=c++17 -O2 -shared -fPIC -D__HIP_PLATFORM_AMD__ -I<hip> -I<cuda>/include hipshim.cpp
//       -o libamdhip64.so.6 -L<cuda>/lib64 -L<cuda>/lib64/stubs -lcuda -lnvrtc
#include <hip/hip_runtime_api.h>
#include <hip/hiprtc.h>

#include <cuda.h>
#include <nvrtc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace {

hipError_t ret(CUresult r) { return (hipError_t)r; }  // CUresult and hipError_t share the codes the suite reads

constexpr int kMaxDevices = 64;
std::mutex ctxMu;
CUcontext primary[kMaxDevices];

CUresult context(int dev, CUcontext* out) {
  if (dev < 0 || dev >= kMaxDevices) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(ctxMu);
  if (!primary[dev]) {
    CUdevice d;
    CUresult r = cuDeviceGet(&d, dev);
    if (r != CUDA_SUCCESS) return r;
    if ((r = cuDevicePrimaryCtxRetain(&primary[dev], d)) != CUDA_SUCCESS) return r;
  }
  *out = primary[dev];
  return CUDA_SUCCESS;
}

// current makes device 0 current on a thread that set none, as HIP's default device.
CUresult current() {
  CUcontext c = nullptr;
  cuCtxGetCurrent(&c);
  if (c) return CUDA_SUCCESS;
  CUresult r = context(0, &c);
  return r == CUDA_SUCCESS ? cuCtxSetCurrent(c) : r;
}

int currentDevice() {
  CUdevice d = 0;
  if (current() != CUDA_SUCCESS || cuCtxGetDevice(&d) != CUDA_SUCCESS) return 0;
  return (int)d;
}

const char* env(const char* name, const char* def) {
  const char* v = std::getenv(name);
  return v && *v ? v : def;
}

CUdevice_attribute cudaAttribute(hipDeviceAttribute_t a, bool* ok) {
  *ok = true;
  switch (a) {
    case hipDeviceAttributeMaxThreadsPerBlock: return CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK;
    case hipDeviceAttributeMaxSharedMemoryPerBlock: return CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK;
    case hipDeviceAttributeClockRate: return CU_DEVICE_ATTRIBUTE_CLOCK_RATE;
    case hipDeviceAttributeMultiprocessorCount: return CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
    case hipDeviceAttributeCanMapHostMemory: return CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY;
    case hipDeviceAttributeConcurrentKernels: return CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS;
    case hipDeviceAttributePciBusId: return CU_DEVICE_ATTRIBUTE_PCI_BUS_ID;
    case hipDeviceAttributePciDeviceId: return CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID;
    case hipDeviceAttributeMemoryClockRate: return CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE;
    case hipDeviceAttributeMemoryBusWidth: return CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH;
    case hipDeviceAttributeL2CacheSize: return CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE;
    case hipDeviceAttributeMaxThreadsPerMultiProcessor: return CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR;
    case hipDeviceAttributeAsyncEngineCount: return CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT;
    case hipDeviceAttributeUnifiedAddressing: return CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING;
    case hipDeviceAttributePciDomainID: return CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID;
    case hipDeviceAttributeComputeCapabilityMajor: return CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR;
    case hipDeviceAttributeComputeCapabilityMinor: return CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR;
    case hipDeviceAttributeMaxSharedMemoryPerMultiprocessor:
      return CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR;
    case hipDeviceAttributeCooperativeLaunch: return CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH;
    case hipDeviceAttributeSharedMemPerBlockOptin: return CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN;
    default: *ok = false; return CU_DEVICE_ATTRIBUTE_WARP_SIZE;
  }
}

struct Names {
  int code;
  const char* name;
};
const Names errorNames[] = {
    {0, "hipSuccess"},           {1, "hipErrorInvalidValue"},     {2, "hipErrorOutOfMemory"},
    {3, "hipErrorNotInitialized"}, {100, "hipErrorNoDevice"},     {101, "hipErrorInvalidDevice"},
    {400, "hipErrorInvalidHandle"}, {500, "hipErrorNotFound"},    {600, "hipErrorNotReady"},
    {700, "hipErrorIllegalAddress"}, {704, "hipErrorPeerAccessAlreadyEnabled"},
};

}  // namespace

extern "C" {

hipError_t hipInit(unsigned int flags) { return ret(cuInit(flags)); }
hipError_t hipDriverGetVersion(int* v) { return ret(cuDriverGetVersion(v)); }
hipError_t hipRuntimeGetVersion(int* v) {
  *v = std::atoi(env("HIPSHIM_VERSION", "60200000"));
  return hipSuccess;
}

const char* hipGetErrorName(hipError_t e) {
  for (const Names& n : errorNames)
    if (n.code == (int)e) return n.name;
  return "hipErrorUnknown";
}
const char* hipGetErrorString(hipError_t e) {
  const char* s = nullptr;
  if (cuGetErrorString((CUresult)e, &s) == CUDA_SUCCESS && s) return s;
  return hipGetErrorName(e);
}

hipError_t hipGetDeviceCount(int* n) { return ret(cuDeviceGetCount(n)); }
hipError_t hipDeviceGetName(char* name, int len, hipDevice_t dev) { return ret(cuDeviceGetName(name, len, dev)); }
hipError_t hipDeviceGetPCIBusId(char* id, int len, int dev) { return ret(cuDeviceGetPCIBusId(id, len, dev)); }
hipError_t hipDeviceTotalMem(size_t* bytes, hipDevice_t dev) { return ret(cuDeviceTotalMem(bytes, dev)); }
hipError_t hipDeviceCanAccessPeer(int* can, int dev, int peer) { return ret(cuDeviceCanAccessPeer(can, dev, peer)); }

hipError_t hipDeviceGetAttribute(int* v, hipDeviceAttribute_t attr, int dev) {
  if (attr == hipDeviceAttributeWarpSize) {
    *v = std::atoi(env("HIPSHIM_WARP", "64"));
    return hipSuccess;
  }
  bool ok;
  CUdevice_attribute a = cudaAttribute(attr, &ok);
  if (!ok) return hipErrorInvalidValue;
  return ret(cuDeviceGetAttribute(v, a, dev));
}

// The unversioned symbol: hipDeviceProp_t of this (ROCm 5) header, the R0000 layout.
hipError_t hipGetDeviceProperties(hipDeviceProp_t* p, int dev) {
  std::memset(p, 0, sizeof(*p));
  CUresult r = cuDeviceGetName(p->name, sizeof(p->name), dev);
  if (r != CUDA_SUCCESS) return ret(r);
  std::snprintf(p->gcnArchName, sizeof(p->gcnArchName), "%s", env("HIPSHIM_ARCH", "gfx90a:sramecc+:xnack-"));
  cuDeviceTotalMem(&p->totalGlobalMem, dev);
  cuDeviceGetAttribute(&p->multiProcessorCount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  cuDeviceGetAttribute(&p->major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  cuDeviceGetAttribute(&p->minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  p->warpSize = std::atoi(env("HIPSHIM_WARP", "64"));
  return hipSuccess;
}

hipError_t hipSetDevice(int dev) {
  CUcontext c;
  CUresult r = context(dev, &c);
  return ret(r == CUDA_SUCCESS ? cuCtxSetCurrent(c) : r);
}
hipError_t hipDeviceSynchronize() {
  CUresult r = current();
  return ret(r == CUDA_SUCCESS ? cuCtxSynchronize() : r);
}
hipError_t hipDeviceEnablePeerAccess(int peer, unsigned int flags) {
  CUcontext c;
  CUresult r = context(peer, &c);
  if (r == CUDA_SUCCESS) r = current();
  return ret(r == CUDA_SUCCESS ? cuCtxEnablePeerAccess(c, flags) : r);
}

hipError_t hipMalloc(void** p, size_t n) {
  CUresult r = current();
  return ret(r == CUDA_SUCCESS ? cuMemAlloc((CUdeviceptr*)p, n) : r);
}
// Fine-grained and uncached memory have no NVIDIA counterpart: plain device memory.
hipError_t hipExtMallocWithFlags(void** p, size_t n, unsigned int) { return hipMalloc(p, n); }
hipError_t hipMallocManaged(void** p, size_t n, unsigned int) {
  CUresult r = current();
  return ret(r == CUDA_SUCCESS ? cuMemAllocManaged((CUdeviceptr*)p, n, CU_MEM_ATTACH_GLOBAL) : r);
}
hipError_t hipFree(void* p) { return ret(cuMemFree((CUdeviceptr)p)); }
hipError_t hipMemGetInfo(size_t* free, size_t* total) {
  CUresult r = current();
  return ret(r == CUDA_SUCCESS ? cuMemGetInfo(free, total) : r);
}
hipError_t hipHostMalloc(void** p, size_t n, unsigned int flags) {
  CUresult r = current();
  if (flags == 0) flags = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP;  // HIP's default is mapped
  return ret(r == CUDA_SUCCESS ? cuMemHostAlloc(p, n, flags) : r);
}
hipError_t hipHostFree(void* p) { return ret(cuMemFreeHost(p)); }
hipError_t hipHostGetDevicePointer(void** d, void* h, unsigned int flags) {
  return ret(cuMemHostGetDevicePointer((CUdeviceptr*)d, h, flags));
}

hipError_t hipMemcpyHtoD(hipDeviceptr_t dst, void* src, size_t n) { return ret(cuMemcpyHtoD((CUdeviceptr)dst, src, n)); }
hipError_t hipMemcpyHtoDAsync(hipDeviceptr_t dst, void* src, size_t n, hipStream_t s) {
  return ret(cuMemcpyHtoDAsync((CUdeviceptr)dst, src, n, (CUstream)s));
}
hipError_t hipMemcpyDtoH(void* dst, hipDeviceptr_t src, size_t n) { return ret(cuMemcpyDtoH(dst, (CUdeviceptr)src, n)); }
hipError_t hipMemcpyDtoD(hipDeviceptr_t dst, hipDeviceptr_t src, size_t n) {
  return ret(cuMemcpyDtoD((CUdeviceptr)dst, (CUdeviceptr)src, n));
}
hipError_t hipMemcpyDtoDAsync(hipDeviceptr_t dst, hipDeviceptr_t src, size_t n, hipStream_t s) {
  return ret(cuMemcpyDtoDAsync((CUdeviceptr)dst, (CUdeviceptr)src, n, (CUstream)s));
}
hipError_t hipMemcpyPeerAsync(void* dst, int dstDev, const void* src, int srcDev, size_t n, hipStream_t s) {
  CUcontext dc, sc;
  CUresult r = context(dstDev, &dc);
  if (r == CUDA_SUCCESS) r = context(srcDev, &sc);
  return ret(r == CUDA_SUCCESS ? cuMemcpyPeerAsync((CUdeviceptr)dst, dc, (CUdeviceptr)src, sc, n, (CUstream)s) : r);
}
hipError_t hipMemsetD8(hipDeviceptr_t p, unsigned char v, size_t n) { return ret(cuMemsetD8((CUdeviceptr)p, v, n)); }
hipError_t hipMemsetD32Async(hipDeviceptr_t p, int v, size_t n, hipStream_t s) {
  return ret(cuMemsetD32Async((CUdeviceptr)p, (unsigned)v, n, (CUstream)s));
}

hipError_t hipStreamCreateWithFlags(hipStream_t* s, unsigned int flags) {
  CUresult r = current();
  return ret(r == CUDA_SUCCESS ? cuStreamCreate((CUstream*)s, flags) : r);
}
hipError_t hipStreamSynchronize(hipStream_t s) { return ret(cuStreamSynchronize((CUstream)s)); }
hipError_t hipStreamQuery(hipStream_t s) { return ret(cuStreamQuery((CUstream)s)); }
hipError_t hipStreamDestroy(hipStream_t s) { return ret(cuStreamDestroy((CUstream)s)); }
hipError_t hipStreamWaitEvent(hipStream_t s, hipEvent_t e, unsigned int flags) {
  return ret(cuStreamWaitEvent((CUstream)s, (CUevent)e, flags));
}
hipError_t hipStreamBeginCapture(hipStream_t s, hipStreamCaptureMode mode) {
  return ret(cuStreamBeginCapture((CUstream)s, (CUstreamCaptureMode)mode));
}
hipError_t hipStreamEndCapture(hipStream_t s, hipGraph_t* g) { return ret(cuStreamEndCapture((CUstream)s, (CUgraph*)g)); }

hipError_t hipEventCreateWithFlags(hipEvent_t* e, unsigned int flags) {
  CUresult r = current();
  return ret(r == CUDA_SUCCESS ? cuEventCreate((CUevent*)e, flags) : r);
}
hipError_t hipEventRecord(hipEvent_t e, hipStream_t s) { return ret(cuEventRecord((CUevent)e, (CUstream)s)); }
hipError_t hipEventSynchronize(hipEvent_t e) { return ret(cuEventSynchronize((CUevent)e)); }
hipError_t hipEventQuery(hipEvent_t e) { return ret(cuEventQuery((CUevent)e)); }
hipError_t hipEventDestroy(hipEvent_t e) { return ret(cuEventDestroy((CUevent)e)); }
hipError_t hipEventElapsedTime(float* ms, hipEvent_t a, hipEvent_t b) {
  return ret(cuEventElapsedTime(ms, (CUevent)a, (CUevent)b));
}

static_assert(sizeof(hipIpcMemHandle_t) == sizeof(CUipcMemHandle), "IPC handles differ in size");
hipError_t hipIpcGetMemHandle(hipIpcMemHandle_t* h, void* p) {
  return ret(cuIpcGetMemHandle((CUipcMemHandle*)h, (CUdeviceptr)p));
}
hipError_t hipIpcOpenMemHandle(void** p, hipIpcMemHandle_t h, unsigned int) {
  CUipcMemHandle ch;
  std::memcpy(&ch, &h, sizeof(ch));
  CUresult r = current();
  return ret(r == CUDA_SUCCESS ? cuIpcOpenMemHandle((CUdeviceptr*)p, ch, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) : r);
}
hipError_t hipIpcCloseMemHandle(void* p) { return ret(cuIpcCloseMemHandle((CUdeviceptr)p)); }

hipError_t hipModuleLoadData(hipModule_t* m, const void* image) {
  CUresult r = current();
  return ret(r == CUDA_SUCCESS ? cuModuleLoadData((CUmodule*)m, image) : r);
}
hipError_t hipModuleGetFunction(hipFunction_t* f, hipModule_t m, const char* name) {
  return ret(cuModuleGetFunction((CUfunction*)f, (CUmodule)m, name));
}
hipError_t hipModuleUnload(hipModule_t m) { return ret(cuModuleUnload((CUmodule)m)); }
hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                                 unsigned int by, unsigned int bz, unsigned int shared, hipStream_t s, void** params,
                                 void** extra) {
  if (shared > 48 * 1024) {  // CUDA's opt-in, which HIP does not have
    CUresult r = cuFuncSetAttribute((CUfunction)f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)shared);
    if (r != CUDA_SUCCESS) return ret(r);
  }
  return ret(cuLaunchKernel((CUfunction)f, gx, gy, gz, bx, by, bz, shared, (CUstream)s, params, extra));
}

hipError_t hipGraphInstantiateWithFlags(hipGraphExec_t* x, hipGraph_t g, unsigned long long flags) {
  return ret(cuGraphInstantiateWithFlags((CUgraphExec*)x, (CUgraph)g, flags));
}
hipError_t hipGraphLaunch(hipGraphExec_t x, hipStream_t s) { return ret(cuGraphLaunch((CUgraphExec)x, (CUstream)s)); }
hipError_t hipGraphExecDestroy(hipGraphExec_t x) { return ret(cuGraphExecDestroy((CUgraphExec)x)); }
hipError_t hipGraphDestroy(hipGraph_t g) { return ret(cuGraphDestroy((CUgraph)g)); }

// hiprtc over NVRTC.
hiprtcResult hiprtcVersion(int* major, int* minor) { return (hiprtcResult)nvrtcVersion(major, minor); }
const char* hiprtcGetErrorString(hiprtcResult r) { return nvrtcGetErrorString((nvrtcResult)r); }
hiprtcResult hiprtcCreateProgram(hiprtcProgram* p, const char* src, const char* name, int n, const char** headers,
                                 const char** names) {
  return (hiprtcResult)nvrtcCreateProgram((nvrtcProgram*)p, src, name, n, headers, names);
}
hiprtcResult hiprtcDestroyProgram(hiprtcProgram* p) { return (hiprtcResult)nvrtcDestroyProgram((nvrtcProgram*)p); }
hiprtcResult hiprtcCompileProgram(hiprtcProgram p, int n, const char** opts) {
  int major = 9, minor = 0, dev = currentDevice();
  cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  std::vector<std::string> out = {"-default-device"};
  for (int i = 0; i < n; i++) {
    std::string o = opts[i];
    if (o.rfind("--offload-arch=", 0) == 0)
      o = "--gpu-architecture=sm_" + std::to_string(major) + std::to_string(minor);
    else if (o == "-ffp-contract=off")
      o = "--fmad=false";
    out.push_back(o);
  }
  std::vector<const char*> c;
  for (const std::string& o : out) c.push_back(o.c_str());
  return (hiprtcResult)nvrtcCompileProgram((nvrtcProgram)p, (int)c.size(), c.data());
}
hiprtcResult hiprtcGetProgramLogSize(hiprtcProgram p, size_t* n) {
  return (hiprtcResult)nvrtcGetProgramLogSize((nvrtcProgram)p, n);
}
hiprtcResult hiprtcGetProgramLog(hiprtcProgram p, char* log) {
  return (hiprtcResult)nvrtcGetProgramLog((nvrtcProgram)p, log);
}
hiprtcResult hiprtcGetCodeSize(hiprtcProgram p, size_t* n) { return (hiprtcResult)nvrtcGetCUBINSize((nvrtcProgram)p, n); }
hiprtcResult hiprtcGetCode(hiprtcProgram p, char* code) { return (hiprtcResult)nvrtcGetCUBIN((nvrtcProgram)p, code); }

}  // extern "C"
