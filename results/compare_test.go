package results

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	for _, want := range []string{"a.json us", "b.json us", "busbw", "bus bandwidth", "out-of-place", "speedup", "2.000x", "64B"} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
	// 64B is only in the second run: no time and no speedup in the first's columns.
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(strings.ReplaceAll(line, "|", " "))
		if len(f) > 0 && f[0] == "64B" && (len(f) != 8 || f[1] != "-" || f[2] != "-" || f[3] != "-" || f[4] == "-" || f[7] != "-") {
			t.Errorf("row only in the second run: %q", line)
		}
	}
}

// TestCompareOneRowPerSize: -N cycles (repeated rows) and rounds collapse into one row per size with the median
// time and the spread of the samples.
func TestCompareOneRowPerSize(t *testing.T) {
	rec := synthRecord(newRand(), 3, 1, 0, 0)
	// Three cycles: the same sizes again at twice and three times the time; the median is the 2x cycle.
	base := slices.Clone(rec.Results)
	for _, f := range []float64{2, 3} {
		for _, r := range base {
			r.OutOfPlace = scaledHalf(r.OutOfPlace, f)
			rec.Results = append(rec.Results, r)
		}
	}
	var out bytes.Buffer
	if err := Compare(&out, []Run{{"n3.json", rec}}, false); err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Fields(strings.Trim(line, "| "))
		if len(f) < 4 || !strings.HasSuffix(f[0], "B") || f[0] == "size" {
			continue
		}
		rows++
		i := slices.IndexFunc(base, func(r Result) bool { return FormatSize(r.Size) == f[0] })
		if i < 0 {
			t.Fatalf("row %q: no such size", line)
		}
		want := 2 * *base[i].OutOfPlace.Time
		if f[2] != fmt.Sprintf("%.2f", want) || f[4] != "100.0%" {
			t.Errorf("row %q: want median %.2f and spread 100.0%%", line, want)
		}
	}
	if rows != 3 {
		t.Errorf("%d rows, want one per size:\n%s", rows, out.String())
	}
}

// TestCompareLabelsArms: an A/B record's rows carry the arm (A or B) and its setting.
func TestCompareLabelsArms(t *testing.T) {
	rec := synthRecord(newRand(), 2, 1, 0, 0)
	n := len(rec.Results)
	for i := range n {
		r := rec.Results[i]
		rec.Results[i].ExperimentName = "NCCL_ALGO=ring"
		r.ExperimentName = "NCCL_ALGO=tree"
		rec.Results = append(rec.Results, r)
	}
	rec.AB = &ABReport{Arms: [2]string{"NCCL_ALGO=ring", "NCCL_ALGO=tree"}}
	var out bytes.Buffer
	if err := Compare(&out, []Run{{"ab.json", rec}}, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "A NCCL_ALGO=ring") || !strings.Contains(out.String(), "B NCCL_ALGO=tree") {
		t.Errorf("arms not labelled:\n%s", out.String())
	}
}

func scaledHalf(h Half, f float64) Half {
	t := *h.Time * f
	h.Time, h.AlgBW, h.BusBW = &t, h.AlgBW/f, h.BusBW/f
	return h
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
