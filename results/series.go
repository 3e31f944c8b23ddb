package results

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Point is one size of a series with every sample measured there: one per
// repeated row (-N cycles) and, where a half carries
// rounds (A/B rounds), one per round. Time is in microseconds, bandwidths in
// GB/s; the three lists run in parallel.
type Point struct {
	Size               int64
	Time, AlgBW, BusBW []float64
}

// Values returns the samples of metric (MetricTime, MetricAlgBW or MetricBusBW).
func (p *Point) Values(metric string) []float64 {
	switch metric {
	case MetricTime:
		return p.Time
	case MetricAlgBW:
		return p.AlgBW
	}
	return p.BusBW
}

// RateFactor says whether the bandwidths of points follow nccl-tests' rule, algbw = bytes / time (checked on
// the sample of the largest algbw, the one with the most printed digits), and if so the factor from algbw to
// metric there (1 for algbw, the bus factor for busbw). Text output prints bandwidths to 0.01 GB/s, which
// leaves small sizes at 0.00 or a few steps of 0.01: from the time, which has its significant digits, every
// size gets its value (Rates). Time itself, and bandwidths that do not follow the rule, stay as recorded.
func RateFactor(points []Point, metric string) (float64, bool) {
	if metric == MetricTime {
		return 0, false
	}
	var size int64
	var t, alg, bus float64
	for _, p := range points {
		for i, a := range p.AlgBW {
			if a > alg && p.Time[i] > 0 {
				size, t, alg, bus = p.Size, p.Time[i], a, p.BusBW[i]
			}
		}
	}
	if alg <= 0 || math.Abs(float64(size)/t/1e3-alg) > 0.01+2e-3*alg {
		return 0, false
	}
	if metric == MetricAlgBW {
		return 1, true
	}
	return bus / alg, true
}

// Rates are the bandwidths of p's samples from their times: bytes / time in GB/s, times factor.
func (p *Point) Rates(factor float64) []float64 {
	out := make([]float64, len(p.Time))
	for i, t := range p.Time {
		out[i] = float64(p.Size) / t / 1e3 * factor
	}
	return out
}

// Series is one line of a comparison: the points of one run, engine, A/B
// arm, type and reduction, by increasing size.
type Series struct {
	Label  string
	Points []Point
}

// CheckMetric accepts the metric names of compare and plot.
func CheckMetric(metric string) error {
	switch metric {
	case MetricBusBW, MetricAlgBW, MetricTime:
		return nil
	}
	return fmt.Errorf("metric %q: want %s, %s or %s", metric, MetricBusBW, MetricAlgBW, MetricTime)
}

// HalfName names the half that inPlace selects.
func HalfName(inPlace bool) string {
	if inPlace {
		return halfNames[1]
	}
	return halfNames[0]
}

// seriesKey groups rows into series; unlike rowKey it has no size or ordinal,
// so repeated rows of a size fall into one point.
type seriesKey struct {
	run                 int
	series, arm         string
	dtype, redop, root  string // root: "" for collectives without one
	runLabel, armPrefix string
}

// MaxPanelLines is the most series one plot panel holds: more, of several types, split into a panel per type.
const MaxPanelLines = 12

// Panel is the series drawn together (Series or ABSeries); Title is the type they share where the series split
// by type.
type Panel[S any] struct {
	Title  string
	Series []S
}

// Aggregate groups the rows of runs into series, one point per size, taking
// the half that inPlace selects, and the series into panels (splitByType).
// A run splits into several series only where it mixes engines, A/B arms,
// types or reductions; labels name the run and then only what tells its
// series apart within the panel. Rows without a time for that half are left
// out.
func Aggregate(runs []Run, inPlace bool) []Panel[Series] {
	keys, points := collect(runs, inPlace)
	titles, groups := splitByType(keys, func(k seriesKey) string { return k.dtype })
	panels := make([]Panel[Series], len(groups))
	for g, group := range groups {
		names := seriesLabels(group, len(runs))
		panels[g].Title = titles[g]
		for i, k := range group {
			panels[g].Series = append(panels[g].Series, Series{Label: names[i], Points: sortedPoints(points[k])})
		}
	}
	return panels
}

// splitByType groups keys by type, in the order each type first appears, where they are more than
// MaxPanelLines and of several types; else it leaves them one untitled group.
func splitByType[K any](keys []K, dtype func(K) string) (titles []string, groups [][]K) {
	var types []string
	byType := map[string][]K{}
	for _, k := range keys {
		t := dtype(k)
		if _, seen := byType[t]; !seen {
			types = append(types, t)
		}
		byType[t] = append(byType[t], k)
	}
	if len(keys) <= MaxPanelLines || len(types) < 2 {
		return []string{""}, [][]K{keys}
	}
	for _, t := range types {
		groups = append(groups, byType[t])
	}
	return types, groups
}

// collect gathers the samples of every series of runs by size.
func collect(runs []Run, inPlace bool) ([]seriesKey, map[seriesKey]map[int64]*Point) {
	half := 0
	if inPlace {
		half = 1
	}
	var keys []seriesKey
	points := map[seriesKey]map[int64]*Point{}
	for i, run := range runs {
		// A record's series are its engines (when it has several) and A/B arms, not its algorithms: the policy
		// picks an algorithm per size, and a line goes on across that change.
		engines := map[string]bool{}
		for _, r := range run.Record.Results {
			engines[r.Engine] = true
		}
		for _, row := range keyRows(run.Record) {
			h := row.res.halves()[half]
			t, ok := h.Micros()
			if !ok {
				continue
			}
			series := ""
			if len(engines) > 1 {
				series = row.res.Engine
			}
			k := seriesKey{run: i, series: series, arm: row.res.ExperimentName, dtype: row.key.Type,
				redop: row.key.Redop, root: row.key.Root, runLabel: run.Label, armPrefix: armPrefix(run.Record, row.res.ExperimentName)}
			if points[k] == nil {
				points[k] = map[int64]*Point{}
				keys = append(keys, k)
			}
			p := points[k][row.key.Size]
			if p == nil {
				p = &Point{Size: row.key.Size}
				points[k][row.key.Size] = p
			}
			rounds := h.Rounds
			if len(rounds) == 0 {
				rounds = []float64{t}
			}
			for _, r := range rounds {
				if r <= 0 {
					continue
				}
				// Bandwidth is bytes over time: a round's bandwidth scales with the row's time over its own.
				p.Time = append(p.Time, r)
				p.AlgBW = append(p.AlgBW, h.AlgBW*t/r)
				p.BusBW = append(p.BusBW, h.BusBW*t/r)
			}
		}
	}
	return keys, points
}

// sortedPoints lists the points that have samples by increasing size.
func sortedPoints(bySize map[int64]*Point) []Point {
	var out []Point
	for _, p := range bySize {
		if len(p.Time) > 0 {
			out = append(out, *p)
		}
	}
	slices.SortFunc(out, func(a, b Point) int { return cmp.Compare(a.Size, b.Size) })
	return out
}

// Median, Min and Max summarize samples; they return 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

func Min(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return slices.Min(xs)
}

func Max(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return slices.Max(xs)
}

// armPrefix is "A " or "B " for a row of an A/B record's arm, else "".
func armPrefix(rec *Record, experiment string) string {
	if rec.AB == nil || experiment == "" {
		return ""
	}
	for i, arm := range rec.AB.Arms {
		if arm == experiment {
			return string(rune('A'+i)) + " "
		}
	}
	return ""
}

// seriesLabels names each key by its run (when there are several runs, or it
// is all a key has) and whatever tells the keys of its run apart.
func seriesLabels(keys []seriesKey, nRuns int) []string {
	type dims struct{ series, arm, dtype, redop, root bool }
	perRun := map[int]*dims{}
	first := map[int]seriesKey{}
	for _, k := range keys {
		f, ok := first[k.run]
		if !ok {
			first[k.run], perRun[k.run] = k, &dims{}
			continue
		}
		d := perRun[k.run]
		d.series = d.series || k.series != f.series
		d.arm = d.arm || k.arm != f.arm
		d.dtype = d.dtype || k.dtype != f.dtype
		d.redop = d.redop || k.redop != f.redop
		d.root = d.root || k.root != f.root
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		d := perRun[k.run]
		var parts []string
		if nRuns > 1 || !(d.series || d.arm || d.dtype || d.redop || d.root) {
			parts = append(parts, k.runLabel)
		}
		if d.series && k.series != "" {
			parts = append(parts, k.series)
		}
		if d.arm {
			parts = append(parts, strings.TrimSpace(k.armPrefix+k.arm))
		}
		if d.dtype {
			parts = append(parts, k.dtype)
		}
		if d.redop {
			parts = append(parts, k.redop)
		}
		if d.root {
			parts = append(parts, "root "+k.root)
		}
		out[i] = strings.Join(parts, " ")
	}
	return out
}
