package nccl

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// standInNCCL is the C source of a stand-in NCCL-ABI library: every function Open requires, doing nothing, and
// ncclGetVersion answering 22803.
const standInNCCL = `int ncclGetVersion(int *v) { *v = 22803; return 0; }
const char *ncclGetErrorString(int r) { return "stand-in"; }
#define STUB(f) int f(void) { return 0; }
STUB(ncclGetUniqueId) STUB(ncclCommInitAll) STUB(ncclCommInitRank) STUB(ncclCommDestroy) STUB(ncclCommAbort)
STUB(ncclCommGetAsyncError) STUB(ncclGroupStart) STUB(ncclGroupEnd) STUB(ncclAllReduce) STUB(ncclAllGather)
STUB(ncclReduceScatter) STUB(ncclBroadcast) STUB(ncclReduce)
`

// make RCCL=1 links the binaries against librccl.so.1 as rccl-tests' are: ldd prints the line from which
// rccl-tests' roctx_perf_run.py records a run's library, the vendor engine's default library is that very
// file, and where it is missing the dynamic loader refuses to start the binary. Plain make links no library.
func TestRCCLBuildLinksLibrccl(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rcclx-doctor with the rccl tag")
	}
	for _, tool := range []string{"make", "ldd"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s: the test runs it (make for the Makefile's build command, ldd as rccl-tests' runner does)", tool)
		}
	}
	dir := t.TempDir()
	lib := gccLib(t, dir, "librccl.so.1", standInNCCL)
	// An NCCL beside it, which the dynamic loader finds through the same run path: the linked RCCL comes first.
	gccLib(t, dir, "libnccl.so.2", standInNCCL)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Built as make builds (CGO_ENABLED=0: with cgo, the external linker would drop the unreferenced librccl).
	env := append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains([]string{"LD_LIBRARY_PATH", "NCCL_HOME", "RCCL", "LINKFLAGS"}, name)
	}), "CGO_ENABLED=0")
	run := func(wd, name string, args ...string) (string, error) {
		t.Helper()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir, cmd.Env = wd, env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	// The Makefile's commands: the rccl variant for the perf binaries and the doctor (NCCL_HOME names the
	// directory of the library), none for rcclx-results or without RCCL=1.
	want := map[string]string{
		"make -n RCCL=1 NCCL_HOME=" + dir + " build/rcclx-doctor": "go build -tags rccl -ldflags=-r=" + dir + ":" + dir +
			"/lib -o build/rcclx-doctor ./cmd/rcclx-doctor",
		"make -n RCCL=1 build/all_reduce_perf": "go build -tags rccl -ldflags=-r=/opt/rocm/lib -o build/all_reduce_perf " +
			"./cmd/all_reduce_perf",
		"make -n RCCL=1 build/rcclx-results": "go build -o build/rcclx-results ./cmd/rcclx-results",
		"make -n build/all_reduce_perf":      "go build -o build/all_reduce_perf ./cmd/all_reduce_perf",
	}
	var doctorBuild []string
	for cmd, w := range want {
		args := append(strings.Fields(cmd)[1:], "--no-print-directory", "GO=go", "ROCM_PATH=/opt/rocm")
		out, err := run("..", "make", args...)
		if got := strings.Join(strings.Fields(out), " "); err != nil || got != w {
			t.Fatalf("%s: %v\n%s\nwant %s", cmd, err, out, w)
		}
		if strings.Contains(cmd, "rcclx-doctor") {
			doctorBuild = strings.Fields(out)
		}
	}

	bin := filepath.Join(dir, "rcclx-doctor")
	doctorBuild[slices.Index(doctorBuild, "build/rcclx-doctor")] = bin
	if out, err := run("..", doctorBuild[0], doctorBuild[1:]...); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(doctorBuild, " "), err, out)
	}

	// roctx_perf_run.py: of each stdout line of ldd holding "librccl", the first word after "=>" if a file.
	out, err := exec.CommandContext(ctx, "ldd", bin).Output()
	if err != nil {
		t.Fatalf("ldd %s: %v", bin, err)
	}
	recorded := ""
	for _, line := range strings.Split(string(out), "\n") {
		if parts := strings.Split(line, "=>"); strings.Contains(line, "librccl") && len(parts) == 2 {
			if f := strings.Fields(parts[1]); len(f) > 0 && isFile(f[0]) {
				recorded = f[0]
			}
		}
	}
	if recorded != lib {
		t.Errorf("ldd records librccl %q, want %q:\n%s", recorded, lib, out)
	}

	// The doctor's library row opens what --engine vendor opens by default; --lib still names another.
	row := func(args ...string) string {
		out, _ := run(dir, bin, args...)
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "NCCL-ABI library ") {
				return line
			}
		}
		t.Fatalf("rcclx-doctor %v: no library row\n%s", args, out)
		return ""
	}
	if r := row(); !strings.Contains(r, lib) || strings.Fields(r)[2] == "none" {
		t.Errorf("default library row names not %s: %s", lib, r)
	}
	other := filepath.Join(dir, "lib", "librccl.so.1")
	if r := row("--lib", other); !strings.Contains(r, other+" (") {
		t.Errorf("--lib %s row: %s", other, r)
	}

	if err := os.Remove(lib); err != nil {
		t.Fatal(err)
	}
	out2, err := run(dir, bin, "--version")
	if err == nil || !strings.Contains(out2, "error while loading shared libraries: librccl.so.1") {
		t.Errorf("without librccl.so.1 the binary ran or failed otherwise: %v\n%s", err, out2)
	}
}
