package bench

import (
	"math"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// agg accumulates one value over threads and processes so that -a can pick rank 0's, the mean, the minimum or
// the maximum.
type agg struct {
	Sum, Min, Max, First float64
	N                    int
}

func (a *agg) add(v float64) { a.merge(agg{Sum: v, Min: v, Max: v, First: v, N: 1}) }

// merge folds b, which comes after a in rank order, into a.
func (a *agg) merge(b agg) {
	if b.N == 0 {
		return
	}
	if a.N == 0 {
		*a = b
		return
	}
	a.Sum += b.Sum
	a.Min = min(a.Min, b.Min)
	a.Max = max(a.Max, b.Max)
	a.N += b.N
}

// pick applies -a: 0 rank 0, 1 mean, 2 minimum, 3 maximum.
func (a agg) pick(mode int) float64 {
	switch {
	case a.N == 0:
		return 0
	case mode == 0:
		return a.First
	case mode == 2:
		return a.Min
	case mode == 3:
		return a.Max
	}
	return a.Sum / float64(a.N)
}

// summary is one half's results over threads and processes: timing from the timed iterations, wrong elements
// and relative errors from the validation runs.
type summary struct {
	Time, CPU agg
	// Iters holds, per process, the per-iteration time (seconds per operation) of its slowest thread (-I).
	Iters  [][]float64
	Errors collectives.Errors
}

// timingSummary folds this process's threads in thread order.
func timingSummary(ts []timing) summary {
	var s summary
	var slowest []float64
	for _, t := range ts {
		s.Time.add(t.sec)
		s.CPU.add(t.cpuSec)
		for i, v := range t.iters {
			if i == len(slowest) {
				slowest = append(slowest, v)
			}
			slowest[i] = max(slowest[i], v)
		}
	}
	if slowest != nil {
		s.Iters = [][]float64{slowest}
	}
	return s
}

// merge folds o, which comes after s in rank order, into s.
func (s *summary) merge(o summary) {
	s.Time.merge(o.Time)
	s.CPU.merge(o.CPU)
	s.Iters = append(s.Iters, o.Iters...)
	s.Errors.Add(o.Errors)
}

// overWorld combines every process's summary in rank order, so that every process holds the same result (each
// needs it: a failed check stops the -c repetitions everywhere).
func overWorld(w collectives.World, local summary) (summary, error) {
	local.Errors.MaxRel = min(local.Errors.MaxRel, math.MaxFloat64) // JSON has no infinity
	local.Errors.SumSqRel = min(local.Errors.SumSqRel, math.MaxFloat64)
	all, err := collectives.Exchange(w, "results", local)
	if err != nil {
		return local, err
	}
	var out summary
	for _, s := range all {
		out.merge(s)
	}
	return out, nil
}
