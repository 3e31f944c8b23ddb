package gpurt

import (
	"fmt"
	"strings"
	"unsafe"
)

// Error is a failed CUDA driver or NVRTC call.
type Error struct {
	Call string // the C function, e.g. "cuMemAlloc"
	Code int    // CUresult or nvrtcResult
	Name string // e.g. "CUDA_ERROR_OUT_OF_MEMORY"
	Msg  string // the library's description, e.g. "out of memory"
}

func (e *Error) Error() string {
	if e.Msg == "" {
		return fmt.Sprintf("%s: %s", e.Call, e.Name)
	}
	return fmt.Sprintf("%s: %s (%s)", e.Call, e.Name, e.Msg)
}

// CUresult codes the package itself acts on.
const (
	errorStubLibrary         = 34
	errorNotReady            = 600
	errorPeerAccessAlreadyOn = 704
)

// driverError builds an *Error for code, asking the driver for its name and text.
func driverError(call string, code int) *Error {
	e := &Error{Call: strings.TrimSuffix(call, "_v2"), Code: code, Name: fmt.Sprintf("CUDA_ERROR_%d", code)}
	var p *byte
	if cuGetErrorName.addr != 0 && int32(cuGetErrorName.raw(uintptr(code), uintptr(unsafe.Pointer(&p)))) == 0 && p != nil {
		e.Name = goString(p)
	}
	p = nil
	if cuGetErrorString.addr != 0 && int32(cuGetErrorString.raw(uintptr(code), uintptr(unsafe.Pointer(&p)))) == 0 && p != nil {
		e.Msg = goString(p)
	}
	return e
}

// goString copies a NUL-terminated C string.
func goString(p *byte) string {
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return strings.Clone(unsafe.String(p, n))
}

// cString returns s as a NUL-terminated byte slice.
func cString(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}
