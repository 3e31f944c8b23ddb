package gpurt

import (
	"fmt"
	"strings"
	"unsafe"
)

// Error is a failed call of the GPU runtime or its compiler.
type Error struct {
	Call string // the C function, e.g. "cuMemAlloc" or "hipMalloc"
	Code int    // CUresult, hipError_t, nvrtcResult or hiprtcResult
	Name string // e.g. "CUDA_ERROR_OUT_OF_MEMORY" or "hipErrorOutOfMemory"
	Msg  string // the library's description, e.g. "out of memory"
}

func (e *Error) Error() string {
	if e.Msg == "" || e.Msg == e.Name {
		return fmt.Sprintf("%s: %s", e.Call, e.Name)
	}
	return fmt.Sprintf("%s: %s (%s)", e.Call, e.Name, e.Msg)
}

// Result codes the package acts on, the same in CUresult and hipError_t (but the stub's, which is CUDA's).
const (
	errorInvalidValue        = 1
	errorNoDevice            = 100
	errorStubLibrary         = 34
	errorNotReady            = 600
	errorPeerAccessAlreadyOn = 704
)

// driverError builds an *Error for code, asking the runtime for its name and text.
func driverError(call string, code int) *Error {
	e := &Error{Call: strings.TrimSuffix(call, "_v2"), Code: code}
	if Loaded() == HIP {
		e.Name = fmt.Sprintf("hipError%d", code)
		e.Name = cmpOr(cStringResult(hipGetErrorName, code), e.Name)
		e.Msg = cStringResult(hipGetErrorString, code)
		return e
	}
	e.Name = fmt.Sprintf("CUDA_ERROR_%d", code)
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

// cStringResult calls f(code), which returns a C string in static memory (hipGetErrorName,
// hiprtcGetErrorString); "" where f is not bound or returns NULL.
func cStringResult(f *cfunc, code int) string {
	if f.addr == 0 {
		return ""
	}
	r := f.raw(uintptr(code))
	if p := *(**byte)(unsafe.Pointer(&r)); p != nil {
		return goString(p)
	}
	return ""
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
