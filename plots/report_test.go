package plots

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/rcclx-tests/rcclx-tests/results"
)

// hostRun is the anchor as this suite's host engine would record it: ranks on the CPU.
func hostRun(t *testing.T) *results.Record {
	rec := anchor(t)
	rec.Suite, rec.Engine, rec.Library, rec.NcclVersion = results.SuiteName, "host", "rcclx-host=1", 0
	rec.Config.Devices = nil
	for r := range 4 {
		rec.Config.Devices = append(rec.Config.Devices, results.Device{Rank: r, Device: r, DeviceHex: "host", DeviceInfo: "host"})
	}
	return rec
}

// TestTitleNamesTheRun: the title says what ran where, from the record; a CPU run says CPU and names no GPU;
// the axes say what they show, in which unit, on which scale.
func TestTitleNamesTheRun(t *testing.T) {
	gpu := svgOf(t, []results.Run{{Record: load(t, "nccl-tests-all_reduce.txt")}}, Options{Metric: results.MetricBusBW})
	for _, want := range []string{">all_reduce, float sum, 2 ranks on NVIDIA H200, NCCL 2.28.3<", ">busbw, out-of-place<",
		">size (bytes, log scale)<", ">busbw: bus bandwidth (GB/s, log scale)<"} {
		if !strings.Contains(gpu, want) {
			t.Errorf("GPU run's SVG lacks %s", want)
		}
	}
	cpu := svgOf(t, []results.Run{{Record: hostRun(t)}}, Options{Metric: results.MetricTime, Linear: true})
	for _, want := range []string{">all_reduce, float sum, 4 ranks on the CPU, engine host, rcclx-host 1<", ">time (µs)<"} {
		if !strings.Contains(cpu, want) {
			t.Errorf("CPU run's SVG lacks %s", want)
		}
	}
	if strings.Contains(cpu, "NVIDIA") || strings.Contains(cpu, "GPU") || strings.Contains(cpu, "NCCL") {
		t.Error("a CPU run's plot names a GPU or NCCL")
	}
}

// TestLegendLabels: runs are named by what tells them apart in their records, never by file name, or by
// --label, once per input.
func TestLegendLabels(t *testing.T) {
	runs := []results.Run{{Label: "nccl-tests-all_reduce.txt", Record: load(t, "nccl-tests-all_reduce.txt")},
		{Label: "nccl-tests-alltoall.txt", Record: load(t, "nccl-tests-alltoall.txt")}}
	svg := svgOf(t, runs, Options{Metric: results.MetricBusBW})
	if !strings.Contains(svg, ">all_reduce, sum<") || !strings.Contains(svg, ">alltoall<") || strings.Contains(svg, ".txt") {
		t.Error("legend: want the collectives (and the op where one has it), no file names")
	}
	if !strings.Contains(svg, ">float, 2 ranks on NVIDIA H200, NCCL 2.28.3<") {
		t.Error("title: want what both runs share")
	}

	same := []results.Run{{Record: anchor(t)}, {Record: anchor(t)}, {Record: hostRun(t)}}
	same[1].Record.StartTime = "2026-11-22 10:00:00"
	labels, err := runLabels(same, nil)
	if err != nil || labels[0] == labels[1] || !strings.Contains(labels[1], "2026-11-22 10:00:00") ||
		!strings.Contains(labels[2], "on the CPU") {
		t.Errorf("runs alike but for start time and device: labels %q, %v", labels, err)
	}
	same[1].Record.StartTime = same[0].Record.StartTime
	if labels, err := runLabels(same[:2], nil); err != nil || labels[0] != "run 1" || labels[1] != "run 2" {
		t.Errorf("identical runs: labels %q, %v", labels, err)
	}

	svg = svgOf(t, runs, Options{Metric: results.MetricBusBW, Labels: []string{"before", "after"}})
	if !strings.Contains(svg, ">before<") || !strings.Contains(svg, ">after<") {
		t.Error("--label not in the legend")
	}
	for _, bad := range [][]string{{"one"}, {"a", "b", "c"}, {"a", " "}} {
		if _, err := PlotRuns([]string{filepath.Join(t.TempDir(), "x.png")}, runs, Options{Metric: results.MetricBusBW, Labels: bad}); err == nil ||
			!strings.Contains(err.Error(), "--label") {
			t.Errorf("--label %q: %v", bad, err)
		}
	}
}

// TestEverySizeDrawn: on the default log value axis every size is drawn, those whose bandwidth text output
// prints as 0.00 included (from their time), and every size is marked and labelled on the size axis.
func TestEverySizeDrawn(t *testing.T) {
	rec := load(t, "nccl-tests-all_reduce.txt")
	panels := results.Aggregate([]results.Run{{Label: "r", Record: rec}}, false)
	p := newSizePlot("", "")
	p.Y.Scale = plot.LogScale{}
	lines, notes, err := addSeries(p, panels[0].Series, results.MetricBusBW, true)
	if err != nil || lines != 1 || len(notes) != 0 {
		t.Fatalf("lines %d, notes %q, %v", lines, notes, err)
	}
	// 8 bytes in 18.60 us, at 2 ranks' bus factor of 1: 0.00043 GB/s.
	if p.Y.Min < 0.0004 || p.Y.Min > 0.00045 {
		t.Errorf("smallest busbw drawn %g, want the 8-byte row's 0.00043 GB/s", p.Y.Min)
	}
	labelled := map[string]bool{}
	for _, tk := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
		labelled[tk.Label] = true
	}
	for _, r := range rec.Results {
		if !labelled[results.FormatSize(r.Size)] {
			t.Errorf("size %d not labelled on the axis", r.Size)
		}
	}

	// A value that cannot be placed is said, not dropped silently.
	zero := anchor(t)
	zero.Results[0].Size = 0
	notes, err = PlotRuns([]string{filepath.Join(t.TempDir(), "z.svg")}, []results.Run{{Record: zero}}, Options{Metric: results.MetricBusBW})
	if err != nil || len(notes) != 1 || !strings.Contains(notes[0], "size 0") {
		t.Errorf("size 0: notes %q, %v", notes, err)
	}
}

// TestLegendOutsideData: each panel's legend lies right of its data, within its tile; lines take the
// Okabe-Ito colours.
func TestLegendOutsideData(t *testing.T) {
	runs := []results.Run{{Record: anchor(t)}, {Record: hostRun(t)}}
	fig := figure{}
	for _, panel := range results.Aggregate(runs, false) {
		p := newSizePlot(panel.Title, "y")
		p.Y.Scale = plot.LogScale{}
		if _, _, err := addSeries(p, panel.Series, results.MetricBusBW, true); err != nil {
			t.Fatal(err)
		}
		fig.add(p)
	}
	c := draw.New(vgsvg.New(figWidth, figHeight))
	for i, at := range fig.layout(c) {
		data := fig.panels[i].plot.DataCanvas(at.area)
		if at.legend.Min.X < data.Max.X || at.legend.Max.X > at.tile.Max.X || at.legend.Max.Y > data.Max.Y ||
			fig.panels[i].legend.Rectangle(at.legend).Size().X > at.legend.Size().X {
			t.Errorf("panel %d: legend %v, data %v, tile %v", i, at.legend.Rectangle, data.Rectangle, at.tile.Rectangle)
		}
	}
	svg := svgOf(t, runs, Options{Metric: results.MetricBusBW})
	if !strings.Contains(svg, "stroke:#0072B2") || !strings.Contains(svg, "stroke:#D55E00") || strings.Contains(svg, "#F15A60") {
		t.Error("lines are not in the Okabe-Ito palette")
	}
}

// TestOutputFiles: -o given twice writes PNG (1600x1000) and SVG; an existing file or symbolic link is
// never replaced without --force, and with it the link itself is replaced, never its target; bad names are
// refused before anything is written, and nothing is left behind.
func TestOutputFiles(t *testing.T) {
	dir := t.TempDir()
	runs := []results.Run{{Record: anchor(t)}}
	opt := Options{Metric: results.MetricBusBW}
	pngOut, svgOut := filepath.Join(dir, "busbw.png"), filepath.Join(dir, "busbw.svg")
	if _, err := PlotRuns([]string{pngOut, svgOut}, runs, opt); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, pngOut)
	if data, err := os.ReadFile(svgOut); err != nil || !bytes.Contains(data, []byte("<svg")) {
		t.Fatalf("SVG: %v", err)
	}

	before, _ := os.ReadFile(pngOut)
	if _, err := PlotRuns([]string{pngOut}, runs, Options{Metric: results.MetricTime}); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("existing file: %v", err)
	}
	if after, _ := os.ReadFile(pngOut); !bytes.Equal(before, after) {
		t.Error("existing file changed without --force")
	}
	if _, err := PlotRuns([]string{pngOut}, runs, Options{Metric: results.MetricTime, Force: true}); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(pngOut); bytes.Equal(before, after) {
		t.Error("--force did not replace the file")
	}

	victim := filepath.Join(dir, "victim.txt")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.png")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	if _, err := PlotRuns([]string{link}, runs, opt); err == nil {
		t.Error("symbolic link replaced without --force")
	}
	if _, err := PlotRuns([]string{link}, runs, Options{Metric: results.MetricBusBW, Force: true}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(victim); string(data) != "keep" {
		t.Error("the link's target was written")
	}
	if st, err := os.Lstat(link); err != nil || !st.Mode().IsRegular() {
		t.Errorf("the link was not replaced by the plot: %v %v", st, err)
	}
	checkPNG(t, link)

	for _, bad := range [][]string{{filepath.Join(dir, "a.bmp")}, {filepath.Join(dir, "noext")},
		{filepath.Join(dir, "b.png"), filepath.Join(dir, "b.png")}, nil} {
		if _, err := PlotRuns(bad, runs, opt); err == nil {
			t.Errorf("-o %q accepted", bad)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "d.png"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := PlotRuns([]string{filepath.Join(dir, "d.png")}, runs, Options{Metric: results.MetricBusBW, Force: true}); err == nil {
		t.Error("a directory replaced")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); got != "busbw.png busbw.svg d.png link.png victim.txt" {
		t.Errorf("directory holds %s", got)
	}
}
