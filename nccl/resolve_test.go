package nccl

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/ebitengine/purego"
)

// The scan finds a name wherever it lies in the file, across read blocks too, and only as a whole name.
func TestFileContains(t *testing.T) {
	dir := t.TempDir()
	const name = "NCCL_MAX_NCHANNELS"
	size := 3<<20 + 64
	for _, at := range []int{0, 1000, 1<<20 - 5, 1<<20 - len(name), 1 << 20, 3<<20 - 1, size - len(name)} {
		data := bytes.Repeat([]byte{0x90}, size)
		copy(data[at:], name)
		path := filepath.Join(dir, "with.so")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if ok, err := FileContains(path, name); !ok || err != nil {
			t.Errorf("name at %d: %v %v", at, ok, err)
		}
		// A reader returning one byte at a time finds it too.
		if at < 2000 {
			if ok, err := readerContains(iotest.OneByteReader(bytes.NewReader(data[:4096])), []byte(name)); !ok || err != nil {
				t.Errorf("one byte at a time, name at %d: %v %v", at, ok, err)
			}
		}
	}
	// All but the last letter, and the name as the start of a longer one: neither counts.
	data := bytes.Repeat([]byte("NCCL_MAX_NCHANNEL\x00NCCL_MAX_NCHANNELS_X\x00"), 1<<15)
	path := filepath.Join(dir, "without.so")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if ok, err := FileContains(path, name); ok || err != nil {
		t.Errorf("name absent: %v %v", ok, err)
	}
	if _, err := FileContains(filepath.Join(dir, "missing.so"), name); err == nil {
		t.Error("missing file: no error")
	}
}

// Resolve finds the file Open would load: a path as given, a bare name where the loader looks.
func TestResolve(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "libnccl.so.2")
	if err := os.WriteFile(lib, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	noGlob := func(string) ([]string, error) { return nil, nil }
	if got, err := Resolve(lib, env(nil), noGlob); got != lib || err != nil {
		t.Errorf("path: %q %v", got, err)
	}
	if got, err := Resolve("", env(map[string]string{"LD_LIBRARY_PATH": "/nonexistent:" + dir}), noGlob); got != lib || err != nil {
		t.Errorf("default name on LD_LIBRARY_PATH: %q %v", got, err)
	}
	if _, err := Resolve(filepath.Join(dir, "librccl.so.1"), env(nil), noGlob); err == nil ||
		!strings.Contains(err.Error(), "librccl.so.1") {
		t.Errorf("missing path: %v", err)
	}
}

// A bare name this process has mapped already (a library the binary links) resolves to the mapped file, which is
// what dlopen returns, wherever it lies.
func TestResolveMapped(t *testing.T) {
	lib := gccLib(t, t.TempDir(), "librcclx-mapped.so.1", standInNCCL)
	if _, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL); err != nil {
		t.Fatal(err)
	}
	noGlob := func(string) ([]string, error) { return nil, nil }
	if got, err := Resolve("librcclx-mapped.so.1", func(string) string { return "" }, noGlob); got != lib || err != nil {
		t.Errorf("Resolve of a mapped name: %q %v; want %s", got, err, lib)
	}
}
