package gpurt

import (
	"errors"
	"fmt"
	"runtime"
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

// library is the set of entry points bound from one shared library.
type library struct {
	funcs    []*cfunc
	newError func(call string, code int) *Error // turns a non-zero result into *Error
}

// fn declares an entry point; later names are fallbacks for older libraries.
func (l *library) fn(names ...string) *cfunc {
	f := &cfunc{lib: l, names: names, name: names[0]}
	l.funcs = append(l.funcs, f)
	return f
}

// cfunc is one C entry point, resolved by the first of its names the library exports.
type cfunc struct {
	lib   *library
	names []string
	name  string // the name that resolved, or names[0]
	addr  uintptr
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

// resolve looks up every function in fns; missing ones are reported together.
func resolve(lib string, handle uintptr, fns []*cfunc) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return resolveSym(lib, func(name string) uintptr {
		a, _ := purego.Dlsym(handle, name)
		return a
	}, fns)
}

// resolveSym is resolve with the addresses sym finds by name (0 where there is none).
func resolveSym(lib string, sym func(name string) uintptr, fns []*cfunc) error {
	var missing []string
	for _, f := range fns {
		f.addr, f.name = 0, f.names[0]
		for _, n := range f.names {
			if a := sym(n); a != 0 {
				f.addr, f.name = a, n
				break
			}
		}
		if f.addr == 0 {
			missing = append(missing, strings.Join(f.names, "|"))
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

var errNotLoaded = errors.New("cuda: library not loaded (call cuda.Load / cuda.LoadNVRTC first)")
