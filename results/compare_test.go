package results

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCompare(t *testing.T) {
	rng := newRand()
	first := synthRecord(rng, 3, 1, 0, 0)
	second := synthRecord(rng, 4, 0.5, 0, 0)
	var out bytes.Buffer
	if err := Compare(&out, []Run{{"a.json", first}, {"b.json", second}}, false); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"a.json us", "b.json GB/s", "speedup", "2.000x", "64B"} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
	// 64B is only in the second run: no time and no speedup in the first's columns.
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, " 64B ") && strings.Count(line, " - ") != 3 {
			t.Errorf("row only in the second run: %q", line)
		}
	}
}

func TestLoadRunsLabels(t *testing.T) {
	dir := t.TempDir()
	rec := synthRecord(newRand(), 2, 1, 0, 0)
	var paths []string
	for _, sub := range []string{"x", "y"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		p, err := Write(filepath.Join(dir, sub, "run.json"), rec)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	p, err := Write(filepath.Join(dir, "other.json"), rec)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := LoadRuns(append(paths, p))
	if err != nil {
		t.Fatal(err)
	}
	if runs[0].Label != paths[0] || runs[2].Label != "other.json" {
		t.Fatalf("labels %q %q", runs[0].Label, runs[2].Label)
	}
}
