package gpurt

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/rcclx-tests/rcclx-tests/pysite"
)

// compilerLib is NVRTC or hiprtc (its own library from ROCm 6, inside libamdhip64 before).
var compilerLib library

func init() { compilerLib.newError = compilerError }

var (
	nvrtcVersion           = compilerLib.fn("nvrtcVersion", "hiprtcVersion")
	nvrtcGetErrorString    = compilerLib.fn("nvrtcGetErrorString", "hiprtcGetErrorString")
	nvrtcCreateProgram     = compilerLib.fn("nvrtcCreateProgram", "hiprtcCreateProgram")
	nvrtcDestroyProgram    = compilerLib.fn("nvrtcDestroyProgram", "hiprtcDestroyProgram")
	nvrtcCompileProgram    = compilerLib.fn("nvrtcCompileProgram", "hiprtcCompileProgram")
	nvrtcGetProgramLogSize = compilerLib.fn("nvrtcGetProgramLogSize", "hiprtcGetProgramLogSize")
	nvrtcGetProgramLog     = compilerLib.fn("nvrtcGetProgramLog", "hiprtcGetProgramLog")
	nvrtcGetCUBINSize      = compilerLib.fn("nvrtcGetCUBINSize", "hiprtcGetCodeSize")
	nvrtcGetCUBIN          = compilerLib.fn("nvrtcGetCUBIN", "hiprtcGetCode")
)

func compilerError(call string, code int) *Error {
	e := &Error{Call: call, Code: code, Name: fmt.Sprintf("%s_ERROR_%d", strings.ToUpper(compilerName()), code)}
	e.Name = cmpOr(cStringResult(nvrtcGetErrorString, code), e.Name)
	return e
}

// compilerName is "nvrtc" or "hiprtc".
func compilerName() string {
	if Loaded() == HIP {
		return "hiprtc"
	}
	return "nvrtc"
}

// nvrtcCandidates lists where LoadCompiler looks for NVRTC, in order.
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

// hiprtcCandidates lists where LoadCompiler looks for hiprtc before libamdhip64 itself (ROCm 5): the one of
// hipLib's major version first, so that the compiler matches the runtime.
func hiprtcCandidates(getenv func(string) string, hipLib string) []string {
	var c []string
	if p := getenv("RCCLX_TESTS_LIBHIPRTC"); p != "" {
		c = append(c, p)
	}
	majors := []string{"7", "6"}
	if m := sonameVersion.FindStringSubmatch(hipLib); m != nil {
		if i := slices.Index(majors, m[1]); i > 0 {
			majors = append([]string{m[1]}, slices.Delete(majors, i, i+1)...)
		} else if i < 0 {
			majors = nil // ROCm 5 and older: hiprtc is in libamdhip64
		}
	}
	for _, v := range majors {
		c = append(c, "libhiprtc.so."+v, filepath.Join(filepath.Dir(hipLib), "libhiprtc.so."+v), "/opt/rocm/lib/libhiprtc.so."+v)
	}
	return slices.Compact(c)
}

// LoadCompiler binds the bound runtime's kernel compiler: NVRTC for CUDA, hiprtc for HIP; safe to call many
// times.
func LoadCompiler() error {
	if err := Load(); err != nil {
		return err
	}
	state.Lock()
	defer state.Unlock()
	if state.compiler != "" {
		return nil
	}
	rt := Loaded()
	if rt == CUDA {
		h, path, err := openFirst("NVRTC (libnvrtc.so.13)", nvrtcCandidates(os.Getenv, filepath.Glob))
		if err != nil {
			return prefix(err)
		}
		if err := resolve(path, rt, dlsym(h), compilerLib.funcs); err != nil {
			unresolve(compilerLib.funcs)
			return prefix(err)
		}
		state.compiler = path
		return nil
	}
	cands := hiprtcCandidates(os.Getenv, state.path)
	h, path, openErr := openFirst("hiprtc", cands)
	if openErr == nil {
		if err := resolve(path, rt, dlsym(h), compilerLib.funcs); err != nil {
			unresolve(compilerLib.funcs)
			return prefix(err)
		}
		state.compiler = path
		return nil
	}
	// ROCm 5: hiprtc is part of libamdhip64.
	if err := resolve(state.path, rt, state.sym, compilerLib.funcs); err != nil {
		unresolve(compilerLib.funcs)
		if len(cands) == 0 {
			return prefix(fmt.Errorf("no hiprtc: %w", err))
		}
		return prefix(fmt.Errorf("no hiprtc: %v; and %w", openErr, err))
	}
	state.compiler = state.path
	return nil
}

// CompilerVersion names the bound compiler and its version, with the runtime's where hiprtc's own says little
// (ROCm 5.2's hiprtc reports 9.0): "nvrtc 13.0", "hiprtc 9.0 HIP 5.2.21153". Compiled kernels are cached under it.
func CompilerVersion() (string, error) {
	var ma, mi int32
	if err := nvrtcVersion.call(uintptr(unsafe.Pointer(&ma)), uintptr(unsafe.Pointer(&mi))); err != nil {
		return "", err
	}
	v := fmt.Sprintf("%s %d.%d", compilerName(), ma, mi)
	if Loaded() == HIP {
		hv, _ := Version()
		v += " " + hv
	}
	return v, nil
}

// hiprtcArchSince is, per AMD GPU architecture, the first ROCm (major*100+minor) whose hiprtc compiles for it,
// taken conservatively. hiprtc aborts the whole process on an architecture it does not know (ROCm 5.2 on gfx940,
// measured) rather than failing, so Compile refuses one before calling it.
var hiprtcArchSince = map[string]int{
	"gfx803": 500, "gfx900": 500, "gfx902": 500, "gfx904": 500, "gfx906": 500, "gfx908": 500, "gfx909": 500,
	"gfx90a": 500, "gfx90c": 500, "gfx1010": 500, "gfx1011": 500, "gfx1012": 500, "gfx1030": 500,
	"gfx1031": 500, "gfx1032": 500, "gfx1033": 500, "gfx1034": 500, "gfx1035": 500,
	"gfx1036": 503, "gfx1100": 505, "gfx1101": 505, "gfx1102": 505,
	"gfx940": 600, "gfx941": 600, "gfx942": 600, "gfx1103": 600,
	"gfx1150": 602, "gfx1151": 602, "gfx1200": 604, "gfx1201": 604,
	"gfx950": 700,
}

// newestKnownROCm is the ROCm major whose architectures hiprtcArchSince lists in full: on a newer ROCm an
// architecture it does not list is let through.
const newestKnownROCm = 7

// checkHIPArch refuses an architecture that HIP version ver (major*100+minor) cannot compile for.
func checkHIPArch(arch string, ver int) error {
	base := ArchBase(arch)
	since, ok := hiprtcArchSince[base]
	switch {
	case ok && ver >= since:
		return nil
	case !ok && ver/100 > newestKnownROCm:
		return nil
	case ok:
		return fmt.Errorf("gpu runtime: hiprtc of HIP %d.%d cannot compile for %s (needs ROCm %d.%d or later); not calling it, as it would abort the process", ver/100, ver%100, arch, since/100, since%100)
	}
	return fmt.Errorf("gpu runtime: hiprtc of HIP %d.%d does not know the architecture %s; not calling it, as it would abort the process", ver/100, ver%100, arch)
}

// hiprtcMu keeps hiprtc to one compile at a time: two at once crashed ROCm 5.2's inside hiprtcCompileProgram.
var hiprtcMu sync.Mutex

// baseOptions are the compiler options of every kernel for arch: the target, C++17 and no multiply-add
// contraction (every product and sum rounds on its own, as in package hostengine).
func baseOptions(arch string) []string {
	if Loaded() == HIP {
		return []string{"--offload-arch=" + arch, "-std=c++17", "-ffp-contract=off"}
	}
	return []string{"--gpu-architecture=" + arch, "-default-device", "-std=c++17", "--fmad=false"}
}

// Compile compiles C++ kernel source for arch (Device.Arch: "sm_90", "gfx90a:sramecc+:xnack-") with NVRTC or
// hiprtc, returning a CUBIN or an AMDGPU code object. NVRTC has no default include path: pass -I<dir> for
// toolkit headers. On failure the error holds the compile log (which names the source by name).
func Compile(src, name, arch string, opts ...string) (image []byte, log string, err error) {
	if err := LoadCompiler(); err != nil {
		return nil, "", err
	}
	if Loaded() == HIP {
		if err := checkHIPArch(arch, hipVersion()); err != nil {
			return nil, "", err
		}
		hiprtcMu.Lock()
		defer hiprtcMu.Unlock()
	}
	var prog uintptr
	csrc, cname := cString(src), cString(name)
	if err := nvrtcCreateProgram.call(uintptr(unsafe.Pointer(&prog)), uintptr(unsafe.Pointer(&csrc[0])), uintptr(unsafe.Pointer(&cname[0])), 0, 0, 0); err != nil {
		return nil, "", err
	}
	defer func() { _ = nvrtcDestroyProgram.call(uintptr(unsafe.Pointer(&prog))) }()
	cerr := compileProgram(prog, append(baseOptions(arch), opts...))
	log, err = programLog(prog)
	if err != nil {
		return nil, "", err
	}
	if cerr != nil {
		return nil, log, fmt.Errorf("%s: %w\n%s", compilerName(), cerr, log)
	}
	var size uintptr
	if err := nvrtcGetCUBINSize.call(prog, uintptr(unsafe.Pointer(&size))); err != nil {
		return nil, log, err
	}
	image = make([]byte, size)
	if size > 0 {
		if err := nvrtcGetCUBIN.call(prog, uintptr(unsafe.Pointer(&image[0]))); err != nil {
			return nil, log, err
		}
	}
	return image, log, nil
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
