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
	"gonum.org/v1/plot/vg/draw"

	"github.com/rcclx-tests/rcclx-tests/results"
)

// Plot dimensions, and a tile's where the series are drawn in a panel per type; the output's extension picks
// SVG, PNG or PDF.
const (
	plotWidth  = 18 * vg.Centimeter
	plotHeight = 11 * vg.Centimeter
	tileWidth  = 15 * vg.Centimeter
	tileHeight = 11 * vg.Centimeter
	panelCols  = 3
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
// maximum as a shaded band. Series too many for one legend are drawn in a
// panel per type (results.Aggregate).
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
	panels := results.Aggregate(runs, inPlace)
	title := fmt.Sprintf("%s, %s", opt.Metric, results.HalfName(inPlace))
	for _, panel := range panels {
		if banded(panel.Series) {
			title += ": median, band from min to max"
			break
		}
	}
	var drawn []*plot.Plot
	for _, panel := range panels {
		p := newSizePlot(panelTitle(panel.Title, title), fmt.Sprintf("%s (%s)", opt.Metric, unit))
		if logY {
			p.Y.Scale = plot.LogScale{}
			p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		}
		lines, err := addSeries(p, panel.Series, opt.Metric, logY)
		if err != nil {
			return err
		}
		if lines > 0 {
			drawn = append(drawn, p)
		}
	}
	if len(drawn) == 0 {
		return fmt.Errorf("plot: no %s values to draw", opt.Metric)
	}
	return save(drawn, out)
}

// panelTitle is a panel's title: the plot's, after the panel's type where the series split by type.
func panelTitle(panel, title string) string {
	if panel == "" {
		return title
	}
	return panel + ": " + title
}

// addSeries draws each series' medians as a line with its band, and says how many lines it drew.
func addSeries(p *plot.Plot, series []results.Series, metric string, logY bool) (int, error) {
	drawn := 0
	for _, s := range series {
		var med, lo, hi plotter.XYs
		for _, pt := range s.Points {
			v := pt.Values(metric)
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
				return 0, err
			}
		}
		line, points, err := plotter.NewLinePoints(med)
		if err != nil {
			return 0, err
		}
		line.Color, points.Color = c, c
		points.Shape = plotutil.Shape(drawn)
		p.Add(line, points)
		p.Legend.Add(s.Label, line, points)
		drawn++
	}
	return drawn, nil
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
// interval as error bars, one line per type, reduction and root (a panel per
// type where they are too many for one legend), and the line of equal speed.
func PlotAB(out string, ab *results.ABReport) error {
	var drawn []*plot.Plot
	for _, panel := range ab.Panels() {
		p := newSizePlot(panelTitle(panel.Title, "A/B speedup of B over A, 95% interval"),
			"speedup ("+results.SpeedupEstimator+", time A / time B)")
		// A ratio and its inverse lie the same distance from 1 on a log axis.
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.TickerFunc(ratioTicks)
		one := plotter.NewFunction(func(float64) float64 { return 1 })
		one.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
		p.Add(one)
		var lines []any // name, points, ...: AddLinePoints colours them in turn, as the bars are here
		for _, s := range panel.Series {
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
			continue
		}
		if err := plotutil.AddLinePoints(p, lines...); err != nil {
			return err
		}
		// The arms' settings can be long: they go in the legend, one per line, not in the title.
		p.Legend.Add("A: " + ab.Arms[0])
		p.Legend.Add("B: " + ab.Arms[1])
		drawn = append(drawn, p)
	}
	if len(drawn) == 0 {
		return fmt.Errorf("plot: the A/B report has no rows to draw")
	}
	return save(drawn, out)
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

// save writes the plots in the format of out's extension: one at the plot's size, several as a grid of
// tiles at most panelCols wide. SVG text names fallback fonts (svgFamilies) so that it renders the same where
// Liberation is not installed.
func save(ps []*plot.Plot, out string) error {
	// A log axis over a single value would be widened by 1 either side, down to 0 or below: widen it by a
	// factor of 2 instead.
	for _, p := range ps {
		for _, ax := range []*plot.Axis{&p.X, &p.Y} {
			if _, log := ax.Scale.(plot.LogScale); log && ax.Min == ax.Max && ax.Min > 0 {
				ax.Min, ax.Max = ax.Min/2, ax.Max*2
			}
		}
	}
	cols := min(len(ps), panelCols)
	rows := (len(ps) + cols - 1) / cols
	w, h := plotWidth, plotHeight
	if len(ps) > 1 {
		w, h = vg.Length(cols)*tileWidth, vg.Length(rows)*tileHeight
	}
	ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(out)), ".")
	c, err := draw.NewFormattedCanvas(w, h, ext)
	if err != nil {
		return err
	}
	dc := draw.New(c)
	if len(ps) == 1 {
		ps[0].Draw(dc)
	} else {
		grid := make([][]*plot.Plot, rows)
		for j := range grid {
			grid[j] = make([]*plot.Plot, cols)
		}
		for i, p := range ps {
			grid[i/cols][i%cols] = p
		}
		tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Centimeter, PadY: vg.Centimeter,
			PadTop: vg.Millimeter * 5, PadBottom: vg.Millimeter * 5, PadLeft: vg.Millimeter * 5, PadRight: vg.Millimeter * 5}
		canvases := plot.Align(grid, tiles, dc)
		for i, p := range ps {
			p.Draw(canvases[i/cols][i%cols])
		}
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
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
	// Over many decades (an interval from two rounds can span twenty) about eight are labelled, 1 among them.
	every := math.Max(1, math.Ceil((hi-lo)/8))
	for e := lo; e <= hi; e++ {
		decade := math.Pow(10, e)
		steps := []float64{1, 1.25, 1.5, 2, 3, 5}
		if math.Log10(max/min) > 2 { // a wide range: decades only
			steps = steps[:1]
		}
		for _, m := range steps {
			if v := decade * m; v >= min && v <= max || v == 1 {
				t := plot.Tick{Value: v}
				if m != 1 || math.Mod(e, every) == 0 {
					t.Label = strconv.FormatFloat(v, 'g', 3, 64)
				}
				ticks = append(ticks, t)
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
