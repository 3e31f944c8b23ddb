package gpurt

import (
	"time"
	"unsafe"
)

// Stream is a CUstream; 0 is the legacy default stream.
type Stream uintptr

const streamNonBlocking = 0x1

// StreamCreate creates a stream in the current context. A non-blocking stream
// does not synchronize with the legacy default stream.
func StreamCreate(nonBlocking bool) (Stream, error) {
	var flags uintptr
	if nonBlocking {
		flags = streamNonBlocking
	}
	var s Stream
	err := cuStreamCreate.call(uintptr(unsafe.Pointer(&s)), flags)
	return s, err
}

// Synchronize waits for all work on s.
func (s Stream) Synchronize() error { return cuStreamSynchronize.call(uintptr(s)) }

// Query reports whether all work on s has finished.
func (s Stream) Query() (done bool, err error) { return query(cuStreamQuery, uintptr(s)) }

// Destroy destroys s.
func (s Stream) Destroy() error { return cuStreamDestroy.call(uintptr(s)) }

// StreamWaitEvent makes future work on s wait for e.
func StreamWaitEvent(s Stream, e Event) error {
	return cuStreamWaitEvent.call(uintptr(s), uintptr(e), 0)
}

// query calls a query function (cuStreamQuery, cuEventQuery) on h: CUDA_ERROR_NOT_READY is (false, nil), and
// costs no error value (a wait polls it in a loop).
func query(f *cfunc, h uintptr) (done bool, err error) {
	if f.addr == 0 {
		return false, errNotLoaded
	}
	switch r := int32(f.raw(h)); r {
	case 0:
		return true, nil
	case errorNotReady:
		return false, nil
	default:
		return false, f.lib.newError(f.name, int(r))
	}
}

// Event is a CUevent.
type Event uintptr

const eventDisableTiming = 0x2

// EventCreate creates an event in the current context; timing events can be
// passed to EventElapsed, others are cheaper to record and wait on.
func EventCreate(timing bool) (Event, error) {
	var flags uintptr
	if !timing {
		flags = eventDisableTiming
	}
	var e Event
	err := cuEventCreate.call(uintptr(unsafe.Pointer(&e)), flags)
	return e, err
}

// Record enqueues e on s.
func (e Event) Record(s Stream) error { return cuEventRecord.call(uintptr(e), uintptr(s)) }

// Synchronize waits until e has completed.
func (e Event) Synchronize() error { return cuEventSynchronize.call(uintptr(e)) }

// Query reports whether e has completed.
func (e Event) Query() (done bool, err error) { return query(cuEventQuery, uintptr(e)) }

// Destroy destroys e.
func (e Event) Destroy() error { return cuEventDestroy.call(uintptr(e)) }

// EventElapsed returns the time between two completed timing events.
func EventElapsed(start, end Event) (time.Duration, error) {
	var ms float32
	if err := cuEventElapsedTime.call(uintptr(unsafe.Pointer(&ms)), uintptr(start), uintptr(end)); err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}
