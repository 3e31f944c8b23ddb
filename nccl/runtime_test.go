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
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc: the test links its stand-in libraries with it")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "x.c")
	os.WriteFile(src, []byte("int ncclGetVersion(int *v) { *v = 22803; return 0; }\n"), 0o644)
	link := func(out string, args ...string) string {
		t.Helper()
		p := filepath.Join(dir, out)
		cmd := append([]string{"-shared", "-fPIC", "-o", p, src, "-Wl,--no-as-needed"}, args...)
		if b, err := exec.Command(cc, cmd...).CombinedOutput(); err != nil {
			t.Fatalf("gcc %v: %v\n%s", cmd, err, b)
		}
		return p
	}
	hip6 := link("libamdhip64.so.6", "-Wl,-soname,libamdhip64.so.6")
	cases := map[string]string{
		link("librccl.so.1", "-lm", hip6): "libamdhip64.so.6",
		link("libnccl.so.2", "-lm"):       "",
	}
	if _, err := os.Stat(debianHIP); err == nil {
		cases[link("librccl-debian.so.1", debianHIP)] = "libamdhip64.so.5"
	} else {
		t.Logf("no %s: the stand-in alone", debianHIP)
	}
	for lib, want := range cases {
		if got, err := LinkedHIP(lib); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", filepath.Base(lib), got, err, want)
		}
	}
	if _, err := LinkedHIP(src); err == nil {
		t.Error("a C source read as an ELF file")
	}
}
