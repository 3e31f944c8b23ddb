package nccl

import (
	"unsafe"

	"github.com/rcclx-tests/rcclx-tests/internal/ccall"
)

// KernelTimingRecord is one dispatch as RCCL's kernel timing records it (RCCL_KERNEL_TIMING=1): the device's
// start and end of the kernel in CLOCK_BOOTTIME nanoseconds, the communicator's dispatch sequence number, and
// what the dispatch ran (Func an ncclFunc_t, Datatype an ncclDataType_t, the grid and block widths, how many
// collectives it aggregated). The layout is the library's, which only ever grows at the end.
type KernelTimingRecord struct {
	StartNs, EndNs, Seq, CommHash, Count uint64
	Func, Datatype, NChannels, NThreads  uint32
	Rank                                 int32
	NColls                               uint32
}

// HasKernelTiming reports whether the library exports ncclKernelTimingDrain (RCCL with kernel timing).
func (l *Library) HasKernelTiming() bool { return l.kernelTimingDrain.addr != 0 }

// KernelTimingDrain is ncclKernelTimingDrain: it moves up to len(out) of c's records into out and returns how
// many, the library's running total of records it had to drop, and its result (InvalidUsage where timing is
// not active on c: RCCL_KERNEL_TIMING unset, or no event layout found). The result is returned, not turned
// into an error: rccl-tests reports the last one when nothing was drained.
func (l *Library) KernelTimingDrain(c Comm, out []KernelTimingRecord) (got int, dropped uint64, r Result) {
	if l.kernelTimingDrain.addr == 0 || len(out) == 0 {
		return 0, 0, InvalidUsage
	}
	var n int32
	r = Result(int32(ccall.Call(l.kernelTimingDrain.addr, uintptr(c), uintptr(unsafe.Pointer(&out[0])),
		uintptr(len(out)), uintptr(unsafe.Pointer(&n)), uintptr(unsafe.Pointer(&dropped)))))
	return int(n), dropped, r
}
