// Package plots draws the records of perf runs as pictures for reports. It is
// kept apart from package results so that only rcclx-results carries the
// plotting stack and its fonts; the perf binaries do not import it.
package plots

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/rcclx-tests/rcclx-tests/results"
)

// Options choose what PlotRuns and PlotAB draw and how they write it.
type Options struct {
	Metric  string // results.MetricBusBW, MetricAlgBW or MetricTime (PlotRuns)
	InPlace bool   // the in-place half instead of out-of-place (PlotRuns)
	Linear  bool   // a linear value axis instead of the logarithmic one (PlotRuns)
	// Labels name the runs in the legend, one per run in order; nil: each run's label is derived from what its
	// record says (collective, engine, library, GPU ... where the runs differ).
	Labels []string
	Force  bool // replace existing output files
}

// PlotRuns draws the metric against size into each of outs (the extension picks the format): per series (run,
// engine, A/B arm, type, reduction) the median over the samples at each size (-N cycles, rounds) as a line,
// and their range from minimum to maximum as a shaded band. Series too many for one legend are drawn in a
// panel per type (results.Aggregate). It returns notes on what could not be drawn (size 0 on the log size
// axis, a value of 0 on a log value axis).
func PlotRuns(outs []string, runs []results.Run, opt Options) ([]string, error) {
	if err := results.CheckMetric(opt.Metric); err != nil {
		return nil, err
	}
	if err := checkOutputs(outs, opt.Force); err != nil {
		return nil, err
	}
	labels, err := runLabels(runs, opt.Labels)
	if err != nil {
		return nil, err
	}
	labelled := make([]results.Run, len(runs))
	for i, r := range runs {
		labelled[i] = results.Run{Label: labels[i], Record: r.Record}
	}
	logY := !opt.Linear
	inPlace := results.ShownHalf(runs, opt.InPlace)
	panels := results.Aggregate(labelled, inPlace)
	what := fmt.Sprintf("%s, %s", opt.Metric, results.HalfName(inPlace))
	for _, panel := range panels {
		if banded(panel.Series) {
			what += ": median, band from min to max"
			break
		}
	}
	fig := figure{title: []string{sharedFacts(runs), what}}
	var notes []string
	for _, panel := range panels {
		p := newSizePlot(panel.Title, valueLabel(opt.Metric, logY))
		if logY {
			p.Y.Scale = plot.LogScale{}
			p.Y.Tick.Marker = plot.TickerFunc(valueTicks)
		}
		lines, dropped, err := addSeries(p, panel.Series, opt.Metric, logY)
		if err != nil {
			return nil, err
		}
		notes = append(notes, dropped...)
		if lines > 0 {
			fig.add(p)
		}
	}
	if len(fig.panels) == 0 {
		return notes, fmt.Errorf("plot: no %s values to draw", opt.Metric)
	}
	return notes, fig.save(outs, opt.Force)
}

// valueLabel is the value axis' label: what the metric is, its unit and the scale.
func valueLabel(metric string, logY bool) string {
	label := map[string]string{
		results.MetricBusBW: "busbw: bus bandwidth (GB/s",
		results.MetricAlgBW: "algbw: algorithm bandwidth (GB/s",
		results.MetricTime:  "time (µs",
	}[metric]
	if logY {
		return label + ", log scale)"
	}
	return label + ")"
}

// addSeries draws each series' medians as a line with its band, and says how many lines it drew and which
// sizes it could not place.
func addSeries(p *plot.Plot, series []results.Series, metric string, logY bool) (int, []string, error) {
	drawn := 0
	var notes []string
	var sizes []int64
	for _, s := range series {
		var med, lo, hi plotter.XYs
		var zeroSize bool
		var zeroValue []string
		factor, fromTime := results.RateFactor(s.Points, metric)
		for _, pt := range s.Points {
			v := pt.Values(metric)
			if fromTime {
				v = pt.Rates(factor)
			}
			switch {
			case pt.Size <= 0:
				zeroSize = true
				continue
			case logY && results.Min(v) <= 0:
				zeroValue = append(zeroValue, results.FormatSize(pt.Size))
				continue
			}
			x := float64(pt.Size)
			med = append(med, plotter.XY{X: x, Y: results.Median(v)})
			lo = append(lo, plotter.XY{X: x, Y: results.Min(v)})
			hi = append(hi, plotter.XY{X: x, Y: results.Max(v)})
			sizes = append(sizes, pt.Size)
		}
		name := cmp.Or(s.Label, "the run")
		if zeroSize {
			notes = append(notes, fmt.Sprintf("NOTE %s: size 0 has no place on the logarithmic size axis: not drawn", name))
		}
		if len(zeroValue) > 0 {
			notes = append(notes, fmt.Sprintf("NOTE %s: %s of 0 at %s has no place on a logarithmic axis: not drawn (--linear draws it)",
				name, metric, strings.Join(zeroValue, ", ")))
		}
		if len(med) == 0 {
			continue
		}
		st := styleOf(drawn)
		if banded([]results.Series{s}) {
			if err := addBand(p, lo, hi, st.color); err != nil {
				return 0, nil, err
			}
		}
		line, points, err := plotter.NewLinePoints(med)
		if err != nil {
			return 0, nil, err
		}
		st.apply(line, points)
		p.Add(line, points)
		p.Legend.Add(s.Label, line, points)
		drawn++
	}
	setSizeAxis(p, sizes)
	return drawn, notes, nil
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
	band.Color = color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 56}
	band.LineStyle.Width = 0
	p.Add(band)
	return nil
}

// PlotAB draws the speedup of arm B over arm A of rec's A/B report per size with its 95% interval as error
// bars, one line per type, reduction and root (a panel per type where they are too many for one legend), and
// the line of equal speed, into each of outs.
func PlotAB(outs []string, rec *results.Record, opt Options) ([]string, error) {
	if err := checkOutputs(outs, opt.Force); err != nil {
		return nil, err
	}
	if opt.Labels != nil {
		return nil, fmt.Errorf("--label: an A/B plot draws one record, its lines named by type, op and root")
	}
	ab := rec.AB
	fig := figure{title: []string{sharedFacts([]results.Run{{Record: rec}}), "A/B speedup of B over A, 95% interval"}}
	var notes []string
	for _, panel := range ab.Panels() {
		p := newSizePlot(panel.Title, "speedup ("+results.SpeedupEstimator+", time A / time B, log scale)")
		// A ratio and its inverse lie the same distance from 1 on a log axis.
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.TickerFunc(ratioTicks)
		one := plotter.NewFunction(func(float64) float64 { return 1 })
		one.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
		one.Color = color.Gray{Y: 96}
		p.Add(one)
		var sizes []int64
		lines := 0
		for _, s := range panel.Series {
			var pts abPoints
			for _, r := range s.Rows {
				if r.Size > 0 && r.Speedup > 0 {
					pts = append(pts, r)
					sizes = append(sizes, r.Size)
				} else {
					notes = append(notes, fmt.Sprintf("NOTE %s: no speedup to draw at size %s (%s)",
						cmp.Or(s.Label, "A/B"), results.FormatSize(r.Size), r.Verdict))
				}
			}
			if len(pts) == 0 {
				continue
			}
			st := styleOf(lines)
			bars, err := plotter.NewYErrorBars(pts)
			if err != nil {
				return nil, err
			}
			bars.Color = st.color
			line, points, err := plotter.NewLinePoints(pts)
			if err != nil {
				return nil, err
			}
			st.apply(line, points)
			p.Add(bars, line, points)
			p.Legend.Add(cmp.Or(s.Label, "speedup"), line, points)
			lines++
		}
		if lines == 0 {
			continue
		}
		// The arms' settings can be long: they go in the legend, one per line, not in the title.
		p.Legend.Add("A: " + ab.Arms[0])
		p.Legend.Add("B: " + ab.Arms[1])
		setSizeAxis(p, sizes)
		fig.add(p)
	}
	if len(fig.panels) == 0 {
		return notes, fmt.Errorf("plot: the A/B report has no rows to draw")
	}
	return notes, fig.save(outs, opt.Force)
}

// abPoints presents A/B rows to gonum/plot as points with Y errors.
type abPoints []results.ABRow

func (a abPoints) Len() int                    { return len(a) }
func (a abPoints) XY(i int) (float64, float64) { return float64(a[i].Size), a[i].Speedup }
func (a abPoints) YError(i int) (float64, float64) {
	return a[i].Speedup - a[i].Lo, a[i].Hi - a[i].Speedup
}

// newSizePlot is a plot of a value against size on a logarithmic size axis, with a grid.
func newSizePlot(title, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "size (bytes, log scale)"
	p.Y.Label.Text = yLabel
	p.X.Scale = plot.LogScale{}
	p.Add(plotter.NewGrid())
	return p
}

// setSizeAxis marks every size drawn on the size axis, each labelled where they fit (they turn upright beyond
// a few), and leaves a margin of a quarter of a doubling beyond the smallest and largest.
func setSizeAxis(p *plot.Plot, sizes []int64) {
	slices.Sort(sizes)
	sizes = slices.Compact(sizes)
	if len(sizes) == 0 {
		return
	}
	every := (len(sizes) + maxSizeLabels - 1) / maxSizeLabels
	ticks := make(plot.ConstantTicks, len(sizes))
	for i, s := range sizes {
		ticks[i].Value = float64(s)
		if i%every == 0 || i == len(sizes)-1 {
			ticks[i].Label = results.FormatSize(s)
		}
	}
	p.X.Tick.Marker = ticks
	p.X.Min, p.X.Max = float64(sizes[0])/math.Sqrt(math.Sqrt2), float64(sizes[len(sizes)-1])*math.Sqrt(math.Sqrt2)
	if len(sizes) > uprightAfter {
		p.X.Tick.Label.Rotation = math.Pi / 2
		p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = -1, -0.5
	}
}
