// Prints the HIP constants gpurt uses, as the installed hip_runtime_api.h defines them: "name value" lines.
// Built and run by gpurt's TestHIPConstantsMatchHeader.
#include <hip/hip_runtime_api.h>

#include <cstddef>
#include <cstdio>

#define ATTR(name) std::printf("hipDeviceAttribute%s %d\n", #name, (int)hipDeviceAttribute##name)
#define VALUE(name) std::printf("%s %ld\n", #name, (long)(name))

int main() {
  ATTR(MaxThreadsPerBlock);
  ATTR(MaxSharedMemoryPerBlock);
  ATTR(WarpSize);
  ATTR(ClockRate);
  ATTR(MultiprocessorCount);
  ATTR(CanMapHostMemory);
  ATTR(ConcurrentKernels);
  ATTR(PciBusId);
  ATTR(PciDeviceId);
  ATTR(MemoryClockRate);
  ATTR(MemoryBusWidth);
  ATTR(L2CacheSize);
  ATTR(MaxThreadsPerMultiProcessor);
  ATTR(AsyncEngineCount);
  ATTR(UnifiedAddressing);
  ATTR(PciDomainID);
  ATTR(ComputeCapabilityMajor);
  ATTR(ComputeCapabilityMinor);
  ATTR(MaxSharedMemoryPerMultiprocessor);
  ATTR(CooperativeLaunch);
  ATTR(SharedMemPerBlockOptin);
  VALUE(hipSuccess);
  VALUE(hipErrorInvalidValue);
  VALUE(hipErrorNoDevice);
  VALUE(hipErrorNotReady);
  VALUE(hipErrorPeerAccessAlreadyEnabled);
  VALUE(hipStreamNonBlocking);
  VALUE(hipEventDisableTiming);
  VALUE(hipHostMallocPortable);
  VALUE(hipHostMallocMapped);
  VALUE(hipMemAttachGlobal);
  VALUE(hipDeviceMallocFinegrained);
#ifdef hipDeviceMallocUncached
  VALUE(hipDeviceMallocUncached);
#endif
  VALUE(hipIpcMemLazyEnablePeerAccess);
  VALUE(hipStreamCaptureModeThreadLocal);
  VALUE(HIP_IPC_HANDLE_SIZE);
  std::printf("sizeof(hipIpcMemHandle_t) %zu\n", sizeof(hipIpcMemHandle_t));
#ifdef HIP_VERSION_MAJOR
  std::printf("HIP_VERSION_MAJOR %d\n", HIP_VERSION_MAJOR);
#endif
#if defined(HIP_VERSION_MAJOR) && HIP_VERSION_MAJOR >= 6
  // ROCm 6 and later: hipDeviceProp_t is the R0600 layout, the unversioned symbol's R0000 has its own name.
  std::printf("R0600 size %zu\n", sizeof(hipDeviceProp_tR0600));
  std::printf("R0600 gcnArchName %zu\n", offsetof(hipDeviceProp_tR0600, gcnArchName));
  std::printf("R0000 size %zu\n", sizeof(hipDeviceProp_tR0000));
  std::printf("R0000 gcnArchName %zu\n", offsetof(hipDeviceProp_tR0000, gcnArchName));
#else
  std::printf("R0000 size %zu\n", sizeof(hipDeviceProp_t));
  std::printf("R0000 gcnArchName %zu\n", offsetof(hipDeviceProp_t, gcnArchName));
#endif
  std::printf("gcnArchName bytes %zu\n", sizeof(((hipDeviceProp_t*)0)->gcnArchName));
  return 0;
}
