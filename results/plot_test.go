package results

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

func TestPlotRuns(t *testing.T) {
	dir := t.TempDir()
	runs := []Run{{"anchor", loadAnchor(t)}, {"half speed", synthRecord(newRand(), 20, 2, 0, 0)}}
	for _, metric := range []string{MetricBusBW, MetricAlgBW, MetricTime} {
		out := filepath.Join(dir, metric+".png")
		if err := PlotRuns(out, runs, metric, false); err != nil {
			t.Fatal(err)
		}
		checkPNG(t, out)
	}
	svg := filepath.Join(dir, "busbw.svg")
	if err := PlotRuns(svg, runs, MetricBusBW, true); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(svg); !bytes.Contains(data, []byte("<svg")) || !bytes.Contains(data, []byte("half speed")) {
		t.Fatal("SVG lacks the drawing or the legend")
	}
	if err := PlotRuns(filepath.Join(dir, "x.png"), runs, "latency", false); err == nil || !strings.Contains(err.Error(), "latency") {
		t.Fatalf("bad metric: %v", err)
	}
	if err := PlotRuns(filepath.Join(dir, "x.png"), []Run{{"empty", &Record{}}}, MetricBusBW, false); err == nil {
		t.Fatal("empty record plotted")
	}
}

func TestPlotAB(t *testing.T) {
	var sizes []int64
	var a, b [][]float64
	for i := 0; i < 12; i++ {
		ra, rb := abRounds(8, 1+0.05*float64(i), 0.03)
		sizes, a, b = append(sizes, int64(1024)<<i), append(a, ra), append(b, rb)
	}
	out := filepath.Join(t.TempDir(), "speedup.png")
	if err := PlotAB(out, &ABReport{Arms: [2]string{"nccl", "dda"}, Rows: AnalyzeAB(sizes, a, b)}); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, out)
}
