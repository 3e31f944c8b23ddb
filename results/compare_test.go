package results

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat"
)

func TestCompare(t *testing.T) {
	rng := newRand()
	first := synthRecord(rng, 3, 1, 0, 0)
	second := synthRecord(rng, 4, 0.5, 0, 0)
	var out bytes.Buffer
	if err := Compare(&out, []Run{{"a.json", first}, {"b.json", second}}, CompareOptions{}); err != nil {
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

// --markdown: the same cells as the ASCII table, as a Markdown table with right-aligned columns, and the notes as
// plain lines (a "#" line would be a heading in Markdown).
func TestCompareMarkdown(t *testing.T) {
	rng := newRand()
	runs := []Run{{"a.json", synthRecord(rng, 3, 1, 0, 0)}, {"b.json", synthRecord(rng, 3, 0.5, 0, 0)}}
	var ascii, md bytes.Buffer
	if err := Compare(&ascii, runs, CompareOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Compare(&md, runs, CompareOptions{Markdown: true}); err != nil {
		t.Fatal(err)
	}
	cells := func(text string, markdown bool) (rows [][]string) {
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "#") && markdown {
				t.Errorf("a # line in Markdown: %q", line)
			}
			if !strings.HasPrefix(line, "|") || strings.Contains(line, "---") {
				continue
			}
			rows = append(rows, strings.Fields(strings.ReplaceAll(line, "|", " ")))
		}
		return rows
	}
	if a, m := cells(ascii.String(), false), cells(md.String(), true); len(a) != 4 || !slices.EqualFunc(a, m, slices.Equal) {
		t.Errorf("ASCII rows %q, Markdown rows %q", a, m)
	}
	if !strings.Contains(md.String(), "|------:|") {
		t.Errorf("no right-aligned Markdown separator:\n%s", md.String())
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
	if err := Compare(&out, []Run{{"n3.json", rec}}, CompareOptions{}); err != nil {
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

// TestCompareCyclesOfCSVAndText: the -N cycles of a size in CSV or text output give the median time and the busbw
// at that time. By hand: 4 KiB ran 2, 4 and 8 us at 2, 1 and 0.5 GB/s: median 4 us, spread 6/4, busbw 1.00; 8 KiB
// ran 4 and 8 us at 2 and 1 GB/s: median 6 us, spread 4/6, busbw 8/6 (the median of the busbw values, 1.50, is
// that of another time).
func TestCompareCyclesOfCSVAndText(t *testing.T) {
	inputs := map[string]string{
		"cycles.csv": "numCycle,size,type,redop,inplace,time,algbw,busbw\n" +
			"0,4096,float,sum,0,2.000000,2.000000,2.000000\n0,8192,float,sum,0,4.000000,2.000000,2.000000\n" +
			"1,4096,float,sum,0,4.000000,1.000000,1.000000\n1,8192,float,sum,0,8.000000,1.000000,1.000000\n" +
			"2,4096,float,sum,0,8.000000,0.500000,0.500000\n",
		"cycles.txt": "4096 1024 float sum -1 2.00 2.00 2.00 0 2.00 2.00 2.00 0\n" +
			"8192 2048 float sum -1 4.00 2.00 2.00 0 4.00 2.00 2.00 0\n" +
			"4096 1024 float sum -1 4.00 1.00 1.00 0 4.00 1.00 1.00 0\n" +
			"8192 2048 float sum -1 8.00 1.00 1.00 0 8.00 1.00 1.00 0\n" +
			"4096 1024 float sum -1 8.00 0.50 0.50 0 8.00 0.50 0.50 0\n",
	}
	want := [][]string{{"4KiB", "4.00", "150.0%", "1.00"}, {"8KiB", "6.00", "66.7%", "1.33"}}
	for name, data := range inputs {
		rec, err := Parse(name, []byte(data))
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := Compare(&out, []Run{{name, rec}}, CompareOptions{}); err != nil {
			t.Fatal(err)
		}
		var rows [][]string
		for _, line := range strings.Split(out.String(), "\n") {
			if f := strings.Fields(strings.ReplaceAll(line, "|", " ")); strings.HasPrefix(line, "|") && f[0] != "size" {
				rows = append(rows, f)
			}
		}
		if !slices.EqualFunc(rows, want, slices.Equal) {
			t.Errorf("%s: rows %q, want %q:\n%s", name, rows, want, out.String())
		}
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
		r.OutOfPlace = scaledHalf(r.OutOfPlace, 0.5)
		rec.Results = append(rec.Results, r)
	}
	rec.AB = &ABReport{Arms: [2]string{"NCCL_ALGO=ring", "NCCL_ALGO=tree"}}
	var out bytes.Buffer
	if err := Compare(&out, []Run{{"ab.json", rec}}, CompareOptions{}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if !strings.Contains(text, "A NCCL_ALGO=ring us") || !strings.Contains(text, "B NCCL_ALGO=tree us") {
		t.Errorf("arms not labelled:\n%s", text)
	}
	// Arm B took half the time at every size: one row per size with B's speedup over A.
	if strings.Count(text, " 2.000x ") != n {
		t.Errorf("want %d rows with speedup 2.000x:\n%s", n, text)
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

// TestCompareEngines: one record of --engine vendor,gpu compares its engines side by side, however the
// algorithm changes with size.
func TestCompareEngines(t *testing.T) {
	rec := synthRecord(newRand(), 3, 1, 0, 0)
	n := len(rec.Results)
	for i := range n {
		r := rec.Results[i]
		rec.Results[i].Engine, rec.Results[i].Algorithm = "vendor", "nccl"
		r.Engine, r.Algorithm = "gpu", []string{"dda_flat", "dda_tree", "ring"}[i%3]
		r.OutOfPlace = scaledHalf(r.OutOfPlace, 0.25)
		rec.Results = append(rec.Results, r)
	}
	var out bytes.Buffer
	if err := Compare(&out, []Run{{"both.json", rec}}, CompareOptions{}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if !strings.Contains(text, " vendor us ") || !strings.Contains(text, " gpu us ") || strings.Count(text, " 4.000x ") != n {
		t.Errorf("want vendor and gpu columns and %d rows with speedup 4.000x:\n%s", n, text)
	}
}

// TestCompareInPlaceOnly: runs that timed only the in-place half (-O 0) show it without --in-place.
func TestCompareInPlaceOnly(t *testing.T) {
	rec := synthRecord(newRand(), 3, 1, 0, 0)
	for i := range rec.Results {
		rec.Results[i].OutOfPlace = Half{}
	}
	var out bytes.Buffer
	if err := Compare(&out, []Run{{"p.json", rec}}, CompareOptions{}); err != nil {
		t.Fatal(err)
	}
	if text := out.String(); !strings.HasPrefix(text, "# in-place") || !strings.Contains(text, "p.json us") {
		t.Errorf("in-place only:\n%s", text)
	}
	both := synthRecord(newRand(), 3, 1, 0, 0)
	if !ShownHalf([]Run{{"p.json", rec}}, false) || ShownHalf([]Run{{"b.json", both}}, false) || !ShownHalf([]Run{{"b.json", both}}, true) {
		t.Error("ShownHalf")
	}
	// Beside a run of both halves it is left out of the out-of-place comparison, not in silence.
	out.Reset()
	if err := Compare(&out, []Run{{"b.json", both}, {"p.json", rec}}, CompareOptions{}); err != nil {
		t.Fatal(err)
	}
	want := "# NOTE p.json has no timed out-of-place rows and is left out (a run of -O 0 times only the other half: --in-place shows it)"
	if text := out.String(); !strings.Contains(text, want) || strings.Contains(text, "p.json us") {
		t.Errorf("mixed runs:\n%s", text)
	}
}

// One A/B record gives one speedup per size: compare's column, the A/B table's and the record's ab rows agree,
// however skewed the rounds (a median ratio and a geomean differ there), and both name the estimator.
func TestCompareAndABAgree(t *testing.T) {
	rng := newRand()
	sizes := []int64{8, 1024, 1 << 20}
	var a, b [][]float64
	rec := &Record{Version: SchemaVersion, Args: []string{"./all_reduce_perf"}}
	for _, size := range sizes {
		var ta, tb []float64
		for range 5 {
			x := 10 * math.Exp(rng.NormFloat64())
			ta, tb = append(ta, x), append(tb, x*(0.3+2*rng.Float64())*math.Exp(rng.NormFloat64()))
		}
		a, b = append(a, ta), append(b, tb)
		for arm, times := range [][]float64{ta, tb} {
			mean := stat.Mean(times, nil)
			rec.Results = append(rec.Results, Result{Size: size, Count: size / 4, Type: "float", Redop: "sum",
				Root: RootString(-1), ExperimentName: []string{"X=0", "X=1"}[arm],
				OutOfPlace: Half{Time: &mean, AlgBW: 1, BusBW: 1, Rounds: times}})
		}
	}
	rows := AnalyzeAB(sizes, a, b)
	rec.AB = &ABReport{Arms: [2]string{"X=0", "X=1"}, Rows: rows}
	var cmpOut, abOut bytes.Buffer
	if err := Compare(&cmpOut, []Run{{"ab.json", rec}}, CompareOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := RenderAB(&abOut, "X=0", "X=1", "time", rows); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{cmpOut.String(), abOut.String()} {
		if !strings.Contains(text, SpeedupEstimator) {
			t.Errorf("output does not name the estimator:\n%s", text)
		}
	}
	for _, r := range rows {
		want := fmt.Sprintf(" %.3fx ", r.Speedup)
		for name, text := range map[string]string{"compare": cmpOut.String(), "A/B table": abOut.String()} {
			if !strings.Contains(text, want) {
				t.Errorf("%s lacks size %d's speedup%s:\n%s", name, r.Size, want, text)
			}
		}
	}
}
