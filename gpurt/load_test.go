package gpurt

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ebitengine/purego"
)

func TestDriverCandidatesOrder(t *testing.T) {
	env := map[string]string{"RCCLX_TESTS_LIBCUDA": "/opt/x/libcuda.so.1"}
	c := driverCandidates(func(k string) string { return env[k] })
	if c[0] != "/opt/x/libcuda.so.1" || c[1] != "libcuda.so.1" {
		t.Fatalf("override and plain name must come first: %q", c)
	}
	for _, p := range c {
		if strings.Contains(p, "stubs") {
			t.Fatalf("stub library among candidates: %q", p)
		}
	}
	joined := strings.Join(c, " ")
	for _, want := range []string{"/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/local/nvidia/lib64/libcuda.so.1"} {
		if !strings.Contains(joined, want) {
			t.Errorf("missing %s in %q", want, c)
		}
	}
	if c := driverCandidates(func(string) string { return "" }); c[0] != "libcuda.so.1" {
		t.Errorf("without override the plain name comes first: %q", c)
	}
}

func TestOpenFirstListsEveryPath(t *testing.T) {
	dir := t.TempDir()
	paths := []string{filepath.Join(dir, "a.so"), filepath.Join(dir, "b.so"), "libdoesnotexist-rcclx.so"}
	_, _, err := openFirst("thing", paths)
	if err == nil {
		t.Fatal("loading nonexistent libraries succeeded")
	}
	for _, p := range paths {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error does not name %s:\n%v", p, err)
		}
	}
	if !strings.Contains(err.Error(), "thing") {
		t.Errorf("error does not say what was loaded: %v", err)
	}
}

func TestOpenFirstLoadsLibc(t *testing.T) {
	h, path, err := openFirst("libc", []string{"/nonexistent/libc.so.6", "libc.so.6"})
	if err != nil || h == 0 || path != "libc.so.6" {
		t.Fatalf("openFirst = %x, %q, %v", h, path, err)
	}
	var libc library
	fns := []*cfunc{libc.fn("labs", ""), libc.fn("no_such_fn_v2|llabs", ""), libc.fn("no_such_fn", ""), libc.fn("", "hip_only")}
	err = resolve("libc", CUDA, dlsym(h), libc.funcs)
	if err == nil || !strings.Contains(err.Error(), "no_such_fn") || strings.Contains(err.Error(), "labs") {
		t.Fatalf("resolve error should name only the missing symbol: %v", err)
	}
	if fns[3].addr != 0 {
		t.Errorf("an entry point without a CUDA name resolved under CUDA: %+v", fns[3])
	}
	if fns[1].name != "llabs" || fns[1].addr == 0 {
		t.Errorf("fallback name not used: %+v", fns[1])
	}
	if got := fns[0].raw(uintptr(^uint64(41))); got != 42 { // labs(-42)
		t.Errorf("labs(-42) = %d", got)
	}
}

func TestErrorText(t *testing.T) {
	e := &Error{Call: "cuMemAlloc", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Msg: "out of memory"}
	if got, want := e.Error(), "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	e.Msg = ""
	if got := e.Error(); got != "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY" {
		t.Errorf("Error() without message = %q", got)
	}
}

func TestCallBeforeLoad(t *testing.T) {
	f := new(library).fn("cuNothing", "")
	if err := f.call(1); !errors.Is(err, errNotLoaded) {
		t.Errorf("call on an unresolved symbol = %v, want errNotLoaded", err)
	}
	if _, ok := any(driverError("cuMemAlloc_v2", 2)).(*Error); !ok {
		t.Fatal("driverError is not *Error")
	}
	if e := driverError("cuMemAlloc_v2", 12345); e.Call != "cuMemAlloc" || e.Name == "" || e.Code != 12345 {
		t.Errorf("driverError without a driver = %+v", e)
	}
}

// query on libc's labs standing in for cuStreamQuery: 0 is done, CUDA_ERROR_NOT_READY not done and no error,
// anything else an error.
func TestQuery(t *testing.T) {
	h, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW)
	if err != nil {
		t.Skip("no libc to stand in for the driver:", err)
	}
	f := (&library{newError: driverError}).fn("cuStreamQuery", "")
	if f.addr, err = purego.Dlsym(h, "labs"); err != nil {
		t.Fatal(err)
	}
	if d, err := query(f, 0); !d || err != nil {
		t.Errorf("0: %v, %v; want done", d, err)
	}
	if d, err := query(f, errorNotReady); d || err != nil {
		t.Errorf("NOT_READY: %v, %v; want not done, no error", d, err)
	}
	var e *Error
	if d, err := query(f, 700); d || !errors.As(err, &e) || e.Code != 700 || e.Call != "cuStreamQuery" {
		t.Errorf("700: %v, %v; want the error", d, err)
	}
	if _, err := query(new(library).fn("cuNothing", ""), 0); !errors.Is(err, errNotLoaded) {
		t.Errorf("unresolved: %v", err)
	}
}

func TestLoadErrorsNameEveryPath(t *testing.T) {
	t.Setenv("RCCLX_TESTS_LIBCUDA", "/nonexistent/rcclx/libcuda.so.1")
	t.Setenv("RCCLX_TESTS_LIBNVRTC", "/nonexistent/rcclx/libnvrtc.so")
	if err := Load(); err == nil {
		t.Log("a CUDA driver loaded; its failure text is not checked")
	} else {
		for _, want := range driverCandidates(os.Getenv) {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Load error does not name %s:\n%v", want, err)
			}
		}
	}
	if err := LoadCompiler(); err == nil || Loaded() != CUDA {
		t.Log("NVRTC loaded, or no CUDA driver to load it for; its failure text is not checked")
	} else {
		for _, want := range []string{"/nonexistent/rcclx/libnvrtc.so", "libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.13"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("LoadCompiler error does not name %s:\n%v", want, err)
			}
		}
	}
}
