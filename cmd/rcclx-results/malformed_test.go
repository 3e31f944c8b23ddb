package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMalformedInputs: a result file cut anywhere, random bytes, an empty file, a directory or a missing file,
// as baseline or as candidate of gate and as a run of compare, is one line naming the file, exit 1, and nothing
// on stdout.
func TestMalformedInputs(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	json, err := os.ReadFile(anchor)
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	for i := 0; i < 8; i++ {
		cut := 1 + rand.IntN(len(json)-2)
		bad = append(bad, write("cut"+string(rune('a'+i))+".json", json[:cut]))
	}
	junk := make([]byte, 64)
	for i := range junk {
		junk[i] = byte(rand.Uint32())
	}
	bad = append(bad, write("junk.json", junk), write("empty.json", nil), filepath.Join(dir, "missing.json"))
	if err := os.Mkdir(filepath.Join(dir, "dir.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	bad = append(bad, filepath.Join(dir, "dir.json"))
	for _, f := range bad {
		for _, args := range [][]string{{"gate", "--baseline", anchor, f}, {"gate", "--baseline", f, anchor},
			{"compare", anchor, f}} {
			code, out, errOut := runCLI(t, args...)
			if code != exitUsage || out != "" || strings.Count(errOut, "\n") != 1 ||
				!strings.HasPrefix(errOut, "rcclx-results: ") || !strings.Contains(errOut, filepath.Base(f)) {
				t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
			}
		}
	}
}
