package vendorengine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/nccl"
)

var (
	_ collectives.Prober         = engine{}
	_ collectives.Grapher        = (*group)(nil)
	_ collectives.EventTimer     = (*group)(nil)
	_ collectives.MemoryReporter = (*group)(nil)
)

func TestName(t *testing.T) {
	if New().Name() != "vendor" {
		t.Errorf("Name = %q", New().Name())
	}
}

func TestOpenWithoutLibraryIsOneLineLibraryError(t *testing.T) {
	notLib := filepath.Join(t.TempDir(), "libnccl.so.2")
	os.WriteFile(notLib, []byte("#!/bin/sh\n"), 0o644)
	for _, lib := range []string{notLib, "/nonexistent/librccl.so.1", "libc.so.6"} {
		_, err := New().Open(collectives.Config{Library: lib, NGpus: 1})
		var le *collectives.LibraryError
		if !errors.As(err, &le) || !strings.Contains(err.Error(), lib+" (") || strings.Contains(err.Error(), "\n") {
			t.Errorf("Open(--lib %s) = %v, want one-line *LibraryError naming it", lib, err)
		}
	}
}

// cGetenv reads the C library's environment, which NCCL reads.
func cGetenv(t *testing.T) func(string) string {
	h, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW)
	if err != nil {
		t.Skip("no libc:", err)
	}
	var getenv func(string) *byte
	purego.RegisterLibFunc(&getenv, h, "getenv")
	return func(k string) string {
		p := getenv(k)
		if p == nil {
			return ""
		}
		var b []byte
		for q := p; *q != 0; q = (*byte)(unsafe.Add(unsafe.Pointer(q), 1)) {
			b = append(b, *q)
		}
		return string(b)
	}
}

func TestOverrideEnvReachesCAndIsRestored(t *testing.T) {
	getenv := cGetenv(t)
	t.Setenv("RCCLX_TESTS_A", "before")
	os.Unsetenv("RCCLX_TESTS_B")
	restore := overrideEnv(map[string]string{"RCCLX_TESTS_A": "1", "RCCLX_TESTS_B": "2"})
	for k, want := range map[string]string{"RCCLX_TESTS_A": "1", "RCCLX_TESTS_B": "2"} {
		if os.Getenv(k) != want || getenv(k) != want {
			t.Errorf("during: %s = %q (Go), %q (C), want %q", k, os.Getenv(k), getenv(k), want)
		}
	}
	restore()
	if os.Getenv("RCCLX_TESTS_A") != "before" || getenv("RCCLX_TESTS_A") != "before" {
		t.Errorf("after: RCCLX_TESTS_A = %q (C %q), want before", os.Getenv("RCCLX_TESTS_A"), getenv("RCCLX_TESTS_A"))
	}
	if _, set := os.LookupEnv("RCCLX_TESTS_B"); set || getenv("RCCLX_TESTS_B") != "" {
		t.Error("after: RCCLX_TESTS_B still set")
	}
}

func TestOverrideEnvTurnsMulticastOffUnlessSet(t *testing.T) {
	t.Setenv("NCCL_NVLS_ENABLE", "")
	os.Unsetenv("NCCL_NVLS_ENABLE")
	overrideEnv(nil)()
	if got := os.Getenv("NCCL_NVLS_ENABLE"); got != "0" {
		t.Errorf("NCCL_NVLS_ENABLE = %q after Open without it, want 0", got)
	}
	t.Setenv("NCCL_NVLS_ENABLE", "1")
	overrideEnv(nil)()
	if got := os.Getenv("NCCL_NVLS_ENABLE"); got != "1" {
		t.Errorf("NCCL_NVLS_ENABLE = %q, want the user's 1", got)
	}
	restore := overrideEnv(map[string]string{"NCCL_NVLS_ENABLE": "0"})
	if got := os.Getenv("NCCL_NVLS_ENABLE"); got != "0" {
		t.Errorf("NCCL_NVLS_ENABLE = %q with -E NCCL_NVLS_ENABLE=0", got)
	}
	restore()
}

// fakeWorld answers AllGather with fixed parts, as process rank of a run would see them.
type fakeWorld struct {
	rank  int
	parts [][]byte
}

func (w fakeWorld) Rank() int                          { return w.rank }
func (w fakeWorld) Size() int                          { return len(w.parts) }
func (w fakeWorld) AllGather([]byte) ([][]byte, error) { return w.parts, nil }
func (w fakeWorld) Barrier() error                     { return nil }

func TestExchange(t *testing.T) {
	host, _ := os.Hostname()
	var want nccl.UniqueID
	for i := range want.Internal {
		want.Internal[i] = byte(i*7 + 3)
	}
	part := func(h string, id nccl.UniqueID) []byte { return append([]byte(h+"\x00"), id.Internal[:]...) }
	w := fakeWorld{rank: 3, parts: [][]byte{part(host, want), part("elsewhere", nccl.UniqueID{}),
		part(host, nccl.UniqueID{}), part(host, nccl.UniqueID{})}}
	var id nccl.UniqueID
	idx, err := exchange(w, &id)
	if err != nil || idx != 2 || id != want {
		t.Errorf("exchange = host index %d, %v, id ok %v; want 2", idx, err, id == want)
	}
	w.parts[0] = []byte("truncated")
	if _, err := exchange(w, &id); err == nil {
		t.Error("exchange accepted a malformed unique id")
	}
}

func TestAlltoallMode(t *testing.T) {
	for _, c := range []struct {
		mode           string
		exported, want bool
		fails          bool
	}{
		{"", true, true, false}, {"", false, false, false}, {"sendrecv", true, false, false},
		{"native", true, true, false}, {"native", false, false, true}, {"both", true, false, true},
	} {
		got, err := alltoallNative(c.mode, c.exported)
		if got != c.want || (err != nil) != c.fails {
			t.Errorf("%s=%q exported %v: native %v, %v", alltoallEnv, c.mode, c.exported, got, err)
		}
	}
	if _, err := alltoallNative("native", false); !errors.Is(err, collectives.ErrUnsupported) {
		t.Errorf("native without the symbol: %v, want ErrUnsupported", err)
	}
}

// As nccl-tests: one local rank making one call needs no group; several ranks, several calls (alltoall's
// sends and receives) or non-blocking communicators do.
func TestGrouped(t *testing.T) {
	for _, c := range []struct {
		nlocal                int
		nonBlocking, sendRecv bool
		want                  bool
	}{
		{1, false, false, false}, {2, false, false, true}, {1, true, false, true}, {1, false, true, true}, {8, true, true, true},
	} {
		if got := grouped(c.nlocal, c.nonBlocking, c.sendRecv); got != c.want {
			t.Errorf("%+v: grouped %v", c, got)
		}
	}
}

func TestAllReduceBiasNeedsTheLibrarysCall(t *testing.T) {
	c := &comm{lib: &nccl.Library{Path: "libnccl.so.2"}}
	err := c.CanRun(collectives.AllReduceBias)
	if !errors.Is(err, collectives.ErrUnsupported) || !strings.Contains(err.Error(), "libnccl.so.2 does not export ncclAllReduceWithBias") {
		t.Errorf("CanRun without the symbol = %v", err)
	}
	c.withBias = true
	for _, coll := range append(collectives.All(), collectives.AllReduceBias) {
		if err := c.CanRun(coll); err != nil {
			t.Errorf("%s: %v", coll.Name, err)
		}
	}
}

// An FP8 call (or PreMulSum operation) the library refuses as an invalid argument is a type and operation it
// does not support; any other refusal, and an invalid argument on another type, stays a library error.
func TestFP8RefusalIsUnsupported(t *testing.T) {
	refused := &nccl.Error{Call: "ncclReduce", Code: nccl.InvalidArgument}
	for _, c := range []struct {
		fp8  bool
		err  error
		want bool
	}{
		{true, refused, true},
		{false, refused, false},
		{true, &nccl.Error{Call: "ncclReduce", Code: nccl.InternalError}, false},
	} {
		g := &group{c: &comm{}, fp8: c.fp8}
		for _, err := range []error{g.finish(c.err), fp8Refused(c.fp8, libraryError(c.err))} {
			var le *collectives.LibraryError
			if errors.Is(err, collectives.ErrUnsupported) != c.want || !errors.As(err, &le) {
				t.Errorf("fp8 %v, %v: got %v", c.fp8, c.err, err)
			}
		}
	}
}
