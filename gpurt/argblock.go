package gpurt

import (
	"fmt"
	"syscall"
	"unsafe"
)

// ArgBlock is the parameter block of launches whose kernel takes one struct by value, kept outside the Go heap
// so that a launch neither allocates nor pins: its first word points at the struct's copy after it. The
// driver copies the parameters during cuLaunchKernel, so the block is free again when the launch returns; one
// goroutine at a time launches with a block.
type ArgBlock struct{ mem []byte }

const (
	argBlockBytes  = 4096
	argBlockStruct = 16 // offset of the struct, aligned for any kernel parameter
	// The block's tail holds LaunchStructEarly's launch configuration and its one attribute.
	argBlockConfig = argBlockBytes - int(unsafe.Sizeof(launchConfig{})) - int(unsafe.Sizeof(launchAttribute{}))
)

// launchConfig is CUlaunchConfig, launchAttribute CUlaunchAttribute (cuda.h, CUDA 12 and 13).
type launchConfig struct {
	grid, block [3]uint32
	sharedMem   uint32
	_           uint32
	stream      uintptr
	attrs       uintptr
	numAttrs    uint32
	_           uint32
}

type launchAttribute struct {
	id    uint32
	_     uint32
	value [64]byte
}

const cuLaunchAttributeProgrammaticStreamSerialization = 6

// NewArgBlock maps a block whose first word points at its struct; Free unmaps it.
func NewArgBlock() (*ArgBlock, error) {
	mem, err := syscall.Mmap(-1, 0, argBlockBytes, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil, fmt.Errorf("gpu runtime: kernel parameter block: mmap: %w", err)
	}
	*(*uintptr)(unsafe.Pointer(&mem[0])) = uintptr(unsafe.Pointer(&mem[argBlockStruct]))
	return &ArgBlock{mem: mem}, nil
}

func (b *ArgBlock) Free() error {
	if b == nil || b.mem == nil {
		return nil
	}
	err := syscall.Munmap(b.mem)
	b.mem = nil
	return err
}

// put copies *a into the block and returns the parameter array for cuLaunchKernel. T holds no Go pointers.
func put[T any](b *ArgBlock, a *T) (uintptr, error) {
	size := int(unsafe.Sizeof(*a))
	if size > argBlockConfig-argBlockStruct {
		return 0, fmt.Errorf("gpu runtime: a %d-byte kernel argument exceeds the %d-byte block", size, argBlockConfig-argBlockStruct)
	}
	copy(b.mem[argBlockStruct:argBlockStruct+size], unsafe.Slice((*byte)(unsafe.Pointer(a)), size))
	return uintptr(unsafe.Pointer(&b.mem[0])), nil
}

// LaunchStruct enqueues kernel f on s with *a (a struct without Go pointers) as its only argument, through b.
func LaunchStruct[T any](f Function, grid, block [3]uint32, sharedMem uint32, s Stream, b *ArgBlock, a *T) error {
	if cuLaunchKernel.addr == 0 {
		return errNotLoaded
	}
	params, err := put(b, a)
	if err != nil {
		return err
	}
	return launchKernel(f, grid, block, sharedMem, s, params)
}

// LaunchStructEarly is LaunchStruct with programmatic dependent launch: the GPU may start f while the kernel
// ahead of it on s still runs, which hides a launch's latency in a chain of small kernels. f must wait for
// that kernel (griddepcontrol.wait: kernels/prelude.cuh's grid_dep_sync) before it touches memory.
//
// Only where the device's Caps.EarlyLaunch says so.
func LaunchStructEarly[T any](f Function, grid, block [3]uint32, sharedMem uint32, s Stream, b *ArgBlock, a *T) error {
	if cuLaunchKernelEx.addr == 0 {
		if rt := Loaded(); rt != CUDA {
			return fmt.Errorf("gpu runtime: %s has no early (programmatic dependent) launch", rt.Title())
		}
		return errNotLoaded
	}
	params, err := put(b, a)
	if err != nil {
		return err
	}
	cfg := (*launchConfig)(unsafe.Pointer(&b.mem[argBlockConfig]))
	attr := (*launchAttribute)(unsafe.Pointer(&b.mem[argBlockConfig+int(unsafe.Sizeof(launchConfig{}))]))
	*attr = launchAttribute{id: cuLaunchAttributeProgrammaticStreamSerialization}
	attr.value[0] = 1 // programmaticStreamSerializationAllowed, an int
	*cfg = launchConfig{grid: grid, block: block, sharedMem: sharedMem, stream: uintptr(s),
		attrs: uintptr(unsafe.Pointer(attr)), numAttrs: 1}
	return cuLaunchKernelEx.call(uintptr(unsafe.Pointer(cfg)), uintptr(f), params, 0)
}
