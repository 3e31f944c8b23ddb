package plots

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/results"
)

func checkPNG(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 300 || b.Dy() < 200 {
		t.Fatalf("%s: %dx%d image", path, b.Dx(), b.Dy())
	}
	// A blank canvas compresses to almost nothing.
	if len(data) < 10000 {
		t.Fatalf("%s: only %d bytes", path, len(data))
	}
}

func anchor(t *testing.T) *results.Record {
	t.Helper()
	rec, err := results.Load(filepath.Join("..", "results", "testdata", "nccl-tests-all_reduce.json"))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// cycles repeats rec's rows at the given time factors, as -N cycles print them.
func cycles(rec *results.Record, factors ...float64) *results.Record {
	out := *rec
	out.Results = nil
	for _, f := range factors {
		for _, r := range rec.Results {
			if r.OutOfPlace.Time == nil {
				continue
			}
			t := *r.OutOfPlace.Time * f
			r.OutOfPlace.Time, r.OutOfPlace.AlgBW, r.OutOfPlace.BusBW = &t, r.OutOfPlace.AlgBW/f, r.OutOfPlace.BusBW/f
			out.Results = append(out.Results, r)
		}
	}
	return &out
}

func TestPlotRuns(t *testing.T) {
	dir := t.TempDir()
	runs := []results.Run{{Label: "anchor", Record: anchor(t)}, {Label: "3 cycles", Record: cycles(anchor(t), 1.5, 2, 3)}}
	for _, metric := range []string{results.MetricBusBW, results.MetricAlgBW, results.MetricTime} {
		out := filepath.Join(dir, metric+".png")
		if err := PlotRuns(out, runs, Options{Metric: metric, LogY: metric == results.MetricBusBW}); err != nil {
			t.Fatal(err)
		}
		checkPNG(t, out)
	}
	if err := PlotRuns(filepath.Join(dir, "x.png"), runs, Options{Metric: "latency"}); err == nil || !strings.Contains(err.Error(), "latency") {
		t.Fatalf("bad metric: %v", err)
	}
	if err := PlotRuns(filepath.Join(dir, "x.png"), []results.Run{{Label: "empty", Record: &results.Record{}}}, Options{Metric: results.MetricBusBW}); err == nil {
		t.Fatal("empty record plotted")
	}
}

// TestPlotSVG: one legend entry per run however many cycles it has, a band where there are several, and text
// that names fallback fonts and embeds none.
func TestPlotSVG(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "busbw.svg")
	runs := []results.Run{{Label: "anchor", Record: anchor(t)}, {Label: "3 cycles", Record: cycles(anchor(t), 1.5, 2, 3)}}
	if err := PlotRuns(svg, runs, Options{Metric: results.MetricBusBW}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if !strings.Contains(text, "<svg") || strings.Count(text, ">3 cycles<") != 1 || strings.Contains(text, "#2") {
		t.Error("SVG lacks the drawing, or has not one legend entry per run")
	}
	if !strings.Contains(text, "median, band from min to max") {
		t.Error("title does not say the band is drawn")
	}
	if strings.Contains(text, "@font-face") || strings.Contains(text, "font-family:Liberation") ||
		!strings.Contains(text, "Arial,Helvetica,sans-serif") {
		t.Error("SVG fonts: want generic fallbacks and nothing embedded")
	}
}

func TestPlotAB(t *testing.T) {
	var sizes []int64
	var a, b [][]float64
	for i := 0; i < 12; i++ {
		var ra, rb []float64
		for j := range 8 {
			ra = append(ra, 10*(1+0.02*math.Sin(float64(i+j))))
			rb = append(rb, 10/(1+0.05*float64(i))*(1+0.02*math.Cos(float64(i*j))))
		}
		sizes, a, b = append(sizes, int64(1024)<<i), append(a, ra), append(b, rb)
	}
	out := filepath.Join(t.TempDir(), "speedup.png")
	ab := &results.ABReport{Arms: [2]string{"NCCL_ALGO=ring", "NCCL_ALGO=tree"}, Rows: results.AnalyzeAB(sizes, a, b)}
	if err := PlotAB(out, ab); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, out)

	// Rows of two reductions are two lines, each in the legend.
	for i := range ab.Rows {
		ab.Rows[i].Type, ab.Rows[i].Redop, ab.Rows[i].Root = "float", []string{"sum", "max"}[i%2], -1
	}
	svg := filepath.Join(t.TempDir(), "speedup.svg")
	if err := PlotAB(svg, ab); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	if text := string(data); strings.Count(text, ">sum<") != 1 || strings.Count(text, ">max<") != 1 ||
		strings.Contains(text, ">speedup<") {
		t.Error("SVG legend: want one entry per reduction")
	}
}

// TestPerfBinariesDoNotImportPlots: the perf binaries stay slim; only rcclx-results carries gonum/plot and its
// fonts.
func TestPerfBinariesDoNotImportPlots(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command on PATH: %v", err)
	}
	mains, err := filepath.Glob(filepath.Join("..", "cmd", "*_perf"))
	if err != nil || len(mains) == 0 {
		t.Fatalf("no perf binaries under cmd/: %v", err)
	}
	for _, dir := range append(mains, filepath.Join("..", "cmd", "rcclx-results")) {
		out, err := exec.Command(goTool, "list", "-deps", "./"+dir).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", dir, err, out)
		}
		deps := "\n" + string(out)
		plotted := strings.Contains(deps, "\ngithub.com/rcclx-tests/rcclx-tests/plots\n") ||
			strings.Contains(deps, "\ngonum.org/v1/plot\n")
		if want := filepath.Base(dir) == "rcclx-results"; plotted != want {
			t.Errorf("%s imports the plotting stack: %v, want %v", filepath.Base(dir), plotted, want)
		}
	}
}

// TestPlotPanelPerType: more series than a legend holds, of several types, are drawn in a panel per type, each
// titled by its type and with a legend of its reductions only.
func TestPlotPanelPerType(t *testing.T) {
	rec := anchor(t)
	var mixed results.Record = *rec
	mixed.Results = nil
	types := []string{"float", "half", "int32"}
	for _, dt := range types {
		for _, op := range []string{"sum", "prod", "max", "min", "avg"} {
			for _, r := range rec.Results {
				r.Type, r.Redop = dt, op
				mixed.Results = append(mixed.Results, r)
			}
		}
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "mixed.svg")
	if err := PlotRuns(out, []results.Run{{Label: "mixed", Record: &mixed}}, Options{Metric: results.MetricBusBW}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	svg := string(data)
	for _, dt := range types {
		if strings.Count(svg, ">"+dt+": busbw, out-of-place<") != 1 {
			t.Errorf("no panel titled %s", dt)
		}
	}
	if strings.Contains(svg, ">float sum<") || strings.Count(svg, ">sum<") != len(types) {
		t.Errorf("legends should name the reduction only, once per panel")
	}
	png := filepath.Join(dir, "mixed.png")
	if err := PlotRuns(png, []results.Run{{Label: "mixed", Record: &mixed}}, Options{Metric: results.MetricBusBW}); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, png)
}

// Over many decades (an A/B interval from two rounds) about eight ticks are labelled, 1 always.
func TestRatioTicksWideRange(t *testing.T) {
	labelled := map[string]bool{}
	for _, tk := range ratioTicks(1e-12, 1e15) {
		if tk.Label != "" {
			labelled[tk.Label] = true
		}
	}
	if len(labelled) > 9 || !labelled["1"] {
		t.Errorf("labels %v", labelled)
	}
}
