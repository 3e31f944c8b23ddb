package gpurt

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// hipHeaderValues compiles testdata/hipconst.cpp against the installed hip_runtime_api.h and returns what it
// prints; it skips without a C++ compiler or the header.
func hipHeaderValues(t *testing.T) map[string]int {
	t.Helper()
	cxx := ""
	for _, c := range []string{"g++", "clang++", "hipcc"} {
		if p, err := exec.LookPath(c); err == nil {
			cxx = p
			break
		}
	}
	if cxx == "" {
		t.Skip("no C++ compiler (g++, clang++ or hipcc) to read hip_runtime_api.h with")
	}
	found := false
	for _, dir := range []string{"/usr/include", "/opt/rocm/include"} {
		if _, err := os.Stat(filepath.Join(dir, "hip", "hip_runtime_api.h")); err == nil {
			found = true
		}
	}
	if !found {
		t.Skip("no hip/hip_runtime_api.h in /usr/include or /opt/rocm/include (Debian: apt-get install -y libamdhip64-dev)")
	}
	bin := filepath.Join(t.TempDir(), "hipconst")
	out, err := exec.Command(cxx, "-std=c++17", "-D__HIP_PLATFORM_AMD__", "-I/opt/rocm/include", "-o", bin, "testdata/hipconst.cpp").CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cxx, err, out)
	}
	out, err = exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.Atoi(line[i+1:])
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		vals[line[:i]] = v
	}
	return vals
}

// hipAttributeNames are the header's names of the device attributes.
var hipAttributeNames = [deviceAttributes]string{
	MaxThreadsPerBlock: "MaxThreadsPerBlock", MaxSharedMemoryPerBlock: "MaxSharedMemoryPerBlock",
	WarpSize: "WarpSize", ClockRate: "ClockRate", MultiprocessorCount: "MultiprocessorCount",
	CanMapHostMemory: "CanMapHostMemory", ConcurrentKernels: "ConcurrentKernels", PCIBusIDAttr: "PciBusId",
	PCIDeviceID: "PciDeviceId", MemoryClockRate: "MemoryClockRate", GlobalMemoryBusWidth: "MemoryBusWidth",
	L2CacheSize: "L2CacheSize", MaxThreadsPerMultiprocessor: "MaxThreadsPerMultiProcessor",
	AsyncEngineCount: "AsyncEngineCount", UnifiedAddressing: "UnifiedAddressing", PCIDomainID: "PciDomainID",
	ComputeCapabilityMajor: "ComputeCapabilityMajor", ComputeCapabilityMinor: "ComputeCapabilityMinor",
	MaxSharedMemoryPerMultiprocessor: "MaxSharedMemoryPerMultiprocessor", CooperativeLaunch: "CooperativeLaunch",
	MaxSharedMemoryPerBlockOptin: "SharedMemPerBlockOptin",
}

// The numbers gpurt passes to HIP are the installed header's: attributes, flags, result codes, the IPC handle's
// size and hipDeviceProp_t's layouts. A wrong constant fails here.
func TestHIPConstantsMatchHeader(t *testing.T) {
	h := hipHeaderValues(t)
	for a := range deviceAttributes {
		name := "hipDeviceAttribute" + hipAttributeNames[a]
		if got, ok := h[name]; !ok || int32(got) != attributeNumbers[a][HIP] {
			t.Errorf("%s: header %d (present %v), gpurt %d", name, got, ok, attributeNumbers[a][HIP])
		}
	}
	want := map[string]int{
		"hipErrorInvalidValue": errorInvalidValue, "hipErrorNoDevice": errorNoDevice,
		"hipErrorNotReady": errorNotReady, "hipErrorPeerAccessAlreadyEnabled": errorPeerAccessAlreadyOn,
		"hipStreamNonBlocking": streamNonBlocking, "hipEventDisableTiming": eventDisableTiming,
		"hipHostMallocPortable": memHostAllocPortable, "hipHostMallocMapped": memHostAllocDeviceMap,
		"hipMemAttachGlobal": memAttachGlobal, "hipDeviceMallocFinegrained": hipDeviceMallocFinegrained,
		"hipStreamCaptureModeThreadLocal": streamCaptureModeThreadLocal,
		"HIP_IPC_HANDLE_SIZE":             len(IpcMemHandle{}), "sizeof(hipIpcMemHandle_t)": len(IpcMemHandle{}),
		"R0000 size": propsR0000Size, "R0000 gcnArchName": propsR0000ArchName, "gcnArchName bytes": archNameLen,
	}
	if _, ok := h["hipDeviceMallocUncached"]; ok {
		want["hipDeviceMallocUncached"] = hipDeviceMallocUncached
	}
	if _, ok := h["R0600 size"]; ok {
		want["R0600 size"], want["R0600 gcnArchName"] = propsR0600Size, propsR0600ArchName
	}
	// ROCm 5.2's header says 0, later ones 1 (what IpcOpenMemHandle passes first).
	lazy := map[int]bool{ipcMemLazyEnablePeerAccess: true, hipIpcMemLazyOld: true}
	if v, ok := h["hipIpcMemLazyEnablePeerAccess"]; !ok || !lazy[v] {
		t.Errorf("hipIpcMemLazyEnablePeerAccess: header %d (present %v), gpurt passes %d then %d", v, ok, ipcMemLazyEnablePeerAccess, hipIpcMemLazyOld)
	}
	for name, w := range want {
		if got, ok := h[name]; !ok || got != w {
			t.Errorf("%s: header %d (present %v), gpurt %d", name, got, ok, w)
		}
	}
	if propsBuffer <= max(propsR0600Size, propsR0000Size) {
		t.Errorf("properties buffer of %d bytes holds no layout", propsBuffer)
	}
	t.Logf("%d constants of HIP %d's header checked", len(want)+int(deviceAttributes)+1, h["HIP_VERSION_MAJOR"])
}
