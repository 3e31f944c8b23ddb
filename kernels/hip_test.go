package kernels

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// hipFlags compile a module as HIP the way gpuengine compiles it with NVRTC: C++17 (NVRTC's default; hipcc's
// is C++11), no multiply-add contraction (NVRTC's --fmad=false), and zero-length arrays reported (NVRTC rejects
// them). scripts/hip-check.sh passes the same.
var hipFlags = []string{"-x", "hip", "-std=c++17", "-O1", "-ffp-contract=off", "-Wzero-length-array", "-c"}

// hipArch is the CI's target: Debian bookworm's hipcc (ROCm 5.2, LLVM 15) knows no gfx942.
const hipArch = "gfx90a"

// TestHIPCompile compiles the representative modules for an AMD GPU with hipcc, through prelude.cuh's HIP
// branch, to a code object: the AMD port's compile check. All 72 take 100 s of CPU (over 3 minutes on a busy
// 2-core machine), so they are left to scripts/hip-check.sh.
func TestHIPCompile(t *testing.T) {
	hipcc, err := exec.LookPath("hipcc")
	if err != nil {
		t.Skip("hipcc not installed: the HIP compile check needs it (Debian: apt-get install -y hipcc)")
	}
	compileModules(t, representativeModules(), func(src string, m module) []string {
		args := append([]string{hipcc, "--offload-arch=" + hipArch}, hipFlags...)
		args = append(args, m.defines()...)
		return append(args, "-o", os.DevNull, src)
	})
}

// The script and the test compile with the same options.
func TestHIPCheckScriptUsesTestFlags(t *testing.T) {
	script, err := os.ReadFile("../scripts/hip-check.sh")
	if err != nil {
		t.Fatal(err)
	}
	want := "hipcc --offload-arch=\"$arch\" " + strings.Join(hipFlags, " ")
	if !strings.Contains(string(script), want) {
		t.Errorf("scripts/hip-check.sh does not run %q", want)
	}
}
