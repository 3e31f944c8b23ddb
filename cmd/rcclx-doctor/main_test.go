package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

// TestNoGPUExplains: without a driver the first row says so, with what to add, and names the host engine; no GPU
// is no failure (exit 0), and the summary says the host engine is what this machine measures.
func TestNoGPUExplains(t *testing.T) {
	if gpurt.Load() == nil {
		t.Skip("a CUDA driver is installed here: the no-GPU path cannot be shown")
	}
	results, gpus := runChecks()
	if gpus != nil || len(results) != 1 || results[0].step != stepDriver || !results[0].absent {
		t.Fatalf("results %+v", results)
	}
	var code int
	out := captureStdout(t, func() { code = finish(options{}, results, gpus) })
	if code != 0 || !strings.Contains(out, "none  gpu runtime: none found: CUDA: cannot load the CUDA driver") ||
		!strings.Contains(out, "add:  install the NVIDIA driver") || !strings.Contains(out, "--engine host") ||
		!strings.Contains(out, "\nsummary: this machine can measure --engine host (the CPU); --engine auto measures host\n") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	out = captureStdout(t, func() { code = finish(options{require: []string{"host", "gpu"}}, results, gpus) })
	if code != 1 || !strings.Contains(out, "required gpu: not on this machine") || strings.Contains(out, "required host") {
		t.Errorf("--require host,gpu: exit %d:\n%s", code, out)
	}
}

// --require is met by whatever row provides the name, a runtime's row included; a failed row provides nothing
// and fails the run.
func TestRequire(t *testing.T) {
	rows := []result{{step: "HIP GPUs", provides: []string{"hip"}}, {step: "kernel", provides: []string{"gpu"}}}
	var code int
	out := captureStdout(t, func() { code = finish(options{require: []string{"hip", "gpu", "host"}}, rows, nil) })
	if code != 0 || !strings.Contains(out, "--engine gpu (this suite's kernels), --engine host (the CPU)") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	rows[1].err = errors.New("launch failed")
	out = captureStdout(t, func() { code = finish(options{require: []string{"hip"}}, rows, nil) })
	if code != 1 || !strings.Contains(out, "1 check(s) failed") || strings.Contains(out, "required") {
		t.Errorf("a failed row: exit %d:\n%s", code, out)
	}
	rows[1].err, rows[1].absent = errors.New("not installed"), true
	out = captureStdout(t, func() { code = finish(options{}, rows, nil) })
	if code != 0 || strings.Contains(out, "failed") {
		t.Errorf("an absent row: exit %d:\n%s", code, out)
	}
	if _, code := parseFlags([]string{"--require", "gpu,nvidia"}, io.Discard, io.Discard); code != 2 {
		t.Errorf("--require gpu,nvidia: exit %d", code)
	}
}

// TestEveryFailureHasAFix: each check that can fail on a user's machine prints a fix.
func TestEveryFailureHasAFix(t *testing.T) {
	for _, step := range []string{stepDriver, stepDevices, stepNVRTC, stepCompile, stepIPC + " dev0 -> child dev1",
		stepPeer + " dev0 -> dev1", stepLibrary, stepAuto} {
		out := captureStdout(t, func() { printTable([]result{{step: step, err: errors.New("broken")}}) })
		if !strings.Contains(out, "FAIL") || !strings.Contains(out, "fix:") {
			t.Errorf("%s: %q", step, out)
		}
	}
}

func captureStdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = w
	f()
	os.Stdout = saved
	w.Close()
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, r); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestHelp: --help prints the usage once, on stdout, ending with a newline and naming every user flag; stderr
// stays empty, and the exit status is 0. A bad flag or value is one line on stderr, exit 2.
func TestHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	if _, code := parseFlags([]string{"--help"}, &out, &errOut); code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	if errOut.Len() != 0 {
		t.Errorf("--help wrote to stderr: %q", errOut.String())
	}
	s := out.String()
	if !strings.HasSuffix(s, "\n") || strings.Count(s, "Usage") != 1 {
		t.Errorf("--help output:\n%q", s)
	}
	for _, f := range []string{"--lib", "--bench", "--iters", "--version", "--require"} {
		if !strings.Contains(s, f) {
			t.Errorf("--help does not name %s:\n%s", f, s)
		}
	}
	if strings.Contains(s, "ipc-child") {
		t.Errorf("--help names an internal flag:\n%s", s)
	}
	for _, args := range [][]string{{"--bogus"}, {"--iters", "0"}, {"extra"}} {
		out.Reset()
		errOut.Reset()
		if _, code := parseFlags(args, &out, &errOut); code != 2 || out.Len() != 0 ||
			strings.Count(errOut.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out.String(), errOut.String())
		}
	}
	if o, code := parseFlags([]string{"--bench", "--iters", "100"}, &out, &errOut); code != -1 || !o.bench || o.iters != 100 {
		t.Errorf("--bench --iters 100: %+v, exit %d", o, code)
	}
}
