// Package plots draws the records of perf runs as pictures for reports. It is
// kept apart from package results so that only rcclx-results carries the
// plotting stack and its fonts; the perf binaries do not import it.
package plots

import (
	"bytes"
	"cmp"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/rcclx-tests/rcclx-tests/results"
)

// Plot dimensions; the output's extension picks SVG, PNG or PDF.
const (
	plotWidth  = 18 * vg.Centimeter
	plotHeight = 11 * vg.Centimeter
)

// Liberation Sans has the metrics of Arial and Helvetica, so an SVG viewer
// that lacks it lays out the same text in the same space with the fallbacks
// svgFamilies names.
const svgFamilies = `font-family:'Liberation Sans',Arial,Helvetica,sans-serif;`

func init() {
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
}

// Options choose what PlotRuns draws.
type Options struct {
	Metric  string // results.MetricBusBW, MetricAlgBW or MetricTime
	InPlace bool   // the in-place half instead of out-of-place
	LogY    bool   // a logarithmic value axis (always for time)
}

// PlotRuns draws the metric against size: per series (run, engine, A/B arm,
// type, reduction) the median over the samples at each
// size (-N cycles, rounds) as a line, and their range from minimum to
// maximum as a shaded band.
func PlotRuns(out string, runs []results.Run, opt Options) error {
	if err := results.CheckMetric(opt.Metric); err != nil {
		return err
	}
	unit := map[string]string{results.MetricTime: "us"}[opt.Metric]
	if unit == "" {
		unit = "GB/s"
	}
	logY := opt.LogY || opt.Metric == results.MetricTime
	inPlace := results.ShownHalf(runs, opt.InPlace)
	series := results.Aggregate(runs, inPlace)
	title := fmt.Sprintf("%s, %s", opt.Metric, results.HalfName(inPlace))
	if banded(series) {
		title += ": median, band from min to max"
	}
	p := newSizePlot(title, fmt.Sprintf("%s (%s)", opt.Metric, unit))
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	drawn := 0
	for _, s := range series {
		var med, lo, hi plotter.XYs
		for _, pt := range s.Points {
			v := pt.Values(opt.Metric)
			// Log axes cannot show zero: size 0, and values of 0 on a log value axis, drop out.
			if pt.Size <= 0 || (logY && results.Min(v) <= 0) {
				continue
			}
			x := float64(pt.Size)
			med = append(med, plotter.XY{X: x, Y: results.Median(v)})
			lo = append(lo, plotter.XY{X: x, Y: results.Min(v)})
			hi = append(hi, plotter.XY{X: x, Y: results.Max(v)})
		}
		if len(med) == 0 {
			continue
		}
		c := plotutil.Color(drawn)
		if banded([]results.Series{s}) {
			if err := addBand(p, lo, hi, c); err != nil {
				return err
			}
		}
		line, points, err := plotter.NewLinePoints(med)
		if err != nil {
			return err
		}
		line.Color, points.Color = c, c
		points.Shape = plotutil.Shape(drawn)
		p.Add(line, points)
		p.Legend.Add(s.Label, line, points)
		drawn++
	}
	if drawn == 0 {
		return fmt.Errorf("plot: no %s values to draw", opt.Metric)
	}
	return save(p, out)
}

// banded reports whether any point of series that can be drawn (size above 0) has more than one sample.
func banded(series []results.Series) bool {
	for _, s := range series {
		for _, p := range s.Points {
			if p.Size > 0 && len(p.Time) > 1 {
				return true
			}
		}
	}
	return false
}

// addBand shades the area between lo and hi in a light shade of c.
func addBand(p *plot.Plot, lo, hi plotter.XYs, c color.Color) error {
	ring := append(plotter.XYs{}, lo...)
	for i := len(hi) - 1; i >= 0; i-- {
		ring = append(ring, hi[i])
	}
	band, err := plotter.NewPolygon(ring)
	if err != nil {
		return err
	}
	r, g, b, _ := c.RGBA()
	band.Color = color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 64}
	band.LineStyle.Width = 0
	p.Add(band)
	return nil
}

// PlotAB draws the speedup of arm B over arm A per size with its 95%
// interval as error bars, one line per type, reduction and root, and the line
// of equal speed.
func PlotAB(out string, ab *results.ABReport) error {
	p := newSizePlot("A/B speedup of B over A, 95% interval", "speedup (time A / time B)")
	// A ratio and its inverse lie the same distance from 1 on a log axis.
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.TickerFunc(ratioTicks)
	one := plotter.NewFunction(func(float64) float64 { return 1 })
	one.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
	p.Add(one)
	var lines []any // name, points, ...: AddLinePoints colours them in turn, as the bars are here
	for _, s := range ab.Series() {
		var pts abPoints
		for _, r := range s.Rows {
			if r.Size > 0 && r.Speedup > 0 {
				pts = append(pts, r)
			}
		}
		if len(pts) == 0 {
			continue
		}
		bars, err := plotter.NewYErrorBars(pts)
		if err != nil {
			return err
		}
		bars.Color = plotutil.Color(len(lines) / 2)
		p.Add(bars)
		lines = append(lines, cmp.Or(s.Label, "speedup"), pts)
	}
	if len(lines) == 0 {
		return fmt.Errorf("plot: the A/B report has no rows to draw")
	}
	if err := plotutil.AddLinePoints(p, lines...); err != nil {
		return err
	}
	// The arms' settings can be long: they go in the legend, one per line, not in the title.
	p.Legend.Add("A: " + ab.Arms[0])
	p.Legend.Add("B: " + ab.Arms[1])
	return save(p, out)
}

// abPoints presents A/B rows to gonum/plot as points with Y errors.
type abPoints []results.ABRow

func (a abPoints) Len() int                    { return len(a) }
func (a abPoints) XY(i int) (float64, float64) { return float64(a[i].Size), a[i].Speedup }
func (a abPoints) YError(i int) (float64, float64) {
	return a[i].Speedup - a[i].Lo, a[i].Hi - a[i].Speedup
}

func newSizePlot(title, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "size (bytes)"
	p.Y.Label.Text = yLabel
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.TickerFunc(pow2Ticks)
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	return p
}

// save writes p in the format of out's extension. SVG text names fallback
// fonts (svgFamilies) so that it renders the same where Liberation is not
// installed.
func save(p *plot.Plot, out string) error {
	// A log axis over a single value would be widened by 1 either side, down to 0 or below: widen it by a
	// factor of 2 instead.
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		if _, log := ax.Scale.(plot.LogScale); log && ax.Min == ax.Max && ax.Min > 0 {
			ax.Min, ax.Max = ax.Min/2, ax.Max*2
		}
	}
	ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(out)), ".")
	w, err := p.WriterTo(plotWidth, plotHeight, ext)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		return err
	}
	data := buf.Bytes()
	if ext == "svg" {
		data = bytes.ReplaceAll(data, []byte("font-family:Liberation Sans;"), []byte(svgFamilies))
	}
	return os.WriteFile(out, data, 0o644)
}

// ratioTicks labels the round ratios in [min, max], 1 always among them.
func ratioTicks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	min, max = math.Max(min, 1e-12), math.Max(max, 1e-12)
	lo, hi := math.Floor(math.Log10(min)), math.Ceil(math.Log10(max))
	for e := lo; e <= hi; e++ {
		decade := math.Pow(10, e)
		steps := []float64{1, 1.25, 1.5, 2, 3, 5}
		if math.Log10(max/min) > 2 { // a wide range: decades only
			steps = steps[:1]
		}
		for _, m := range steps {
			if v := decade * m; v >= min && v <= max || v == 1 {
				ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 3, 64)})
			}
		}
	}
	return ticks
}

// pow2Ticks marks every power of two in [min, max], labelling about eight.
func pow2Ticks(min, max float64) []plot.Tick {
	if min <= 0 || max < min {
		return nil
	}
	lo, hi := math.Floor(math.Log2(min)), math.Ceil(math.Log2(max))
	step := math.Max(1, math.Ceil((hi-lo)/8))
	var ticks []plot.Tick
	for e := lo; e <= hi; e++ {
		t := plot.Tick{Value: math.Exp2(e)}
		if math.Mod(e-lo, step) == 0 {
			t.Label = results.FormatSize(int64(t.Value))
		}
		ticks = append(ticks, t)
	}
	return ticks
}
