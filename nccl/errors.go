package nccl

import (
	"fmt"
	"unsafe"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/internal/ccall"
)

// Result is ncclResult_t.
type Result int32

const (
	Success Result = iota
	UnhandledCudaError
	SystemError
	InternalError
	InvalidArgument
	InvalidUsage
	RemoteError
	InProgress
)

var resultNames = [...]string{"ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
	"ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress"}

func (r Result) String() string {
	if r >= 0 && int(r) < len(resultNames) {
		return resultNames[r]
	}
	return fmt.Sprintf("ncclResult(%d)", int32(r))
}

// Error is a failed library call.
type Error struct {
	Call string // "ncclAllReduce"
	Code Result
	Msg  string // ncclGetErrorString
	Last string // ncclGetLastError, where the library has it
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s: %s (%s)", e.Call, e.Code, e.Msg)
	if e.Last != "" {
		s += ": " + e.Last
	}
	return s
}

// call calls f with integer and pointer arguments and turns a failing result into *Error.
//
//go:uintptrescapes
func (l *Library) call(f *cfunc, args ...uintptr) error {
	if f.addr == 0 {
		return l.unsupported(f)
	}
	return l.check(f.name(), Result(int32(ccall.Call(f.addr, args...))))
}

func (l *Library) unsupported(f *cfunc) error {
	return fmt.Errorf("%s: %s does not export it: %w", f.name(), l.Path, collectives.ErrUnsupported)
}

func (l *Library) check(call string, r Result) error {
	if r == Success {
		return nil
	}
	e := &Error{Call: call, Code: r, Msg: l.ErrorString(r)}
	if l.getLastError.addr != 0 && r != InProgress { // not a failure: no message to fetch
		p := ccall.Call(l.getLastError.addr, 0) // no communicator: the last error of any
		e.Last = oneLine(goString(p))
	}
	return e
}

// ErrorString is ncclGetErrorString.
func (l *Library) ErrorString(r Result) string {
	p := ccall.Call(l.getErrorString.addr, uintptr(r))
	return goString(p)
}

// goString copies a NUL-terminated C string the library owns.
func goString(p uintptr) string {
	if p == 0 {
		return ""
	}
	b := *(**byte)(unsafe.Pointer(&p)) // memory outside Go's heap, read at once
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(b), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(b, n))
}
