package gpurt

import (
	"bytes"
	"unsafe"
)

// Device is a CUDA device ordinal.
type Device int

// DeviceAttribute is a CUdevice_attribute.
type DeviceAttribute int32

// Device attributes (values of CUdevice_attribute).
const (
	MaxThreadsPerBlock               DeviceAttribute = 1
	MaxSharedMemoryPerBlock          DeviceAttribute = 8
	WarpSize                         DeviceAttribute = 10
	ClockRate                        DeviceAttribute = 13 // kHz
	MultiprocessorCount              DeviceAttribute = 16
	CanMapHostMemory                 DeviceAttribute = 19
	ConcurrentKernels                DeviceAttribute = 31
	PCIBusIDAttr                     DeviceAttribute = 33
	PCIDeviceID                      DeviceAttribute = 34
	MemoryClockRate                  DeviceAttribute = 36 // kHz
	GlobalMemoryBusWidth             DeviceAttribute = 37 // bits
	L2CacheSize                      DeviceAttribute = 38 // bytes
	MaxThreadsPerMultiprocessor      DeviceAttribute = 39
	AsyncEngineCount                 DeviceAttribute = 40
	UnifiedAddressing                DeviceAttribute = 41
	PCIDomainID                      DeviceAttribute = 50
	ComputeCapabilityMajor           DeviceAttribute = 75
	ComputeCapabilityMinor           DeviceAttribute = 76
	MaxSharedMemoryPerMultiprocessor DeviceAttribute = 81
	CooperativeLaunch                DeviceAttribute = 95
	MaxSharedMemoryPerBlockOptin     DeviceAttribute = 97
)

// DeviceCount returns the number of CUDA devices visible to this process.
func DeviceCount() (int, error) {
	var n int32
	err := cuDeviceGetCount.call(uintptr(unsafe.Pointer(&n)))
	return int(n), err
}

// handle returns the driver's CUdevice for the ordinal.
func (d Device) handle() (uintptr, error) {
	var h int32
	err := cuDeviceGet.call(uintptr(unsafe.Pointer(&h)), uintptr(d))
	return uintptr(h), err
}

// Name returns the product name, e.g. "NVIDIA H200".
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
	var v int32
	err = cuDeviceGetAttribute.call(uintptr(unsafe.Pointer(&v)), uintptr(a), h)
	return int(v), err
}

// ComputeCapability returns the SM version, e.g. 9, 0 for Hopper.
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
