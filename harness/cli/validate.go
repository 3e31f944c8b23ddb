package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/results"
)

// BadValue is the usage error for flag name's value: it names the flag as the user can give it and says why.
func BadValue(fs *pflag.FlagSet, name, why string) error {
	f := fs.Lookup(name)
	flag := "--" + name
	if f.Shorthand != "" {
		flag = "-" + f.Shorthand + "/" + flag
	}
	return &exit.UsageError{Msg: fmt.Sprintf("invalid value %q for %s: %s", f.Value.String(), flag, why)}
}

// MaxRanksPerProcess bounds -t x -g: every rank is a goroutine or a device context of this process, and some
// engine state grows with the square of the rank count. MaxRanks bounds the whole run (x processes).
const (
	MaxRanksPerProcess = 1024
	MaxRanks           = 1 << 16
)

// intRule bounds one integer flag.
type intRule struct {
	name     string
	v        int
	min, max int
}

// Validate checks the parsed flags and derives the run's lists. engineNames are the engines --engine accepts.
func Validate(o *plan.Options, fs *pflag.FlagSet, engineNames []string) error {
	if err := rcclChecks(o, fs); err != nil {
		return err
	}
	const unbounded = int(^uint(0) >> 1)
	for _, r := range []intRule{
		{"nthreads", o.NThreads, 1, MaxRanksPerProcess}, {"ngpus", o.NGpus, 1, MaxRanksPerProcess}, {"iters", o.Iters, 1, unbounded},
		{"agg_iters", o.AggIters, 1, unbounded}, {"warmup_iters", o.Warmup, 0, unbounded},
		{"run_cycles", o.Cycles, 0, unbounded}, {"check", o.Check, 0, unbounded}, {"root", o.Root, -1, unbounded},
		{"blocking", o.Blocking, 0, 3}, {"stream_null", o.StreamNull, 0, 1}, {"timeout", o.TimeoutSec, 0, 1 << 30},
		{"cudagraph", o.Graph, 0, unbounded}, {"report_cputime", o.CPUTime, 0, 1},
		{"report_timestamps", o.Timestamps, 0, 1}, {"average", o.Average, 0, 3}, {"unalign", o.Unalign, 0, 1 << 20},
		{"per_iter_timing", o.PerIter, 0, 1}, {"per_iter_skip", o.IterSkip, 0, unbounded}, {"memory", o.Memory, 0, 1},
		{"parallel_init", o.ParallelInit, 0, 1}, {"local_register", o.Register, 0, 2}, {"ab-rounds", o.ABRounds, 1, 1 << 20},
	} {
		if r.v < r.min || r.v > r.max {
			why := fmt.Sprintf("must be at least %d", r.min)
			if r.max != unbounded {
				why = fmt.Sprintf("must be between %d and %d", r.min, r.max)
			}
			return BadValue(fs, r.name, why)
		}
	}
	if err := validateSweep(o, fs); err != nil {
		return err
	}
	if o.PerIter == 1 && o.IterSkip >= o.Iters {
		return BadValue(fs, "per_iter_skip", fmt.Sprintf("must be below -n (%d)", o.Iters))
	}
	if o.PerIter == 1 && o.Graph > 0 {
		return BadValue(fs, "per_iter_timing", "cannot be combined with -G (a graph replays all iterations at once)")
	}
	var err error
	if o.DTypes, err = collectives.ParseDTypes(o.DType); err != nil {
		return BadValue(fs, "datatype", err.Error())
	}
	if o.Ops, err = collectives.ParseOps(o.Op); err != nil {
		return BadValue(fs, "op", err.Error())
	}
	if err := validateEngines(o, fs, engineNames); err != nil {
		return err
	}
	if err := buildEnv(o, fs); err != nil {
		return err
	}
	if err := validateRCCL(o, fs); err != nil {
		return err
	}
	o.Changed = map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { o.Changed[f.Name] = true })
	return nil
}

// rcclChecks are the checks rccl-tests makes after reading its flags, in its order, before this suite's own:
// where both refuse a command line, its dialect prints rccl-tests' line (RCCLRefusal).
func rcclChecks(o *plan.Options, fs *pflag.FlagSet) error {
	switch {
	case o.MinBytes > o.MaxBytes:
		return rcclRefused(BadValue(fs, "minbytes", fmt.Sprintf("larger than -e %s (%d B)", fs.Lookup("maxbytes").Value, o.MaxBytes)),
			fmt.Sprintf("invalid sizes for 'minbytes' and 'maxbytes': %d > %d", o.MinBytes, o.MaxBytes))
	case o.RCCL.Format != "" && o.RCCL.Format != results.RCCLCSV && o.RCCL.Format != results.RCCLJSON:
		return rcclRefused(BadValue(fs, "rccl_output_format", "want csv or json"), "Invalid --rccl_output_format: "+o.RCCL.Format)
	case o.RCCL.DeviceImpl > 0 && o.Register != 2:
		return rcclRefused(BadValue(fs, "device_implementation", "needs symmetric registration (-R 2)"),
			"device implementation (-D > 0) requires enabling symmetric memory registration (-R 2)")
	}
	return nil
}

func validateSweep(o *plan.Options, fs *pflag.FlagSet) error {
	switch {
	case o.StepFactor < 1:
		return BadValue(fs, "stepfactor", "must be at least 1")
	case o.StepFactor == 1 && o.StepBytes < 1 && o.MinBytes < o.MaxBytes:
		return BadValue(fs, "stepbytes", "must be at least 1 when -f is 1")
	case o.StepFactor > 1 && o.MinBytes == 0 && o.MaxBytes > 0:
		return BadValue(fs, "minbytes", "a multiplicative sweep (-f above 1) cannot start at 0")
	}
	return nil
}

func validateEngines(o *plan.Options, fs *pflag.FlagSet, known []string) error {
	o.Engines = nil
	for _, name := range strings.Split(o.Engine, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(known, name) {
			return BadValue(fs, "engine", "want one of "+strings.Join(known, ", ")+", or a comma list")
		}
		if slices.Contains(o.Engines, name) {
			return BadValue(fs, "engine", "names "+name+" twice")
		}
		o.Engines = append(o.Engines, name)
	}
	if o.AB != "" && len(o.Engines) > 1 {
		return BadValue(fs, "ab", "cannot be combined with several engines")
	}
	return nil
}

// buildEnv gathers the communicator overrides: -E pairs, then the convenience flags, then the A/B key.
func buildEnv(o *plan.Options, fs *pflag.FlagSet) error {
	o.CommEnv = map[string]string{}
	for _, kv := range o.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return &exit.UsageError{Msg: fmt.Sprintf("invalid value %q for -E/--env: want KEY=VALUE", kv)}
		}
		o.CommEnv[k] = v
	}
	if o.DDA {
		o.CommEnv["RCCL_DDA_ENABLE"] = "1"
	}
	if o.LP {
		o.CommEnv["RCCL_LOW_PRECISION_ENABLE"] = "1"
	}
	switch o.LPMode {
	case "":
	case collectives.LPModeRCCLX, collectives.LPModeScaled:
		o.CommEnv["RCCLX_TESTS_LP_MODE"] = o.LPMode
	default:
		return BadValue(fs, "lp-mode", "want rcclx or scaled")
	}
	if o.AB == "" && !fs.Changed("ab") {
		return nil
	}
	k, vals, ok := strings.Cut(o.AB, "=")
	v := strings.Split(vals, ",")
	if !ok || k == "" || len(v) != 2 {
		return BadValue(fs, "ab", "want KEY=v1,v2")
	}
	o.ABKey, o.ABValues = k, [2]string{v[0], v[1]}
	return nil
}
