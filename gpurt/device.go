package gpurt

import (
	"bytes"
	"fmt"
	"unsafe"
)

// Device is a GPU's ordinal among those the process sees.
type Device int

// DeviceAttribute is a device property; Attribute asks the runtime for it by that runtime's number.
type DeviceAttribute int32

// Device attributes.
const (
	MaxThreadsPerBlock DeviceAttribute = iota
	MaxSharedMemoryPerBlock
	WarpSize
	ClockRate // kHz
	MultiprocessorCount
	CanMapHostMemory
	ConcurrentKernels
	PCIBusIDAttr
	PCIDeviceID
	MemoryClockRate      // kHz
	GlobalMemoryBusWidth // bits
	L2CacheSize          // bytes
	MaxThreadsPerMultiprocessor
	AsyncEngineCount
	UnifiedAddressing
	PCIDomainID
	ComputeCapabilityMajor
	ComputeCapabilityMinor
	MaxSharedMemoryPerMultiprocessor
	CooperativeLaunch
	MaxSharedMemoryPerBlockOptin
	deviceAttributes
)

// attributeNumbers are each attribute's CUdevice_attribute and hipDeviceAttribute_t values (cuda.h;
// hip_runtime_api.h, the same from HIP 5.2 to 7.x; checked against the installed header by a test).
var attributeNumbers = [deviceAttributes][runtimes]int32{
	MaxThreadsPerBlock:               {CUDA: 1, HIP: 56},
	MaxSharedMemoryPerBlock:          {CUDA: 8, HIP: 74},
	WarpSize:                         {CUDA: 10, HIP: 87},
	ClockRate:                        {CUDA: 13, HIP: 5},
	MultiprocessorCount:              {CUDA: 16, HIP: 63},
	CanMapHostMemory:                 {CUDA: 19, HIP: 3},
	ConcurrentKernels:                {CUDA: 31, HIP: 8},
	PCIBusIDAttr:                     {CUDA: 33, HIP: 67},
	PCIDeviceID:                      {CUDA: 34, HIP: 68},
	MemoryClockRate:                  {CUDA: 36, HIP: 60},
	GlobalMemoryBusWidth:             {CUDA: 37, HIP: 59},
	L2CacheSize:                      {CUDA: 38, HIP: 19},
	MaxThreadsPerMultiprocessor:      {CUDA: 39, HIP: 57},
	AsyncEngineCount:                 {CUDA: 40, HIP: 2},
	UnifiedAddressing:                {CUDA: 41, HIP: 85},
	PCIDomainID:                      {CUDA: 50, HIP: 69},
	ComputeCapabilityMajor:           {CUDA: 75, HIP: 23},
	ComputeCapabilityMinor:           {CUDA: 76, HIP: 61},
	MaxSharedMemoryPerMultiprocessor: {CUDA: 81, HIP: 10002},
	CooperativeLaunch:                {CUDA: 95, HIP: 10},
	MaxSharedMemoryPerBlockOptin:     {CUDA: 97, HIP: 75},
}

// DeviceCount returns the number of GPUs visible to this process; 0 and no error where the runtime has none.
func DeviceCount() (int, error) {
	var n int32
	err := cuDeviceGetCount.call(uintptr(unsafe.Pointer(&n)))
	if e, ok := err.(*Error); ok && e.Code == errorNoDevice {
		return 0, nil
	}
	return int(n), err
}

// handle returns the runtime's device handle: CUdevice, or the ordinal itself on HIP.
func (d Device) handle() (uintptr, error) {
	if Loaded() == HIP {
		return uintptr(d), nil
	}
	var h int32
	err := cuDeviceGet.call(uintptr(unsafe.Pointer(&h)), uintptr(d))
	return uintptr(h), err
}

// Name returns the product name, e.g. "NVIDIA H200" or "AMD Instinct MI300X".
func (d Device) Name() (string, error) {
	return d.stringQuery(cuDeviceGetName)
}

// PCIBusID returns the bus id as the driver gives it, e.g. "0000:00:06.0".
func (d Device) PCIBusID() (string, error) {
	return d.stringQuery(cuDeviceGetPCIBusId)
}

// stringQuery calls f(char* buf, int len, CUdevice) and returns the string.
func (d Device) stringQuery(f *cfunc) (string, error) {
	h, err := d.handle()
	if err != nil {
		return "", err
	}
	var buf [256]byte
	if err := f.call(uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), h); err != nil {
		return "", err
	}
	if i := bytes.IndexByte(buf[:], 0); i >= 0 {
		return string(buf[:i]), nil
	}
	return string(buf[:]), nil
}

// Attribute returns one device attribute.
func (d Device) Attribute(a DeviceAttribute) (int, error) {
	h, err := d.handle()
	if err != nil {
		return 0, err
	}
	if a < 0 || a >= deviceAttributes {
		return 0, fmt.Errorf("gpu runtime: no device attribute %d", a)
	}
	var v int32
	err = cuDeviceGetAttribute.call(uintptr(unsafe.Pointer(&v)), uintptr(attributeNumbers[a][Loaded()]), h)
	return int(v), err
}

// ComputeCapability returns the SM version, e.g. 9, 0 for Hopper (AMD GPUs report one too: 9.4 for gfx942;
// gate nothing on it, see Caps).
func (d Device) ComputeCapability() (major, minor int, err error) {
	if major, err = d.Attribute(ComputeCapabilityMajor); err != nil {
		return 0, 0, err
	}
	minor, err = d.Attribute(ComputeCapabilityMinor)
	return major, minor, err
}

// TotalMem returns the device memory size in bytes.
func (d Device) TotalMem() (int64, error) {
	h, err := d.handle()
	if err != nil {
		return 0, err
	}
	var n uint64
	err = cuDeviceTotalMem.call(uintptr(unsafe.Pointer(&n)), h)
	return int64(n), err
}

// CanAccessPeer reports whether d can map memory of peer.
func (d Device) CanAccessPeer(peer Device) (bool, error) {
	h, err := d.handle()
	if err != nil {
		return false, err
	}
	ph, err := peer.handle()
	if err != nil {
		return false, err
	}
	var v int32
	err = cuDeviceCanAccessPeer.call(uintptr(unsafe.Pointer(&v)), h, ph)
	return v != 0, err
}
