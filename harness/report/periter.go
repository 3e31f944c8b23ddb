package report

import (
	"slices"

	"gonum.org/v1/gonum/stat"

	"github.com/rcclx-tests/rcclx-tests/results"
)

// IterSummary summarizes per-iteration times (-I): per process rows of seconds per operation, combined by taking
// the slowest process at each iteration, leaving the first skip iterations out of the statistics (-K), as
// nccl-tests does. Times are reported in microseconds.
func IterSummary(rows [][]float64, skip int) results.PerIter {
	var slowest []float64
	for _, r := range rows {
		for i, v := range r {
			if i == len(slowest) {
				slowest = append(slowest, v)
			}
			slowest[i] = max(slowest[i], v)
		}
	}
	us := make([]float64, len(slowest))
	for i, v := range slowest {
		us[i] = v * 1e6
	}
	out := results.PerIter{SkippedIterations: skip, TimesUs: us}
	if len(rows) > 1 {
		for _, r := range rows {
			row := make([]float64, len(r))
			for i, v := range r {
				row[i] = v * 1e6
			}
			out.PerProcessMaxTimesUs = append(out.PerProcessMaxTimesUs, row)
		}
	}
	if skip >= len(us) {
		return out
	}
	sorted := slices.Clone(us[skip:])
	slices.Sort(sorted)
	out.MinUs, out.MaxUs = sorted[0], sorted[len(sorted)-1]
	out.P50Us = sorted[len(sorted)/2]
	out.P95Us = stat.Quantile(0.95, stat.Empirical, sorted, nil)
	out.P99Us = stat.Quantile(0.99, stat.Empirical, sorted, nil)
	out.AvgUs, out.StdevUs = stat.PopMeanStdDev(sorted, nil)
	if out.AvgUs > 0 {
		out.CVPct = out.StdevUs / out.AvgUs * 100
	}
	return out
}
