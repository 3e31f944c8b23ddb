package gpurt

import (
	"fmt"
	"runtime"
	"unsafe"
)

// DevicePtr is a device address (CUdeviceptr, or a HIP device pointer).
type DevicePtr uintptr

// MemAlloc allocates device memory in the current context.
func MemAlloc(bytes int64) (DevicePtr, error) {
	var p DevicePtr
	err := cuMemAlloc.call(uintptr(unsafe.Pointer(&p)), uintptr(bytes))
	return p, err
}

// MemFree frees memory from MemAlloc.
func MemFree(p DevicePtr) error {
	return cuMemFree.call(uintptr(p))
}

// MemGetInfo returns free and total memory of the current context's device.
func MemGetInfo() (free, total int64, err error) {
	var f, t uint64
	err = cuMemGetInfo.call(uintptr(unsafe.Pointer(&f)), uintptr(unsafe.Pointer(&t)))
	return int64(f), int64(t), err
}

// MemcpyHtoD copies len(src) bytes to dst and returns when the copy is done.
func MemcpyHtoD(dst DevicePtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	if err := cuMemcpyHtoD.call(uintptr(dst), uintptr(unsafe.Pointer(&src[0])), uintptr(len(src))); err != nil {
		return err
	}
	// From pageable memory cuMemcpyHtoD may return once the bytes are staged, before the DMA into dst is done,
	// and work on a non-blocking stream is not ordered after it: wait for the context, as nccl-tests' data
	// initialization ends with cudaDeviceSynchronize. That also matters to times measured next: on the lent
	// H100 (CUDA 13 driver, seen from C too), after copy-engine work (this copy) every stream query of the
	// context costs ~1.2 us more until the context is synchronized; waiting for the legacy stream alone leaves
	// it so. (On the lent H200s a query costs ~1.4 us whatever was done before.)
	return Synchronize()
}

// MemcpyHtoDStream copies len(src) bytes to dst in the order of stream s and returns when s is idle: unlike
// MemcpyHtoD it leaves the context's other streams alone (their kernels may be waiting for work this thread has
// yet to launch).
func MemcpyHtoDStream(dst DevicePtr, src []byte, s Stream) error {
	if len(src) == 0 {
		return nil
	}
	if err := cuMemcpyHtoDAsync.call(uintptr(dst), uintptr(unsafe.Pointer(&src[0])), uintptr(len(src)), uintptr(s)); err != nil {
		return err
	}
	err := s.Synchronize()
	runtime.KeepAlive(src)
	return err
}

// MemcpyHtoDAsync enqueues a copy of bytes from pinned host memory at src to dst on s; captured into a graph,
// the copy reads src at every replay.
func MemcpyHtoDAsync(dst DevicePtr, src unsafe.Pointer, bytes int64, s Stream) error {
	return cuMemcpyHtoDAsync.call(uintptr(dst), uintptr(src), uintptr(bytes), uintptr(s))
}

// MemcpyDtoH copies len(dst) bytes from src and returns when the copy is done.
func MemcpyDtoH(dst []byte, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	return cuMemcpyDtoH.call(uintptr(unsafe.Pointer(&dst[0])), uintptr(src), uintptr(len(dst)))
}

// MemcpyDtoD copies bytes between device buffers.
func MemcpyDtoD(dst, src DevicePtr, bytes int64) error {
	return cuMemcpyDtoD.call(uintptr(dst), uintptr(src), uintptr(bytes))
}

// MemcpyDtoDAsync enqueues a device-to-device copy on s.
func MemcpyDtoDAsync(dst, src DevicePtr, bytes int64, s Stream) error {
	return cuMemcpyDtoDAsync.call(uintptr(dst), uintptr(src), uintptr(bytes), uintptr(s))
}

// MemcpyPeerAsync enqueues a copy between memory of two contexts (devices on HIP) on s.
func MemcpyPeerAsync(dst DevicePtr, dstCtx *Context, src DevicePtr, srcCtx *Context, bytes int64, s Stream) error {
	return cuMemcpyPeerAsync.call(uintptr(dst), dstCtx.h, uintptr(src), srcCtx.h, uintptr(bytes), uintptr(s))
}

// MemsetD8 sets n bytes at p to v.
func MemsetD8(p DevicePtr, v byte, n int64) error {
	return cuMemsetD8.call(uintptr(p), uintptr(v), uintptr(n))
}

// MemsetD32Async enqueues setting n 32-bit words at p to v on s.
func MemsetD32Async(p DevicePtr, v uint32, n int64, s Stream) error {
	return cuMemsetD32Async.call(uintptr(p), uintptr(v), uintptr(n), uintptr(s))
}

const (
	memHostAllocPortable  = 0x01
	memHostAllocDeviceMap = 0x02
)

// HostAllocMapped allocates pinned host memory that every context can use and
// that kernels reach through dev (for flags the host writes and kernels poll).
func HostAllocMapped(bytes int64) (host unsafe.Pointer, dev DevicePtr, err error) {
	if err = cuMemHostAlloc.call(uintptr(unsafe.Pointer(&host)), uintptr(bytes), memHostAllocPortable|memHostAllocDeviceMap); err != nil {
		return nil, 0, err
	}
	if err = cuMemHostGetDevicePointer.call(uintptr(unsafe.Pointer(&dev)), uintptr(host), 0); err != nil {
		if ferr := HostFree(host); ferr != nil {
			err = fmt.Errorf("%w (and freeing: %v)", err, ferr)
		}
		return nil, 0, err
	}
	return host, dev, nil
}

// HostFree frees memory from HostAllocMapped.
func HostFree(host unsafe.Pointer) error {
	return cuMemFreeHost.call(uintptr(host))
}

// MemKind is where AllocKind places memory.
type MemKind int

const (
	MemDevice     MemKind = iota // device memory (cuMemAlloc)
	MemHostMapped                // pinned host memory mapped for every context (cuMemHostAlloc)
	MemManaged                   // managed memory (cuMemAllocManaged, attached globally)
	// MemFine is device memory that peers and the host see coherently, as rccl-tests' -Y fine allocates it:
	// uncached (hipDeviceMallocUncached) from HIP 5.7, fine-grained before; plain device memory on CUDA.
	MemFine
)

// hipExtMallocWithFlags flags (hip_runtime_api.h).
const (
	hipDeviceMallocFinegrained = 0x1
	hipDeviceMallocUncached    = 0x3
)

const memAttachGlobal = 0x1

// AllocKind allocates bytes of kind in the current context; it returns the address kernels and copies use and
// the function that frees the memory.
func AllocKind(kind MemKind, bytes int64) (DevicePtr, func() error, error) {
	switch kind {
	case MemHostMapped:
		host, dev, err := HostAllocMapped(bytes)
		if err != nil {
			return 0, nil, err
		}
		return dev, func() error { return HostFree(host) }, nil
	case MemManaged:
		var p DevicePtr
		if err := cuMemAllocManaged.call(uintptr(unsafe.Pointer(&p)), uintptr(bytes), memAttachGlobal); err != nil {
			return 0, nil, err
		}
		return p, func() error { return MemFree(p) }, nil
	case MemFine:
		if Loaded() != HIP {
			break
		}
		flags := uintptr(hipDeviceMallocUncached)
		if hipVersion() < 507 {
			flags = hipDeviceMallocFinegrained
		}
		var p DevicePtr
		if err := hipExtMallocWithFlags.call(uintptr(unsafe.Pointer(&p)), uintptr(bytes), flags); err != nil {
			return 0, nil, err
		}
		return p, func() error { return MemFree(p) }, nil
	}
	p, err := MemAlloc(bytes)
	if err != nil {
		return 0, nil, err
	}
	return p, func() error { return MemFree(p) }, nil
}
