package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/cuda"
)

// TestNoGPUExplains: without a driver the first check fails with a fix that names the host engine.
func TestNoGPUExplains(t *testing.T) {
	if cuda.Load() == nil {
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
