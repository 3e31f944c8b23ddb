package hostengine

import (
	"math"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Futex operations on words of shared memory (no FUTEX_PRIVATE_FLAG: the waker may be another process).
const (
	futexWaitOp = 0
	futexWakeOp = 1
)

// futexWait sleeps while *addr == val, at most d, or until futexWake.
func futexWait(addr *atomic.Uint32, val uint32, d time.Duration) {
	ts := syscall.NsecToTimespec(max(int64(d), 1))
	// EAGAIN (the word changed), EINTR and ETIMEDOUT all mean: look again.
	_, _, _ = syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWaitOp, uintptr(val),
		uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// futexWake wakes every sleeper on addr.
func futexWake(addr *atomic.Uint32) {
	_, _, _ = syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWakeOp, math.MaxInt32, 0, 0, 0)
}
