package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// RCCL_TESTS_ROCTX=1: a rocTX range named as rccl-tests names it around each half's timed loop, on a stand-in
// libroctx64.so that logs its calls; 0 makes none.
func TestROCTXRanges(t *testing.T) {
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc: the test links its stand-in rocTX library with it")
	}
	bin := binary(t)
	dir := t.TempDir()
	if b, err := exec.Command(cc, "-shared", "-fPIC", "-o", filepath.Join(dir, "libroctx64.so"),
		"../../internal/roctx/testdata/roctx.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	for _, v := range []string{"1", "0"} {
		log := filepath.Join(dir, "log"+v)
		cmd := exec.Command(bin, "--engine", "host", "-g", "2", "-b", "1K", "-e", "2K", "-f", "2", "-w", "1", "-n", "2")
		cmd.Env = append(os.Environ(), "RCCL_TESTS_ROCTX="+v, "LD_LIBRARY_PATH="+dir, "ROCTX_LOG="+log)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("RCCL_TESTS_ROCTX=%s: %v\n%s", v, err, out)
		}
		got, _ := os.ReadFile(log)
		want := ""
		if v == "1" {
			for _, half := range []string{"size=1024 count=256 type=7 op=0 in_place=0", "size=1024 count=256 type=7 op=0 in_place=1",
				"size=2048 count=512 type=7 op=0 in_place=0", "size=2048 count=512 type=7 op=0 in_place=1"} {
				want += "push rccl-tests timed_loop " + half + " proc=0 thread=0 ngpus=2 graph=0\npop\n"
			}
		}
		if string(got) != want {
			t.Errorf("RCCL_TESTS_ROCTX=%s: calls\n%s\nwant\n%s", v, got, strings.TrimSpace(want))
		}
	}
}
