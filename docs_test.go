package rcclxtests_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDevelopingListsEveryGPUCheckStep: docs/DEVELOPING.md's list of scripts/gpu-check.sh steps is the script's, every one
// in the order of its -h text.
func TestDevelopingListsEveryGPUCheckStep(t *testing.T) {
	script, err := os.ReadFile("scripts/gpu-check.sh")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("docs/DEVELOPING.md")
	if err != nil {
		t.Fatal(err)
	}
	var help []string // step names in the order of the -h text
	for _, m := range regexp.MustCompile(`(?m)^# (?:Steps:|      ) ([a-z0-9]+) `).FindAllSubmatch(script, -1) {
		help = append(help, string(m[1]))
	}
	defined := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^step_([a-z0-9]+)\(\) \{`).FindAllSubmatch(script, -1) {
		defined[string(m[1])] = true
	}
	if len(help) != len(defined) {
		t.Fatalf("gpu-check.sh -h names %v, the script defines %v", help, defined)
	}
	for _, s := range help {
		if !defined[s] {
			t.Errorf("gpu-check.sh -h names %s, which the script does not define", s)
		}
	}
	m := regexp.MustCompile("`scripts/gpu-check.sh STEP...` \\(steps: ([a-z0-9 \\n]+);").FindSubmatch(readme)
	if m == nil {
		t.Fatal("docs/DEVELOPING.md lists no gpu-check.sh steps")
	}
	if got, want := strings.Fields(string(m[1])), help; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("docs/DEVELOPING.md lists steps %v, gpu-check.sh -h %v", got, want)
	}
}

// cpuCommand is a README command that runs on a machine without a GPU: one of this suite's binaries (or a shell
// loop over them) on the host engine, auto's choice there, or the doctor; not a launcher, a library or a GPU.
func cpuCommand(cmd string) bool {
	if !strings.HasPrefix(cmd, "./build/") && !strings.HasPrefix(cmd, "for ") {
		return false
	}
	for _, gpu := range []string{"--engine vendor", "--engine gpu", "--lib", "mpirun", "srun", "torchrun",
		"rcclx-results", "--require"} {
		if strings.Contains(cmd, gpu) {
			return false
		}
	}
	return true
}

// readmeCommands are the README's indented command lines, continuation lines joined and comments cut; the
// first command's build step (`make && `) is left to the test.
func readmeCommands(t *testing.T) []string {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	cur := ""
	for _, line := range strings.Split(string(readme), "\n") {
		if !strings.HasPrefix(line, "    ") || strings.HasPrefix(strings.TrimSpace(line), "-") {
			cur = ""
			continue
		}
		text := strings.TrimSpace(line)
		if i := strings.Index(text, "  #"); i >= 0 {
			text = strings.TrimSpace(text[:i])
		}
		cur += text
		if strings.HasSuffix(cur, "\\") {
			cur = strings.TrimSuffix(cur, "\\") + " "
			continue
		}
		cmds = append(cmds, strings.TrimPrefix(cur, "make && "))
		cur = ""
	}
	return cmds
}

// TestReadmeCPUCommandsRun runs, as written, every README command that a machine without a GPU can run: the
// first command (what auto picks here), the CPU quick start, the doctor and the multi-process loop.
func TestReadmeCPUCommandsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds every binary and runs the README's CPU commands (about 20 s)")
	}
	var run []string
	for _, c := range readmeCommands(t) {
		if cpuCommand(c) {
			run = append(run, c)
		}
	}
	if len(run) < 4 {
		t.Fatalf("found %d CPU commands in the README (%q): the extraction no longer matches its layout", len(run), run)
	}
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "build")+"/", "./cmd/...")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, c := range run {
		cmd := exec.Command("bash", "-c", "set -e; "+c)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		// A loop's background processes exit unseen by the shell: a run counts by its validated trailer.
		if err != nil || strings.Contains(c, "_perf") && !strings.Contains(string(out), "# Out of bounds values : 0 OK") {
			t.Errorf("%s: %v\n%s", c, err, out)
		}
	}
}
