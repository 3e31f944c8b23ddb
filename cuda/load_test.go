package cuda

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	fns := []*cfunc{libc.fn("labs"), libc.fn("no_such_fn_v2", "llabs"), libc.fn("no_such_fn")}
	err = resolve("libc", h, libc.funcs)
	if err == nil || !strings.Contains(err.Error(), "no_such_fn") || strings.Contains(err.Error(), "labs") {
		t.Fatalf("resolve error should name only the missing symbol: %v", err)
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
	f := new(library).fn("cuNothing")
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

func TestDoneOrNotReady(t *testing.T) {
	if d, err := doneOrNotReady(nil); !d || err != nil {
		t.Error("nil error must mean done")
	}
	if d, err := doneOrNotReady(&Error{Code: errorNotReady}); d || err != nil {
		t.Error("NOT_READY must mean not done, no error")
	}
	if _, err := doneOrNotReady(&Error{Code: 700}); err == nil {
		t.Error("other errors must pass through")
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
	if err := LoadNVRTC(); err == nil {
		t.Log("NVRTC loaded; its failure text is not checked")
	} else {
		for _, want := range []string{"/nonexistent/rcclx/libnvrtc.so", "libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.13"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("LoadNVRTC error does not name %s:\n%v", want, err)
			}
		}
	}
}
