package results

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Plot dimensions; Save picks SVG, PNG, PDF ... from the output's extension.
const (
	plotWidth  = 18 * vg.Centimeter
	plotHeight = 11 * vg.Centimeter
)

// PlotRuns draws metric (busbw, algbw or time) against size, one line per
// run, or per engine/algorithm, type and reduction where a record has
// several, and saves it to out.
func PlotRuns(out string, runs []Run, metric string, inPlace bool) error {
	value, unit, err := metricValue(metric)
	if err != nil {
		return err
	}
	half := 0
	if inPlace {
		half = 1
	}
	p := newSizePlot(fmt.Sprintf("%s (%s)", metric, halfNames[half]), fmt.Sprintf("%s (%s)", metric, unit))
	if metric == MetricTime {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	var lines []any
	for _, run := range runs {
		for _, s := range splitSeries(run) {
			var xys plotter.XYs
			for _, row := range s.rows {
				y, ok := value(row.res.halves()[half])
				// Log axes cannot show zero; size 0 rows and missing halves drop out.
				if ok && row.key.Size > 0 && (metric != MetricTime || y > 0) {
					xys = append(xys, plotter.XY{X: float64(row.key.Size), Y: y})
				}
			}
			if len(xys) > 0 {
				lines = append(lines, s.label, xys)
			}
		}
	}
	if len(lines) == 0 {
		return fmt.Errorf("plot: no %s values to draw", metric)
	}
	if err := plotutil.AddLinePoints(p, lines...); err != nil {
		return err
	}
	return p.Save(plotWidth, plotHeight, out)
}

// PlotAB draws the speedup of arm B over arm A per size with its interval
// as error bars, and the line of equal speed.
func PlotAB(out string, ab *ABReport) error {
	p := newSizePlot(fmt.Sprintf("%s vs %s", ab.Arms[1], ab.Arms[0]), fmt.Sprintf("speedup (time %s / time %s)", ab.Arms[0], ab.Arms[1]))
	var pts abPoints
	for _, r := range ab.Rows {
		if r.Size > 0 && r.Speedup > 0 {
			pts = append(pts, r)
		}
	}
	if len(pts) == 0 {
		return fmt.Errorf("plot: the A/B report has no rows to draw")
	}
	bars, err := plotter.NewYErrorBars(pts)
	if err != nil {
		return err
	}
	one := plotter.NewFunction(func(float64) float64 { return 1 })
	one.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
	p.Add(one, bars)
	if err := plotutil.AddLinePoints(p, "speedup", pts); err != nil {
		return err
	}
	return p.Save(plotWidth, plotHeight, out)
}

// abPoints presents A/B rows to gonum/plot as points with Y errors.
type abPoints []ABRow

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
			t.Label = FormatSize(int64(t.Value))
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// metricValue returns how to read metric from a half, and its unit.
func metricValue(metric string) (func(*Half) (float64, bool), string, error) {
	switch metric {
	case MetricBusBW:
		return func(h *Half) (float64, bool) { _, ok := h.Micros(); return h.BusBW, ok }, "GB/s", nil
	case MetricAlgBW:
		return func(h *Half) (float64, bool) { _, ok := h.Micros(); return h.AlgBW, ok }, "GB/s", nil
	case MetricTime:
		return (*Half).Micros, "us", nil
	}
	return nil, "", fmt.Errorf("metric %q: want %s, %s or %s", metric, MetricBusBW, MetricAlgBW, MetricTime)
}

// plotSeries is one line of a plot.
type plotSeries struct {
	label string
	rows  []keyedRow
}

// splitSeries cuts a run into lines by engine/algorithm, type and reduction,
// naming them after the run alone when there is only one.
func splitSeries(run Run) []plotSeries {
	rows := keyRows(run.Record)
	keys := make([]rowKey, len(rows))
	for i, r := range rows {
		keys[i] = r.key
	}
	detailed := newLabeler(keys).detailed
	var out []plotSeries
	index := map[rowKey]int{}
	for _, r := range rows {
		id := rowKey{Series: r.key.Series, Type: r.key.Type, Redop: r.key.Redop, Root: r.key.Root, Ordinal: r.key.Ordinal}
		i, ok := index[id]
		if !ok {
			i = len(out)
			index[id] = i
			label := run.Label
			if detailed {
				label = strings.Join(strings.Fields(strings.Join([]string{run.Label, id.Series, id.Type, id.Redop}, " ")), " ")
			}
			if id.Root != "" {
				label += " root " + id.Root
			}
			if id.Ordinal > 0 {
				label += fmt.Sprintf(" #%d", id.Ordinal+1)
			}
			out = append(out, plotSeries{label: label})
		}
		out[i].rows = append(out[i].rows, r)
	}
	return out
}
