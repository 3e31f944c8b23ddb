package nccl

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// debianHIP is Debian 12's HIP runtime (libamdhip64-5), which CI installs.
const debianHIP = "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5"

// TestLinkedHIP links stand-ins for RCCL and NCCL with the system's linker: one against a libamdhip64.so.6 made
// here (and against Debian's real libamdhip64.so.5 where it is installed), one against no GPU runtime. The
// soname each records as DT_NEEDED is what LinkedHIP must return.
func TestLinkedHIP(t *testing.T) {
	dir := t.TempDir()
	const src = "int ncclGetVersion(int *v) { *v = 22803; return 0; }\n"
	hip6 := gccLib(t, dir, "libamdhip64.so.6", src)
	cases := map[string]string{
		gccLib(t, dir, "librccl.so.1", src, "-lm", hip6): "libamdhip64.so.6",
		gccLib(t, dir, "libnccl.so.2", src, "-lm"):       "",
	}
	if _, err := os.Stat(debianHIP); err == nil {
		cases[gccLib(t, dir, "librccl-debian.so.1", src, debianHIP)] = "libamdhip64.so.5"
	} else {
		t.Logf("no %s: the stand-in alone", debianHIP)
	}
	for lib, want := range cases {
		if got, err := LinkedHIP(lib); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", filepath.Base(lib), got, err, want)
		}
	}
	if _, err := LinkedHIP(filepath.Join(dir, "libnccl.so.2.c")); err == nil {
		t.Error("a C source read as an ELF file")
	}
}

// gccLib compiles the C source src into the shared library dir/name, whose soname is name, linked with args (all
// of them recorded as DT_NEEDED); the test skips where there is no gcc.
func gccLib(t *testing.T, dir, name, src string, args ...string) string {
	t.Helper()
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc: the test links its stand-in libraries with it")
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p+".c", []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := append([]string{"-shared", "-fPIC", "-o", p, p + ".c", "-Wl,-soname," + name, "-Wl,--no-as-needed"}, args...)
	if b, err := exec.Command(cc, cmd...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %v: %v\n%s", cmd, err, b)
	}
	return p
}
