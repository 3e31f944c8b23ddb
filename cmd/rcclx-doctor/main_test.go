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

// TestNoGPUExplains: without a driver the first check fails with a fix that names the host engine.
func TestNoGPUExplains(t *testing.T) {
	if gpurt.Load() == nil {
		t.Skip("a CUDA driver is installed here: the no-GPU path cannot be shown")
	}
	results, gpus := runChecks()
	if gpus != nil || len(results) != 1 || results[0].step != stepDriver || results[0].err == nil {
		t.Fatalf("results %+v", results)
	}
	out := captureStdout(t, func() { printTable(results) })
	if !strings.Contains(out, "fix:  install the NVIDIA driver") || !strings.Contains(out, "--engine host") {
		t.Errorf("no fix printed:\n%s", out)
	}
}

// TestEveryFailureHasAFix: each check that can fail on a user's machine prints a fix.
func TestEveryFailureHasAFix(t *testing.T) {
	for _, step := range []string{stepDriver, stepDevices, stepNVRTC, stepCompile, stepIPC + " dev0 -> child dev1",
		stepPeer + " dev0 -> dev1", stepLibrary} {
		out := captureStdout(t, func() { printTable([]result{{step, "", errors.New("broken")}}) })
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
	for _, f := range []string{"--lib", "--bench", "--iters", "--version"} {
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
