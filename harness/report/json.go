package report

import (
	"math"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/results"
)

// JSONConfig is the -J record's config: the run's parameters as nccl-tests writes them.
func JSONConfig(o *plan.Options) results.Config {
	c := results.Config{NThreads: o.NThreads, NGpus: o.NGpus, MinimumBytes: o.MinBytes, MaximumBytes: o.MaxBytes,
		WarmupIters: o.Warmup, Iterations: o.Iters, AggIters: o.AggIters, Validation: o.Check, Graph: o.Graph,
		Blocking: results.Bool(o.Blocking != 0), PerIterTime: results.Bool(o.PerIter == 1),
		PerIterSkip: o.IterSkip, ParallelInit: results.Bool(o.ParallelInit == 1), Devices: []results.Device{}}
	if o.StepFactor > 1 {
		f := o.StepFactor
		c.StepFactor = &f
	} else {
		b := o.StepBytes
		c.StepBytes = &b
	}
	return c
}

// EngineRun is what the JSON records of one engine's run (or of one A/B arm).
type EngineRun struct {
	Opened          bool // the communicator was opened: the fields up to devices are known
	Engine, Library string
	Version, Graph  int
	Devices         []collectives.Device
	Rows            []Row
	OOB, BWN        int
	BWSum           float64
	Err             error
	Stopped         bool
}

// JSONResult is the -J record of one row.
func JSONResult(r Row, o *plan.Options) results.Result {
	res := results.Result{Size: r.Size, Count: r.Count, Type: r.DType, Redop: r.Redop,
		Root: results.RootString(r.Root), ActualIterations: o.Iters, ExperimentName: r.Label, Engine: r.Engine,
		Algorithm: r.Algorithm()}
	res.OutOfPlace, res.OutOfPlacePerIter = JSONHalf(r.Halves[0], o)
	res.InPlace, res.InPlacePerIter = JSONHalf(r.Halves[1], o)
	return res
}

// JSONHalf is one half of a JSON row; a half that did not run (-O) is written as null (results.Half), as
// nccl-tests writes a half it did not measure, never with made-up zeros.
func JSONHalf(h Half, o *plan.Options) (results.Half, *results.PerIter) {
	if !h.Ran {
		return results.Half{}, nil
	}
	out := results.Half{AlgBW: h.AlgBW, BusBW: h.BusBW}
	us := h.Sec * 1e6
	if o.CPUTime == 1 {
		out.CPUTime = &us
	} else {
		out.Time = &us
	}
	for _, sec := range h.Rounds {
		out.Rounds = append(out.Rounds, sec*1e6)
	}
	if h.Checked {
		wrong, rel, rms := float64(h.Wrong), min(h.Errs.MaxRel, math.MaxFloat64), min(h.Errs.RMSRel(), math.MaxFloat64)
		out.NWrong, out.MaxRelErr, out.RMSRelErr = &wrong, &rel, &rms
	}
	if o.PerIter != 1 {
		return out, nil
	}
	s := IterSummary(h.Iters, o.IterSkip)
	return out, &s
}
