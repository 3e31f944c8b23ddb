package nccl

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ebitengine/purego"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// fakeGlob answers the site-packages patterns with one venv and one system directory.
func fakeGlob(pattern string) ([]string, error) {
	switch pattern {
	case "/venv/lib/python3*/site-packages":
		return []string{"/venv/lib/python3.12/site-packages"}, nil
	case "/usr/lib/python3*/dist-packages":
		return []string{"/usr/lib/python3/dist-packages"}, nil
	case "/opt/py/bin/python3*":
		return []string{"/opt/py/bin/python3"}, nil
	case "/opt/py/lib/python3*/site-packages":
		return []string{"/opt/py/lib/python3.11/site-packages", "/venv/lib/python3.12/site-packages"}, nil
	}
	return nil, nil
}

func fakeEnv(k string) string {
	return map[string]string{"VIRTUAL_ENV": "/venv", "PATH": "/usr/bin:/opt/py/bin"}[k]
}

func TestCandidates(t *testing.T) {
	cases := []struct {
		arg  string
		want []string
	}{
		{"", []string{"libnccl.so.2", "librccl.so.1",
			"/usr/lib/python3/dist-packages/nvidia/nccl/lib/libnccl.so.2",
			"/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2",
			"/opt/py/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2",
			"/opt/rocm/lib/librccl.so.1"}},
		{"librccl.so.1", []string{"librccl.so.1",
			"/usr/lib/python3/dist-packages/nvidia/nccl/lib/librccl.so.1",
			"/venv/lib/python3.12/site-packages/nvidia/nccl/lib/librccl.so.1",
			"/opt/py/lib/python3.11/site-packages/nvidia/nccl/lib/librccl.so.1",
			"/opt/rocm/lib/librccl.so.1"}},
		{"./build/librccl.so", []string{"./build/librccl.so"}},
	}
	for _, c := range cases {
		if got := Candidates(c.arg, fakeEnv, fakeGlob); !slices.Equal(got, c.want) {
			t.Errorf("Candidates(%q) =\n  %q\nwant\n  %q", c.arg, got, c.want)
		}
	}
}

func TestOpenNothingListsEveryPathOnOneLine(t *testing.T) {
	lib, err := Open("")
	if err == nil {
		t.Skipf("this machine has an NCCL library (%s)", lib.Path)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "nccl: no usable NCCL library; tried ") {
		t.Fatalf("error is not one line of the expected shape: %q", msg)
	}
	for _, c := range Candidates("", os.Getenv, filepath.Glob) {
		if !strings.Contains(msg, c+" (") {
			t.Errorf("error does not name %s: %q", c, msg)
		}
	}
}

func TestOpenRejectsNonLibraries(t *testing.T) {
	notLib := filepath.Join(t.TempDir(), "libnccl.so.2")
	if err := os.WriteFile(notLib, []byte("this is not an ELF file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ arg, want string }{
		{notLib, notLib + " ("},
		{"libc.so.6", "libc.so.6 (loads, but lacks ncclGetVersion, ncclGetUniqueId"},
		{"/nonexistent/libnccl.so.2", "/nonexistent/libnccl.so.2 ("},
	}
	for _, c := range cases {
		_, err := Open(c.arg)
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%q) error = %v, want one line containing %q", c.arg, err, c.want)
		}
	}
	_, err := Open("libc.so.6")
	if err == nil || !strings.Contains(err.Error(), "ncclAllReduce") || !strings.Contains(err.Error(), "ncclCommInitRank") {
		t.Errorf("Open(libc) error = %v, want it to name ncclAllReduce and ncclCommInitRank", err)
	}
}

// TestInitRankSignature checks that purego accepts the by-value unique id (and the config pointer) in the Go
// signatures of ncclCommInitRank and ncclCommInitRankConfig (it panics at registration on what it cannot
// pass); any function address serves.
func TestInitRankSignature(t *testing.T) {
	h, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW)
	if err != nil {
		t.Skip("no libc to take an address from:", err)
	}
	addr, err := purego.Dlsym(h, "abs")
	if err != nil {
		t.Fatal(err)
	}
	var l Library
	purego.RegisterFunc(&l.commInitRank, addr)
	purego.RegisterFunc(&l.commInitRankConfig, addr)
}

func TestMissingOptionalFunctionIsUnsupported(t *testing.T) {
	l := &Library{Path: "libfake.so"}
	l.send.names = []string{"ncclSend"}
	err := l.NewCalls().Send(0, 1, Float32, 1, 0, 0).Run()
	if !errors.Is(err, collectives.ErrUnsupported) || !strings.Contains(err.Error(), "ncclSend: libfake.so does not export it") {
		t.Errorf("Send on a library without it: %v", err)
	}
	if l.Has("ncclSend") || l.Has("ncclNoSuchThing") || l.Has("ncclCommInitRankConfig") {
		t.Error("Has reports a function the library lacks")
	}
	cfg := NonBlockingConfig()
	if _, err := l.CommInitRankConfig(2, UniqueID{}, 0, &cfg); !errors.Is(err, collectives.ErrUnsupported) {
		t.Errorf("CommInitRankConfig on a library without it: %v", err)
	}
}

func TestErrorText(t *testing.T) {
	e := &Error{Call: "ncclAllReduce", Code: InvalidArgument, Msg: "invalid argument", Last: "Invalid config"}
	if got, want := e.Error(), "ncclAllReduce: ncclInvalidArgument (invalid argument): Invalid config"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got := Result(42).String(); got != "ncclResult(42)" {
		t.Errorf("Result(42) = %q", got)
	}
}

func TestMappedFile(t *testing.T) {
	maps := "7f00-7f01 r--p 00000000 08:01 123 /usr/lib/x86_64-linux-gnu/libc.so.6\n" +
		"7f02-7f03 r-xp 00001000 08:01 456 /usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3\n" +
		"7f04-7f05 rw-p 00000000 00:00 0 [heap]\n"
	cases := map[string]string{
		"libnccl.so.2":        "/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3",
		"librccl.so.1":        "librccl.so.1",
		"/opt/x/libnccl.so.2": "/opt/x/libnccl.so.2",
	}
	for name, want := range cases {
		if got := mappedFile(maps, name); got != want {
			t.Errorf("mappedFile(%q) = %q, want %q", name, got, want)
		}
	}
}
