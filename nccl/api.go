package nccl

import (
	"fmt"
	"unsafe"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

// Comm is ncclComm_t.
type Comm uintptr

// UniqueID is ncclUniqueId, passed by value to CommInitRank.
type UniqueID struct{ Internal [128]byte }

// GetUniqueID is ncclGetUniqueId: rank 0 makes it, every rank passes it to CommInitRank.
func (l *Library) GetUniqueID() (UniqueID, error) {
	var id UniqueID
	err := l.call(&l.getUniqueID, uintptr(unsafe.Pointer(&id)))
	return id, err
}

// CommInitRank is ncclCommInitRank, on the current device (the context current on this thread).
func (l *Library) CommInitRank(nranks int, id UniqueID, rank int) (Comm, error) {
	var c Comm
	err := l.check("ncclCommInitRank", l.commInitRank(&c, int32(nranks), id, int32(rank)))
	return c, err
}

// CommInitRankConfig is ncclCommInitRankConfig, on the current device. With a non-blocking cfg it may return
// the communicator together with an error for which IsInProgress holds: initialization goes on in the
// library's threads. Libraries before NCCL 2.14 lack it (Has("ncclCommInitRankConfig") is false) and report
// collectives.ErrUnsupported.
func (l *Library) CommInitRankConfig(nranks int, id UniqueID, rank int, cfg *Config) (Comm, error) {
	if l.commInitRankConfig == nil {
		return 0, fmt.Errorf("ncclCommInitRankConfig: %s does not export it: %w", l.Path, collectives.ErrUnsupported)
	}
	var c Comm
	err := l.check("ncclCommInitRankConfig", l.commInitRankConfig(&c, int32(nranks), id, int32(rank), cfg))
	return c, err
}

// CommInitAll is ncclCommInitAll: one communicator per listed device, all in this process.
func (l *Library) CommInitAll(devices []int32) ([]Comm, error) {
	comms := make([]Comm, len(devices))
	err := l.call(&l.commInitAll, uintptr(unsafe.Pointer(&comms[0])), uintptr(len(devices)),
		uintptr(unsafe.Pointer(&devices[0])))
	return comms, err
}

// CommDestroy is ncclCommDestroy.
func (l *Library) CommDestroy(c Comm) error { return l.call(&l.commDestroy, uintptr(c)) }

// CommAbort is ncclCommAbort: frees the communicator without waiting for its operations.
func (l *Library) CommAbort(c Comm) error { return l.call(&l.commAbort, uintptr(c)) }

// CommGetAsyncError is ncclCommGetAsyncError: the communicator's state (Success, InProgress or a failure).
func (l *Library) CommGetAsyncError(c Comm) (Result, error) {
	var r Result
	err := l.call(&l.commGetAsyncError, uintptr(c), uintptr(unsafe.Pointer(&r)))
	return r, err
}

// Check turns a Result from CommGetAsyncError into an error, as a failed call would.
func (l *Library) Check(call string, r Result) error { return l.check(call, r) }

// GroupStart and GroupEnd are ncclGroupStart and ncclGroupEnd (group state is per OS thread). The collectives
// themselves are made through Calls.
func (l *Library) GroupStart() error { return l.call(&l.groupStart) }
func (l *Library) GroupEnd() error   { return l.call(&l.groupEnd) }

// scalarHostImmediate is ncclScalarHostImmediate: the scalar is read from host memory during the call.
const scalarHostImmediate = 1

// RedOpCreatePreMulSum is ncclRedOpCreatePreMulSum with a host scalar: scalar holds one element of dt
// (see Scalar).
func (l *Library) RedOpCreatePreMulSum(scalar []byte, dt DataType, c Comm) (RedOp, error) {
	var op RedOp
	err := l.call(&l.redOpCreatePreMulSum, uintptr(unsafe.Pointer(&op)), uintptr(unsafe.Pointer(&scalar[0])),
		uintptr(dt), scalarHostImmediate, uintptr(c))
	return op, err
}

// RedOpDestroy is ncclRedOpDestroy.
func (l *Library) RedOpDestroy(op RedOp, c Comm) error {
	return l.call(&l.redOpDestroy, uintptr(op), uintptr(c))
}

// CommRegister is ncclCommRegister: registers a buffer with the communicator and returns its handle.
func (l *Library) CommRegister(c Comm, p gpurt.DevicePtr, bytes int64) (uintptr, error) {
	var h uintptr
	err := l.call(&l.commRegister, uintptr(c), uintptr(p), uintptr(bytes), uintptr(unsafe.Pointer(&h)))
	return h, err
}

// CommDeregister is ncclCommDeregister.
func (l *Library) CommDeregister(c Comm, handle uintptr) error {
	return l.call(&l.commDeregister, uintptr(c), handle)
}

// MemAlloc is ncclMemAlloc (NCCL 2.19+): device memory on the current device, allocated the way the library
// prefers for its peers (nccl-tests allocates its buffers so).
func (l *Library) MemAlloc(bytes int64) (gpurt.DevicePtr, error) {
	var p gpurt.DevicePtr
	err := l.call(&l.memAlloc, uintptr(unsafe.Pointer(&p)), uintptr(bytes))
	return p, err
}

// MemFree is ncclMemFree.
func (l *Library) MemFree(p gpurt.DevicePtr) error { return l.call(&l.memFree, uintptr(p)) }
