package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/rcclx-tests/rcclx-tests/bootstrap"
	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/spf13/pflag"
)

// switchFlags are the convenience flags that set one communicator variable each.
var switchFlags = []struct {
	flag, key string
	on        func(o *plan.Options) (string, bool)
}{
	{"dda", "RCCL_DDA_ENABLE", func(o *plan.Options) (string, bool) { return "1", o.DDA }},
	{"lp", "RCCL_LOW_PRECISION_ENABLE", func(o *plan.Options) (string, bool) { return "1", o.LP }},
	{"lp-mode", "RCCLX_TESTS_LP_MODE", func(o *plan.Options) (string, bool) { return o.LPMode, o.LPMode != "" }},
}

// CheckConsistency is the part of validation that looks beyond one flag, before anything runs: the total rank
// count, the launcher's and the suite's variables, the communicator variables of every arm (with the RCCLX
// policy's own rules), and flags that contradict each other. Contradictions of two explicit values are errors;
// a flag that has no effect is noted in the header (harness/bench/notes.go). getenv is the process environment.
func CheckConsistency(fs *pflag.FlagSet, o *plan.Options, getenv func(string) string) error {
	l, err := bootstrap.Detect(getenv)
	if err != nil {
		return &exit.UsageError{Msg: err.Error()}
	}
	if l.Size > 1 {
		if _, err := bootstrap.Rendezvous(getenv, l); err != nil {
			return &exit.UsageError{Msg: err.Error()}
		}
	}
	local := o.NThreads * o.NGpus
	if local > MaxRanksPerProcess {
		return BadValue(fs, "ngpus", fmt.Sprintf("-t %d x -g %d is %d ranks in one process; at most %d",
			o.NThreads, o.NGpus, local, MaxRanksPerProcess))
	} else if total := local * l.Size; total > MaxRanks {
		return BadValue(fs, "ngpus", fmt.Sprintf("-t %d x -g %d x %d processes is %d ranks; at most %d",
			o.NThreads, o.NGpus, l.Size, total, MaxRanks))
	}
	for _, arm := range plan.ArmEnvs(o) {
		if err := collectives.CheckHooks(plan.Overlay(arm, getenv), local*l.Size); err != nil {
			return &exit.UsageError{Msg: fmt.Sprintf("invalid test hook (-E, --ab or the process environment): %v", err)}
		}
	}
	if o.ChosenDialect, err = plan.WantDialect(o.Dialect, getenv); err != nil {
		return &exit.UsageError{Msg: err.Error()}
	}
	if err := plan.CheckSplit(getenv, l.Size, o.ABKey != ""); err != nil {
		return &exit.UsageError{Msg: err.Error()}
	}
	if _, _, err := plan.FirstDevice(getenv); err != nil {
		return &exit.UsageError{Msg: err.Error()}
	}
	if v := getenv("NCCL_TESTS_MIN_BW"); v != "" {
		if bw, err := strconv.ParseFloat(v, 64); err != nil || bw < 0 || math.IsInf(bw, 0) || math.IsNaN(bw) {
			return &exit.UsageError{Msg: fmt.Sprintf("invalid NCCL_TESTS_MIN_BW=%q: want a bandwidth in GB/s, at least 0", v)}
		}
	}
	for _, s := range switchFlags {
		v, on := s.on(o)
		known, _ := collectives.LookupVariable(s.key)
		for _, kv := range o.Env {
			if k, ev, _ := strings.Cut(kv, "="); on && k == s.key && !known.Same(ev, v) {
				return BadValue(fs, s.flag, fmt.Sprintf("contradicts -E %s", kv))
			}
		}
	}
	if o.ABKey != "" {
		if err := checkAB(fs, o); err != nil {
			return err
		}
	}
	for _, arm := range plan.ArmEnvs(o) {
		if _, err := collectives.PolicyFromEnv(plan.Overlay(arm, getenv)); err != nil {
			return &exit.UsageError{Msg: fmt.Sprintf("invalid communicator environment (-E, --ab or the process): %v", err)}
		}
	}
	return nil
}

// checkAB refuses an A/B comparison whose key another flag also sets, or whose rows would go to rccl-tests'
// result file, which has no column for the arm; the root's checkABVariable refuses one that compares nothing.
func checkAB(fs *pflag.FlagSet, o *plan.Options) error {
	if o.RCCL.File != "" {
		flag := "rccl_output_file"
		if o.RCCL.CSVAlias {
			flag = "csv"
		}
		return BadValue(fs, flag, "cannot be combined with --ab: rccl-tests' layout has no column for the arm "+
			"(-J writes both arms)")
	}
	for _, kv := range o.Env {
		if k, _, _ := strings.Cut(kv, "="); k == o.ABKey {
			return BadValue(fs, "ab", "sets "+o.ABKey+", which -E "+kv+" sets too")
		}
	}
	for _, s := range switchFlags {
		if _, on := s.on(o); on && s.key == o.ABKey {
			return BadValue(fs, "ab", "sets "+o.ABKey+", which --"+s.flag+" sets too")
		}
	}
	return nil
}
