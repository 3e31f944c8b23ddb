package harness

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rcclx-tests/rcclx-tests/bootstrap"
	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/engines"
	"github.com/rcclx-tests/rcclx-tests/harness/cli"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
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

// checkConsistency is the part of validation that looks beyond one flag, before anything runs: the total rank
// count, the launcher's and the suite's variables, the communicator variables of every arm (with the RCCLX
// policy's own rules), and flags that contradict each other. Contradictions of two explicit values are errors;
// a flag that has no effect is noted in the header (notes.go).
func (a *app) checkConsistency(fs *pflag.FlagSet, o *plan.Options) error {
	getenv := a.parseEnv()
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
	if local > cli.MaxRanksPerProcess {
		return cli.BadValue(fs, "ngpus", fmt.Sprintf("-t %d x -g %d is %d ranks in one process; at most %d",
			o.NThreads, o.NGpus, local, cli.MaxRanksPerProcess))
	} else if total := local * l.Size; total > cli.MaxRanks {
		return cli.BadValue(fs, "ngpus", fmt.Sprintf("-t %d x -g %d x %d processes is %d ranks; at most %d",
			o.NThreads, o.NGpus, l.Size, total, cli.MaxRanks))
	}
	for _, arm := range armEnvs(o) {
		if err := collectives.CheckHooks(overlay(arm, getenv), local*l.Size); err != nil {
			return &exit.UsageError{Msg: fmt.Sprintf("invalid test hook (-E, --ab or the process environment): %v", err)}
		}
	}
	if o.ChosenDialect, err = wantDialect(o.Dialect, getenv); err != nil {
		return &exit.UsageError{Msg: err.Error()}
	}
	if err := checkSplit(getenv, l.Size, o.ABKey != ""); err != nil {
		return &exit.UsageError{Msg: err.Error()}
	}
	if _, _, err := firstDevice(getenv); err != nil {
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
				return cli.BadValue(fs, s.flag, fmt.Sprintf("contradicts -E %s", kv))
			}
		}
	}
	if o.ABKey != "" {
		if err := checkAB(fs, o); err != nil {
			return err
		}
	}
	for _, arm := range armEnvs(o) {
		if _, err := collectives.PolicyFromEnv(overlay(arm, getenv)); err != nil {
			return &exit.UsageError{Msg: fmt.Sprintf("invalid communicator environment (-E, --ab or the process): %v", err)}
		}
	}
	return nil
}

// parseEnv is the process environment as the checks at parse time read it (none where the app has none).
func (a *app) parseEnv() func(string) string {
	if a.getenv == nil {
		return func(string) string { return "" }
	}
	return a.getenv
}

// checkAB refuses an A/B comparison whose key another flag also sets, or whose rows would go to rccl-tests'
// result file, which has no column for the arm; app.checkABVariable refuses one that compares nothing.
func checkAB(fs *pflag.FlagSet, o *plan.Options) error {
	if o.RCCL.File != "" {
		flag := "rccl_output_file"
		if o.RCCL.CSVAlias {
			flag = "csv"
		}
		return cli.BadValue(fs, flag, "cannot be combined with --ab: rccl-tests' layout has no column for the arm "+
			"(-J writes both arms)")
	}
	for _, kv := range o.Env {
		if k, _, _ := strings.Cut(kv, "="); k == o.ABKey {
			return cli.BadValue(fs, "ab", "sets "+o.ABKey+", which -E "+kv+" sets too")
		}
	}
	for _, s := range switchFlags {
		if _, on := s.on(o); on && s.key == o.ABKey {
			return cli.BadValue(fs, "ab", "sets "+o.ABKey+", which --"+s.flag+" sets too")
		}
	}
	return nil
}

// armEnvs lists the communicator overrides of every communicator the run opens: one, or the two A/B arms.
func armEnvs(o *plan.Options) []map[string]string {
	if o.ABKey == "" {
		return []map[string]string{o.CommEnv}
	}
	var out []map[string]string
	for _, v := range o.ABValues {
		arm := map[string]string{o.ABKey: v}
		for k, x := range o.CommEnv {
			arm[k] = x
		}
		out = append(out, arm)
	}
	return out
}

// overlay reads env first, then the process environment, as engines do (collectives.Config.Getenv).
func overlay(env map[string]string, getenv func(string) string) func(string) string {
	return func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return getenv(k)
	}
}

// lowPrecisionOn reports whether any collective of the run would take the low-precision path.
func lowPrecisionOn(env map[string]string, getenv func(string) string) bool {
	p, err := collectives.PolicyFromEnv(overlay(env, getenv))
	return err == nil && slices.Contains(slices.Collect(maps.Values(p.LP)), true)
}

// checkAutoInList refuses an engine list where auto names an engine the list names too (--engine auto,host
// on a machine without a GPU would run the host engine twice and pool both runs as one).
func (a *app) checkAutoInList(fs *pflag.FlagSet, o *plan.Options) error {
	if len(o.Engines) < 2 || !slices.Contains(o.Engines, engines.Auto) {
		return nil
	}
	if picked, _ := a.readers(engines.Auto); len(picked) == 1 && slices.Contains(o.Engines, picked[0]) {
		return cli.BadValue(fs, "engine", fmt.Sprintf("names %s twice (auto is %s here)", picked[0], picked[0]))
	}
	return nil
}
