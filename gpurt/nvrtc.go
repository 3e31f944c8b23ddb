package gpurt

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/rcclx-tests/rcclx-tests/pysite"
)

var nvrtcLib library

func init() { nvrtcLib.newError = nvrtcError }

var (
	nvrtcVersion           = nvrtcLib.fn("nvrtcVersion")
	nvrtcGetErrorString    = nvrtcLib.fn("nvrtcGetErrorString")
	nvrtcCreateProgram     = nvrtcLib.fn("nvrtcCreateProgram")
	nvrtcDestroyProgram    = nvrtcLib.fn("nvrtcDestroyProgram")
	nvrtcCompileProgram    = nvrtcLib.fn("nvrtcCompileProgram")
	nvrtcGetProgramLogSize = nvrtcLib.fn("nvrtcGetProgramLogSize")
	nvrtcGetProgramLog     = nvrtcLib.fn("nvrtcGetProgramLog")
	nvrtcGetCUBINSize      = nvrtcLib.fn("nvrtcGetCUBINSize")
	nvrtcGetCUBIN          = nvrtcLib.fn("nvrtcGetCUBIN")
)

func nvrtcError(call string, code int) *Error {
	e := &Error{Call: call, Code: code, Name: fmt.Sprintf("NVRTC_ERROR_%d", code)}
	if nvrtcGetErrorString.addr != 0 {
		r := nvrtcGetErrorString.raw(uintptr(code))
		if p := *(**byte)(unsafe.Pointer(&r)); p != nil { // a C string in static memory
			e.Name = goString(p)
		}
	}
	return e
}

var nvrtc struct {
	sync.Mutex
	path string
}

// nvrtcCandidates lists where LoadNVRTC looks, in order.
func nvrtcCandidates(getenv func(string) string, glob func(string) ([]string, error)) []string {
	var c []string
	if p := getenv("RCCLX_TESTS_LIBNVRTC"); p != "" {
		c = append(c, p)
	}
	c = append(c, "libnvrtc.so.13", "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so")
	seen := map[string]bool{}
	for _, site := range pysite.Dirs(getenv, glob) {
		for _, sub := range []string{"nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib"} {
			m, _ := glob(filepath.Join(site, sub, "libnvrtc.so*"))
			for _, lib := range m {
				if !seen[lib] {
					seen[lib] = true
					c = append(c, lib)
				}
			}
		}
	}
	return append(c, "libnvrtc.so.12")
}

// LoadNVRTC opens the NVRTC library; safe to call many times.
func LoadNVRTC() error {
	nvrtc.Lock()
	defer nvrtc.Unlock()
	if nvrtc.path != "" {
		return nil
	}
	h, path, err := openFirst("NVRTC (libnvrtc.so.13)", nvrtcCandidates(os.Getenv, filepath.Glob))
	if err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	if err := resolve(path, h, nvrtcLib.funcs); err != nil {
		unresolve(nvrtcLib.funcs)
		return fmt.Errorf("cuda: %w", err)
	}
	nvrtc.path = path
	return nil
}

// NVRTCVersion returns the NVRTC version, e.g. 13, 0.
func NVRTCVersion() (major, minor int, err error) {
	var ma, mi int32
	err = nvrtcVersion.call(uintptr(unsafe.Pointer(&ma)), uintptr(unsafe.Pointer(&mi)))
	return int(ma), int(mi), err
}

// Compile compiles CUDA C++ source to a CUBIN for sm_<arch> (e.g. 90) with
// -default-device -std=c++17 and opts. NVRTC has no default include path:
// pass -I<dir> for toolkit headers. On failure the error holds the compile log (which names the source by
// name).
func Compile(src, name string, arch int, opts ...string) (cubin []byte, log string, err error) {
	if err := LoadNVRTC(); err != nil {
		return nil, "", err
	}
	var prog uintptr
	csrc, cname := cString(src), cString(name)
	if err := nvrtcCreateProgram.call(uintptr(unsafe.Pointer(&prog)), uintptr(unsafe.Pointer(&csrc[0])), uintptr(unsafe.Pointer(&cname[0])), 0, 0, 0); err != nil {
		return nil, "", err
	}
	defer func() { _ = nvrtcDestroyProgram.call(uintptr(unsafe.Pointer(&prog))) }()
	all := append([]string{fmt.Sprintf("--gpu-architecture=sm_%d", arch), "-default-device", "-std=c++17"}, opts...)
	cerr := compileProgram(prog, all)
	log, err = programLog(prog)
	if err != nil {
		return nil, "", err
	}
	if cerr != nil {
		return nil, log, fmt.Errorf("nvrtc: %w\n%s", cerr, log)
	}
	var size uintptr
	if err := nvrtcGetCUBINSize.call(prog, uintptr(unsafe.Pointer(&size))); err != nil {
		return nil, log, err
	}
	cubin = make([]byte, size)
	if size > 0 {
		if err := nvrtcGetCUBIN.call(prog, uintptr(unsafe.Pointer(&cubin[0]))); err != nil {
			return nil, log, err
		}
	}
	return cubin, log, nil
}

// compileProgram passes opts as a C array of C strings, pinned for the call.
func compileProgram(prog uintptr, opts []string) error {
	var pin runtime.Pinner
	defer pin.Unpin()
	ptrs := make([]*byte, len(opts))
	for i, o := range opts {
		b := cString(o)
		pin.Pin(&b[0])
		ptrs[i] = &b[0]
	}
	return nvrtcCompileProgram.call(prog, uintptr(len(ptrs)), uintptr(unsafe.Pointer(&ptrs[0])))
}

func programLog(prog uintptr) (string, error) {
	var size uintptr
	if err := nvrtcGetProgramLogSize.call(prog, uintptr(unsafe.Pointer(&size))); err != nil {
		return "", err
	}
	if size <= 1 {
		return "", nil
	}
	buf := make([]byte, size)
	if err := nvrtcGetProgramLog.call(prog, uintptr(unsafe.Pointer(&buf[0]))); err != nil {
		return "", err
	}
	return strings.TrimRight(string(buf), "\x00\n"), nil
}
