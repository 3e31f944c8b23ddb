package bench

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/engines"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
)

// makeNotes works out the "#" lines this suite adds to nccl-tests' header: the engine, the algorithms the rows
// will use, the seed, and the flags that do not apply to this engine.
func (s *Session) makeNotes() error {
	o, name := s.o, s.eng.Name()
	if !s.multi {
		s.note("Engine: %s", s.engineWords())
	}
	if lp, ok := s.comm.(collectives.LibraryPather); ok {
		s.note("Library: %s", lp.LibraryPath())
	}
	if len(o.CommEnv) > 0 {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(o.CommEnv)) {
			kv = append(kv, k+"="+o.CommEnv[k])
		}
		s.note("Env: %s", strings.Join(kv, " "))
	}
	if n := s.Coll.Note(); n != "" {
		s.note("%s", n)
	}
	algos, err := s.algorithms()
	if err != nil {
		return err
	}
	s.notes = append(s.notes, algos...)
	if o.Check > 0 {
		s.note("Seed: %d", s.seed)
	}
	group := s.threads[0].group
	s.graph = o.Graph
	if _, ok := group.(collectives.Grapher); !ok && o.Graph > 0 {
		s.graph = 0
		s.note("-G %d ignored: engine %s cannot capture graphs", o.Graph, name)
	}
	if name == "host" && o.StreamNull == 1 {
		s.note("-y 1 ignored: the host engine has no streams")
	}
	if name == "host" && o.Register > 0 {
		s.note("-R %d ignored: the host engine has no library to register buffers with", o.Register)
	}
	if o.Library != "" && name != "vendor" {
		s.note("--lib %s ignored: engine %s loads no collective library", o.Library, name)
	}
	if _, ok := group.(collectives.MemoryReporter); !ok && o.Memory == 1 {
		s.note("-M 1 ignored: engine %s cannot report device memory", name)
	}
	if o.Changed["per_iter_skip"] && o.PerIter != 1 {
		s.note("-K %d ignored: per-iteration timing is off (-I 1 turns it on)", o.IterSkip)
	}
	lpOn := func(env map[string]string) bool { return plan.LowPrecisionOn(env, s.Getenv) }
	// An A/B arm may turn low precision on: the launcher knows both arms; a worker, whose header the launcher
	// prints, knows only its own value of a policy switch under comparison.
	armPolicy := false
	if v, ok := collectives.LookupVariable(s.ArmVariable); ok {
		armPolicy = v.Policy()
	}
	if o.LPMode != "" && !armPolicy && !slices.ContainsFunc(plan.ArmEnvs(o), lpOn) {
		s.note("--lp-mode %s ignored: low precision is off (--lp turns it on)", o.LPMode)
	}
	for _, f := range []struct {
		given bool
		text  string
	}{{o.Changed["ab-rounds"], fmt.Sprintf("--ab-rounds %d", o.ABRounds)}, {o.Changed["ab-strict"], "--ab-strict"}} {
		if f.given && o.ABKey == "" {
			s.note("%s ignored: there is no --ab comparison", f.text)
		}
	}
	if o.Changed["root"] && !s.Coll.Rooted {
		s.note("-r %d ignored: %s has no root", o.Root, s.Coll.Name)
	}
	if o.PerIter == 1 {
		s.perIter = perIterNote(group, o.IterSkip)
	}
	if n := skipNote(s.Coll, o); n != "" {
		s.note("%s", n)
	}
	s.rcclNotes()
	s.envNotes()
	return nil
}

// runtime is the GPU runtime the engine runs on ("" for none, or where the engine does not say).
func (s *Session) runtime() string {
	if r, ok := s.eng.(collectives.RuntimeNamer); ok {
		return r.Runtime()
	}
	return ""
}

// versionFields is what the version line says after the library, in its name=value form: the engine and the
// GPU runtime.
func (s *Session) versionFields() string {
	f := " engine=" + s.eng.Name()
	if r := s.runtime(); r != "" {
		f += " runtime=" + r
	}
	return f
}

// engineWords is the "# Engine:" line in words: the engine, whether auto picked it, and what it runs on (the
// runtime and this process's GPUs, or the CPU).
func (s *Session) engineWords() string {
	w := s.eng.Name()
	if s.engineName == engines.Auto {
		w += " (auto)"
	}
	if s.eng.Name() == collectives.EngineHost {
		return w + " on the CPU"
	}
	gpus := map[string]int{}
	var names []string
	for _, d := range s.comm.Devices() {
		if gpus[d.Name]++; gpus[d.Name] == 1 {
			names = append(names, d.Name)
		}
	}
	var on []string
	for _, n := range names {
		on = append(on, fmt.Sprintf("%d x %s", gpus[n], n))
	}
	if r := s.runtime(); r != "" {
		w += " on " + strings.ToUpper(r)
	}
	if len(on) > 0 {
		w += ": " + strings.Join(on, ", ")
	}
	return w
}

func (s *Session) note(format string, args ...any) {
	s.notes = append(s.notes, fmt.Sprintf(format, args...))
}

// perIterNote is nccl-tests' per-iteration header line, naming how this engine times iterations: CUDA
// events (nccl-tests' words) where the engine has them, else the host clock.
func perIterNote(g collectives.Group, skip int) string {
	clock := "host clock timing with a wait after each iteration"
	if _, ok := g.(collectives.EventTimer); ok {
		clock = "CUDA event timing"
	}
	line := "Per-Iteration Report: " + clock + "; i_* uses max over process rows"
	if skip > 0 {
		line += fmt.Sprintf("; summary skips first %d iterations", skip)
	}
	return line + " "
}

// algorithms asks the engine which algorithm each row will use and summarizes it: one line when every row
// uses the same one, else the size ranges of each, per type and operation when there are several.
func (s *Session) algorithms() ([]string, error) {
	type block struct {
		label string
		spans []string
	}
	var blocks []block
	all := map[string]bool{}
	err := s.team.each(func(t int) error {
		if t != 0 {
			return nil
		}
		th := s.threads[0]
		for _, pair := range plan.Pairs(s.Coll, s.o) {
			dt, op := pair.DType, pair.Op
			b := block{label: dt.String() + " " + s.Coll.RedOpName(op)}
			var last string
			var from, to int64
			flush := func() {
				if last != "" {
					b.spans = append(b.spans, fmt.Sprintf("%d-%d %s", from, to, last))
				}
			}
			for _, size := range s.sizes() {
				p := plan.Point{DType: dt, Op: op, Root: s.roots()[0], Size: size}
				algo := th.group.Algorithm(th.call(p, !s.o.RunOutOfPlace(), 0))
				col := s.Coll.Bytes(th.counts(p, 0), dt)
				if algo != last {
					flush()
					last, from = algo, col
				}
				to = col
				all[algo] = true
			}
			flush()
			blocks = append(blocks, b)
		}
		return nil
	})
	if err != nil || len(all) == 0 {
		return nil, err
	}
	if len(all) == 1 {
		for a := range all {
			return []string{"Algorithm: " + a}, nil
		}
	}
	var out []string
	for _, b := range blocks {
		label := "Algorithms"
		if len(blocks) > 1 {
			label += " " + b.label
		}
		out = append(out, label+": "+strings.Join(b.spans, ", "))
	}
	return out, nil
}
