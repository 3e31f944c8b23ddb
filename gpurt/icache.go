package gpurt

import (
	"errors"
	"fmt"
)

// ErrNoICacheFlush says the bound runtime has no instruction-cache flush (CUDA: no such instruction).
var ErrNoICacheFlush = errors.New("no instruction-cache flush")

// icacheSource is a kernel whose every wavefront invalidates its compute unit's instruction cache
// (s_icache_inv), then waits out the invalidation, so that the next kernel fetches its code from memory again.
const icacheSource = `extern "C" __global__ void rcclx_icache_flush() {
  asm volatile("s_icache_inv\n\ts_nop 15\n\ts_nop 15\n\ts_nop 15\n\ts_nop 15" ::: "memory");
}
`

// ICacheFlush is the instruction-cache flush kernel loaded on one device, with its launch shape: 60 blocks of
// 64 threads per compute unit, as rccl-tests launches its flush for -F.
type ICacheFlush struct {
	Module      *Module // unload it when done
	Func        Function
	Grid, Block [3]uint32
}

// LoadICacheFlush compiles the flush kernel for d's arch (through the kernel cache) and loads it into the
// current context, which must be d's. Where the runtime cannot flush (CUDA) it returns ErrNoICacheFlush.
func LoadICacheFlush(d Device) (ICacheFlush, error) {
	if Loaded() != HIP {
		return ICacheFlush{}, fmt.Errorf("%w on %s", ErrNoICacheFlush, Loaded().Title())
	}
	arch, err := d.Arch()
	if err != nil {
		return ICacheFlush{}, err
	}
	cus, err := d.Attribute(MultiprocessorCount)
	if err != nil {
		return ICacheFlush{}, err
	}
	image, err := CompileCached(icacheSource, "rcclx_icache_flush.cpp", arch)
	if err != nil {
		return ICacheFlush{}, err
	}
	m, err := ModuleLoadData(image)
	if err != nil {
		return ICacheFlush{}, err
	}
	f, err := m.Function("rcclx_icache_flush")
	if err != nil {
		_ = m.Unload()
		return ICacheFlush{}, err
	}
	return ICacheFlush{Module: m, Func: f, Grid: [3]uint32{uint32(cus) * 60, 1, 1}, Block: [3]uint32{64, 1, 1}}, nil
}

// Call is the flush's launch on s as a C call: the launch function (hipModuleLaunchKernel) and its arguments,
// for lists of calls made in one crossing (internal/ccall). LaunchError turns a status it returns into an error.
func (k ICacheFlush) Call(s Stream) (fn uintptr, args []uintptr) {
	return LaunchCall(k.Func, k.Grid, k.Block, 0, s, 0)
}

// LaunchError is the error of a kernel launch that returned status.
func LaunchError(status int) error { return driverError(cuLaunchKernel.name, status) }

// LaunchCall is the launch of f on s as a C call: the bound runtime's launch function (cuLaunchKernel or
// hipModuleLaunchKernel, which take the same arguments) and its 11 arguments, the parameter array at params
// (0: none). LaunchError turns a status it returns into an error.
func LaunchCall(f Function, grid, block [3]uint32, sharedMem uint32, s Stream, params uintptr) (uintptr, []uintptr) {
	return cuLaunchKernel.addr, []uintptr{uintptr(f),
		uintptr(grid[0]), uintptr(grid[1]), uintptr(grid[2]),
		uintptr(block[0]), uintptr(block[1]), uintptr(block[2]),
		uintptr(sharedMem), uintptr(s), params, 0}
}
