package roctx

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// standIn builds testdata/roctx.c with gcc into dir as libroctx64.so (skipping t where there is no gcc).
func standIn(t *testing.T, dir string) {
	t.Helper()
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc: the test links its stand-in rocTX library with it")
	}
	if b, err := exec.Command(cc, "-shared", "-fPIC", "-o", filepath.Join(dir, "libroctx64.so"), "testdata/roctx.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
}

// The functions are found in libroctx64.so by name (the loader's search: LD_LIBRARY_PATH is read when a
// process starts, so a child process of this test calls them); without the library, Load is nil.
func TestLoad(t *testing.T) {
	if os.Getenv("ROCTX_CHILD") == "1" {
		r := Load()
		if r == nil {
			os.Exit(3)
		}
		r.Push("timed_loop size=8")
		r.Pop()
		os.Exit(0)
	}
	if os.Getenv("LD_LIBRARY_PATH") == "" && Load() != nil {
		t.Error("Load found rocTX on a machine without libroctx64.so")
	}
	dir := t.TempDir()
	standIn(t, dir)
	log := filepath.Join(dir, "log")
	cmd := exec.Command(os.Args[0], "-test.run=^TestLoad$")
	cmd.Env = append(os.Environ(), "ROCTX_CHILD=1", "LD_LIBRARY_PATH="+dir, "ROCTX_LOG="+log)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(log); string(b) != "push timed_loop size=8\npop\n" {
		t.Errorf("calls %q", b)
	}
}
