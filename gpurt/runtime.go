package gpurt

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Runtime is a GPU runtime: CUDA (libcuda and NVRTC) or HIP (libamdhip64 and hiprtc).
type Runtime int32

const (
	None Runtime = iota // nothing loaded
	CUDA
	HIP
	runtimes
)

func (r Runtime) String() string {
	switch r {
	case CUDA:
		return "cuda"
	case HIP:
		return "hip"
	}
	return "none"
}

// Title is the runtime's name in messages: "CUDA" or "HIP".
func (r Runtime) Title() string {
	if r == None {
		return "no GPU runtime"
	}
	return strings.ToUpper(r.String())
}

// RuntimeVariable forces a runtime: cuda or hip; unset, Load takes CUDA where it finds a GPU, else HIP.
const RuntimeVariable = "RCCLX_TESTS_GPU_RUNTIME"

// loaded is the runtime the process has bound, read on every call that differs by runtime.
var loaded atomic.Int32

// Loaded returns the bound runtime, None before a successful Load.
func Loaded() Runtime { return Runtime(loaded.Load()) }

var state struct {
	sync.Mutex
	path     string               // the driver library (libcuda, libamdhip64), once bound
	handle   uintptr              // its dlopen handle; 0 when bound by Bind
	sym      func(string) uintptr // its symbols (hiprtc lives in libamdhip64 on ROCm 5)
	compiler string               // the compiler library, once bound
	hipVer   int                  // hipRuntimeGetVersion, e.g. 50221153
}

// forced reads RuntimeVariable: None where unset.
func forced(getenv func(string) string) (Runtime, error) {
	switch v := getenv(RuntimeVariable); v {
	case "":
		return None, nil
	case "cuda":
		return CUDA, nil
	case "hip":
		return HIP, nil
	default:
		return None, fmt.Errorf("gpu runtime: %s=%q: want cuda or hip", RuntimeVariable, v)
	}
}

// Load binds a GPU runtime, resolves every entry point and initializes it: the one RCCLX_TESTS_GPU_RUNTIME
// names, else CUDA where its driver loads and sees a GPU, else HIP. A failure names every library tried and
// what each said. It is safe to call many times and from many goroutines; once a runtime is bound it stays.
func Load() error {
	want, err := forced(os.Getenv)
	if err != nil {
		return err
	}
	state.Lock()
	defer state.Unlock()
	if rt := Loaded(); rt != None {
		if want != None && want != rt {
			return fmt.Errorf("gpu runtime: %s=%s, but %s is already loaded in this process (%s)", RuntimeVariable, want, rt.Title(), state.path)
		}
		return nil
	}
	switch want {
	case CUDA:
		return prefix(loadCUDA())
	case HIP:
		return prefix(loadHIP(hipCandidates(os.Getenv)))
	}
	cerr := loadCUDA()
	if cerr == nil {
		return nil
	}
	herr := loadHIP(hipCandidates(os.Getenv))
	if herr == nil {
		return nil
	}
	return fmt.Errorf("gpu runtime: none found: %v; %v", cerr, herr)
}

func prefix(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("gpu runtime: %w", err)
}

// LoadHIP binds HIP from exactly the library lib (a soname such as libamdhip64.so.6 or a path; "" for the usual
// candidates), so that the process holds the one HIP runtime that an NCCL-ABI library (RCCL) links. It fails
// when CUDA, or HIP from another library, is bound already, or RCCLX_TESTS_GPU_RUNTIME says cuda.
func LoadHIP(lib string) error {
	want, err := forced(os.Getenv)
	if err != nil {
		return err
	}
	if want == CUDA {
		return fmt.Errorf("gpu runtime: %s=cuda, but %s needs HIP", RuntimeVariable, cmp.Or(lib, "this"))
	}
	cands := hipCandidates(os.Getenv)
	if lib != "" {
		cands = []string{lib}
	}
	state.Lock()
	defer state.Unlock()
	switch Loaded() {
	case None:
		return prefix(loadHIP(cands))
	case CUDA:
		return fmt.Errorf("gpu runtime: CUDA is already loaded in this process (%s); cannot also load HIP (%s)", state.path, cmp.Or(lib, "libamdhip64"))
	}
	if lib == "" || state.handle == 0 {
		return nil
	}
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return fmt.Errorf("gpu runtime: HIP: %w", err)
	}
	if h != state.handle {
		return fmt.Errorf("gpu runtime: HIP is already loaded from %s; %s is another HIP runtime, and two in one process hand each other invalid handles", state.path, lib)
	}
	return nil
}

// driverCandidates lists where Load looks for libcuda, in order. The toolkit's
// stubs directory is left out on purpose: its libcuda only fails every call.
func driverCandidates(getenv func(string) string) []string {
	var c []string
	if p := getenv("RCCLX_TESTS_LIBCUDA"); p != "" {
		c = append(c, p)
	}
	c = append(c, "libcuda.so.1", "libcuda.so")
	for _, dir := range []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/nvidia/lib64", "/usr/lib/wsl/lib"} {
		c = append(c, filepath.Join(dir, "libcuda.so.1"))
	}
	return c
}

// hipCandidates lists where Load looks for libamdhip64, in order.
func hipCandidates(getenv func(string) string) []string {
	var c []string
	if p := getenv("RCCLX_TESTS_LIBAMDHIP64"); p != "" {
		c = append(c, p)
	}
	for _, v := range []string{"7", "6", "5"} {
		c = append(c, "libamdhip64.so."+v)
	}
	for _, v := range []string{"7", "6", "5"} {
		c = append(c, "/opt/rocm/lib/libamdhip64.so."+v)
	}
	return c
}

// loadCUDA opens libcuda and binds it; state is locked.
func loadCUDA() error {
	h, path, err := openFirst("the CUDA driver (libcuda.so.1)", driverCandidates(os.Getenv))
	if err != nil {
		return fmt.Errorf("CUDA: %w", err)
	}
	return bindLocked(CUDA, path, h, dlsym(h))
}

// loadHIP opens the first candidate libamdhip64 and binds it; state is locked.
func loadHIP(cands []string) error {
	h, path, err := openFirst("HIP (libamdhip64.so.7, .so.6 or .so.5)", cands)
	if err != nil {
		return fmt.Errorf("HIP: %w", err)
	}
	return bindLocked(HIP, path, h, dlsym(h))
}

// Bind binds runtime rt from the library named path whose symbols sym returns (0 for one it lacks), compiler
// included, and initializes it, as Load does for a library it opened. Tests bind a runtime written in Go this way
// (purego callbacks); Unload forgets it again.
func Bind(rt Runtime, path string, sym func(name string) uintptr) error {
	state.Lock()
	defer state.Unlock()
	if cur := Loaded(); cur != None {
		return fmt.Errorf("gpu runtime: %s is already loaded (%s)", cur.Title(), state.path)
	}
	if err := bindLocked(rt, path, 0, sym); err != nil {
		return prefix(err)
	}
	if err := resolve(path, rt, sym, compilerLib.funcs); err != nil {
		unbindLocked()
		return prefix(err)
	}
	state.compiler = path
	return nil
}

// Unload forgets the bound runtime (the library stays mapped), so that the next Load or Bind starts afresh. For
// tests that bind a runtime of their own; nothing of the old runtime may be in use.
func Unload() {
	state.Lock()
	defer state.Unlock()
	unbindLocked()
}

func unbindLocked() {
	unresolve(driverLib.funcs)
	unresolve(compilerLib.funcs)
	loaded.Store(int32(None))
	state.path, state.handle, state.sym, state.compiler, state.hipVer = "", 0, nil, "", 0
}

// bindLocked resolves the driver's entry points for rt through sym and initializes it; state is locked.
func bindLocked(rt Runtime, path string, handle uintptr, sym func(string) uintptr) error {
	if err := resolve(path, rt, sym, driverLib.funcs); err != nil {
		unresolve(driverLib.funcs)
		return fmt.Errorf("%s: %w", rt.Title(), err)
	}
	loaded.Store(int32(rt)) // error texts depend on it from here on
	var ver int32
	if rt == HIP {
		_ = hipRuntimeGetVersion.call(uintptr(unsafe.Pointer(&ver)))
	}
	if err := cuInit.call(0); err != nil {
		unbindLocked()
		if e, ok := err.(*Error); ok && rt == CUDA && e.Code == errorStubLibrary {
			return fmt.Errorf("CUDA: %s is the toolkit's stub, not a driver: %w", path, err)
		}
		if rt == HIP {
			return fmt.Errorf("HIP: %s (HIP %s) found no usable GPU: %w", path, hipVersionString(int(ver)), err)
		}
		return fmt.Errorf("%s: %s: %w", rt.Title(), path, err)
	}
	state.path, state.handle, state.sym, state.hipVer = path, handle, sym, int(ver)
	return nil
}

// hipVersionString turns hipRuntimeGetVersion's number (major*10^7 + minor*10^5 + patch) into "5.2.21153".
func hipVersionString(v int) string {
	if v <= 0 {
		return "of unknown version"
	}
	return fmt.Sprintf("%d.%d.%d", v/10000000, v/100000%100, v%100000)
}

// Library is the path of the bound driver library (libcuda or libamdhip64); "" before Load.
func Library() string {
	state.Lock()
	defer state.Unlock()
	return state.path
}

// Version names the bound runtime and its version: "CUDA 13.0" or "HIP 5.2.21153".
func Version() (string, error) {
	switch Loaded() {
	case CUDA:
		v, err := DriverVersion()
		return fmt.Sprintf("CUDA %d.%d", v/1000, v%1000/10), err
	case HIP:
		state.Lock()
		defer state.Unlock()
		return "HIP " + hipVersionString(state.hipVer), nil
	}
	return "", errNotLoaded
}

// HIPVersion is the bound HIP runtime's version as hipRuntimeGetVersion gives it and HIP_VERSION spells it
// (major*10^7 + minor*10^5 + patch, e.g. 50221153); 0 when unknown or not HIP.
func HIPVersion() int {
	state.Lock()
	defer state.Unlock()
	return state.hipVer
}

// hipVersion is HIPVersion's major*100+minor, e.g. 502; 0 when unknown.
func hipVersion() int {
	v := HIPVersion()
	return v/10000000*100 + v/100000%100
}

var sonameVersion = regexp.MustCompile(`\.so\.(\d+)`)
