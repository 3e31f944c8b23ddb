package gpurt

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/ebitengine/purego"

	"github.com/rcclx-tests/rcclx-tests/internal/ccall"
)

// openFirst dlopens the first candidate that loads. The error names every
// candidate with the loader's reason, so a user can see what was searched.
func openFirst(what string, candidates []string) (handle uintptr, path string, err error) {
	runtime.LockOSThread() // dlerror is per thread
	defer runtime.UnlockOSThread()
	var tried []string
	for _, c := range candidates {
		h, err := purego.Dlopen(c, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err == nil {
			return h, c, nil
		}
		msg := err.Error()
		if !strings.Contains(msg, c) {
			msg = c + ": " + msg
		}
		tried = append(tried, msg)
	}
	if len(tried) == 0 {
		return 0, "", fmt.Errorf("cannot load %s: no candidate paths", what)
	}
	return 0, "", fmt.Errorf("cannot load %s; tried %s", what, strings.Join(tried, "; "))
}

// library is the set of entry points bound from one shared library: libcuda or libamdhip64 for the driver,
// NVRTC or hiprtc for the compiler.
type library struct {
	funcs    []*cfunc
	newError func(call string, code int) *Error // turns a non-zero result into *Error
}

// fn declares an entry point by its CUDA and its HIP name, each a list of alternatives separated by "|" (later
// ones are fallbacks for older libraries); "" where that runtime has no such entry point.
func (l *library) fn(cuda, hip string) *cfunc {
	f := &cfunc{lib: l, names: [runtimes][]string{CUDA: splitNames(cuda), HIP: splitNames(hip)}}
	f.name = f.firstName(CUDA)
	l.funcs = append(l.funcs, f)
	return f
}

func splitNames(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "|")
}

// cfunc is one C entry point, resolved by the first of the loaded runtime's names the library exports.
type cfunc struct {
	lib   *library
	names [runtimes][]string
	name  string // the name that resolved, or the first name
	addr  uintptr
}

func (f *cfunc) firstName(rt Runtime) string {
	if n := f.names[rt]; len(n) > 0 {
		return n[0]
	}
	return ""
}

// raw calls f with integer/pointer arguments and returns the C result.
//
//go:uintptrescapes
func (f *cfunc) raw(args ...uintptr) uintptr { return ccall.Call(f.addr, args...) }

// call calls f and turns a non-zero int result into *Error.
//
//go:uintptrescapes
func (f *cfunc) call(args ...uintptr) error {
	if f.addr == 0 {
		return errNotLoaded
	}
	if r := int32(ccall.Call(f.addr, args...)); r != 0 {
		return f.lib.newError(f.name, int(r))
	}
	return nil
}

// dlsym returns a symbol lookup in the library handle; 0 for a symbol it lacks.
func dlsym(handle uintptr) func(string) uintptr {
	return func(name string) uintptr {
		a, err := purego.Dlsym(handle, name)
		if err != nil {
			return 0
		}
		return a
	}
}

// resolve looks up every function of fns that runtime rt has, by its rt names, through sym; missing ones are
// reported together, except those optional names.
func resolve(lib string, rt Runtime, sym func(string) uintptr, fns []*cfunc, optional ...*cfunc) error {
	runtime.LockOSThread() // dlerror is per thread
	defer runtime.UnlockOSThread()
	var missing []string
	for _, f := range fns {
		f.addr, f.name = 0, f.firstName(rt)
		for _, n := range f.names[rt] {
			if a := sym(n); a != 0 {
				f.addr, f.name = a, n
				break
			}
		}
		if f.addr == 0 && len(f.names[rt]) > 0 && !slices.Contains(optional, f) {
			missing = append(missing, strings.Join(f.names[rt], "|"))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s lacks %s", lib, strings.Join(missing, ", "))
	}
	return nil
}

// unresolve forgets every address, so calls after a failed load report errNotLoaded.
func unresolve(fns []*cfunc) {
	for _, f := range fns {
		f.addr = 0
	}
}

var errNotLoaded = errors.New("gpu runtime: not loaded (call gpurt.Load first)")
