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
	if b := img.Bounds(); b.Dx() != 1600 || b.Dy() != 1000 {
		t.Fatalf("%s: %dx%d image, want 1600x1000", path, b.Dx(), b.Dy())
	}
	// A blank canvas compresses to almost nothing.
	if len(data) < 10000 {
		t.Fatalf("%s: only %d bytes", path, len(data))
	}
}

func anchor(t *testing.T) *results.Record {
	t.Helper()
	return load(t, "nccl-tests-all_reduce.json")
}

func load(t *testing.T, name string) *results.Record {
	t.Helper()
	rec, err := results.Load(filepath.Join("..", "results", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// svgOf draws runs as SVG and returns its text.
func svgOf(t *testing.T, runs []results.Run, opt Options) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "plot.svg")
	if _, err := PlotRuns([]string{out}, runs, opt); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
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
		if _, err := PlotRuns([]string{out}, runs, Options{Metric: metric, Linear: metric == results.MetricAlgBW}); err != nil {
			t.Fatal(err)
		}
		checkPNG(t, out)
	}
	if _, err := PlotRuns([]string{filepath.Join(dir, "x.png")}, runs, Options{Metric: "latency"}); err == nil || !strings.Contains(err.Error(), "latency") {
		t.Fatalf("bad metric: %v", err)
	}
	if _, err := PlotRuns([]string{filepath.Join(dir, "x.png")}, []results.Run{{Label: "empty", Record: &results.Record{}}}, Options{Metric: results.MetricBusBW}); err == nil {
		t.Fatal("empty record plotted")
	}
}

// TestPlotSVG: one legend entry per run however many cycles it has, a band where there are several, and text
// that names fallback fonts and embeds none.
func TestPlotSVG(t *testing.T) {
	runs := []results.Run{{Record: anchor(t)}, {Record: cycles(anchor(t), 1.5, 2, 3)}}
	text := svgOf(t, runs, Options{Metric: results.MetricBusBW, Labels: []string{"anchor", "3 cycles"}})
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
	rec := anchor(t)
	rec.AB = ab
	if _, err := PlotAB([]string{out}, rec, Options{}); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, out)

	// Rows of two reductions are two lines, each in the legend.
	for i := range ab.Rows {
		ab.Rows[i].Type, ab.Rows[i].Redop, ab.Rows[i].Root = "float", []string{"sum", "max"}[i%2], -1
	}
	svg := filepath.Join(t.TempDir(), "speedup.svg")
	if _, err := PlotAB([]string{svg}, rec, Options{}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if strings.Count(text, ">sum<") != 1 || strings.Count(text, ">max<") != 1 || strings.Contains(text, ">speedup<") {
		t.Error("SVG legend: want one entry per reduction")
	}
	for _, want := range []string{">all_reduce, float sum, 2 ranks on NVIDIA H200, NCCL 2.28.3<", ">A: NCCL_ALGO=ring<",
		">speedup (geomean of per-cycle time ratios, time A / time B, log scale)<", ">1KiB<", ">2MiB<"} {
		if !strings.Contains(text, want) {
			t.Errorf("A/B SVG lacks %s", want)
		}
	}
	if _, err := PlotAB([]string{filepath.Join(t.TempDir(), "l.png")}, rec, Options{Labels: []string{"x"}}); err == nil {
		t.Error("--label accepted for an A/B plot")
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
	runs := []results.Run{{Record: &mixed}}
	svg := svgOf(t, runs, Options{Metric: results.MetricBusBW})
	for _, dt := range types {
		if strings.Count(svg, ">"+dt+"<") != 1 {
			t.Errorf("no panel titled %s", dt)
		}
	}
	if strings.Contains(svg, ">float sum<") || strings.Count(svg, ">sum<") != len(types) {
		t.Errorf("legends should name the reduction only, once per panel")
	}
	if !strings.Contains(svg, ">all_reduce, float,half,int32 5 ops, 2 ranks on NVIDIA H200, NCCL 2.28.3<") {
		t.Errorf("title of a record of several types and ops")
	}
	out := filepath.Join(t.TempDir(), "mixed.png")
	if _, err := PlotRuns([]string{out}, runs, Options{Metric: results.MetricBusBW}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 2*1600 || b.Dy() != 2*1000 {
		t.Errorf("3 panels: %dx%d, want a grid of 2x2 tiles of 1600x1000", b.Dx(), b.Dy())
	}
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
