package harness

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rcclx-tests/rcclx-tests/bootstrap"
	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/cli"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/results"
)

// checkVariables refuses, when the flags are parsed, a -E or --ab variable that no engine of the run reads, or
// a value its reader would refuse. Only engines that read nothing outside the registry can tell (readers): with
// the vendor engine among them, the library may read any name (checkABVariable searches its file for --ab's).
func checkVariables(o *plan.Options, fs *pflag.FlagSet, readers func(string) ([]string, bool)) error {
	if readers == nil || len(o.Env) == 0 && o.ABKey == "" {
		return nil // nothing to check: readers("auto") would probe for a GPU
	}
	var engines []string
	for _, name := range o.Engines {
		known, ok := readers(name)
		if !ok {
			return nil
		}
		engines = append(engines, known...)
	}
	check := func(key string, values ...string) error {
		if _, ok := collectives.LookupVariable(key); !ok {
			return fmt.Errorf("%s is not a variable the %s engine reads: did you mean %s?", key,
				strings.Join(engines, " or "), collectives.ClosestVariable(key))
		}
		var first error
		for _, e := range engines {
			err := error(nil)
			for _, v := range values {
				if err = collectives.CheckVariable(e, key, v); err != nil {
					break
				}
			}
			if err == nil {
				return nil
			}
			first = cmp.Or(first, err)
		}
		return first
	}
	for _, kv := range o.Env {
		k, v, _ := strings.Cut(kv, "=")
		err := check(k, v)
		if known, ok := collectives.LookupVariable(k); ok && err == nil && len(known.Engines) == 0 && !known.Overridable {
			err = fmt.Errorf("%s is read from the process environment, which -E does not change: set it there", k)
		}
		if err != nil {
			return &exit.UsageError{Msg: fmt.Sprintf("invalid value %q for -E/--env: %v", kv, err)}
		}
	}
	if o.ABKey != "" {
		if err := check(o.ABKey, o.ABValues[:]...); err != nil {
			return cli.BadValue(fs, "ab", err.Error())
		}
	}
	return nil
}

// readers is the engine source's readers of an --engine name (none where the source does not know them).
func (a *app) readers(name string) ([]string, bool) {
	if a.engines.readers == nil {
		return nil, false
	}
	return a.engines.readers(name)
}

// notPerArm are the suite's variables an arm cannot vary: the launching process reads them (the minimum
// bandwidth) or sets them in every worker (the seed, the worker's control channel and rendezvous).
var notPerArm = []string{plan.SeedEnv, abWorkerEnv, "RCCLX_TESTS_BOOTSTRAP", "NCCL_TESTS_MIN_BW"}

// checkABVariable finds out, when the flags are parsed, whether anything reads the --ab variable, and refuses
// arms that mean the same to its reader. Our engines' names were checked by checkVariables; an engine that
// loads a library (collectives.LibraryScanner) has the library's file searched for the name. An unread
// variable is a "#" warning (both arms will run the same), or with --ab-strict an error.
func (a *app) checkABVariable(o *plan.Options) (plan.ABVariable, error) {
	refuse := func(why string) (plan.ABVariable, error) {
		return plan.ABVariable{}, &exit.UsageError{Msg: fmt.Sprintf("invalid value %q for --ab: %s", o.AB, why)}
	}
	if slices.Contains(notPerArm, o.ABKey) {
		return refuse(o.ABKey + " is the same in both arms' workers (the launching process sets or reads it), " +
			"so there is nothing to compare")
	}
	if o.ABKey == plan.EnvDevice {
		return refuse(plan.EnvDevice + " moves the run to other devices; an A/B compares two settings on the same ones")
	}
	if slices.Contains(plan.UnsupportedVars, o.ABKey) {
		return refuse(o.ABKey + " is not supported here (a run refuses it or notes it ignored), so there is " +
			"nothing to compare")
	}
	name := o.Engines[0]
	_, ours := a.readers(name)
	v, known := collectives.LookupVariable(o.ABKey)
	// The suite reads it: every variable our engines read is one of its own, and some it reads on every engine
	// or in the process. Another reader's parser is unknown, so only the same text is surely the same.
	suite := ours || known && (len(v.Engines) == 0 || v.ReadBy(name))
	x, y := o.ABValues[0], o.ABValues[1]
	if x == y || suite && v.Same(x, y) {
		return refuse("both arms are the same")
	}
	if known && !v.ReadFor(a.coll) { // RCCLX's own switches mean in its library what they mean in our policy
		var colls []string
		for _, c := range v.Colls {
			colls = append(colls, c.Name)
		}
		return refuse(fmt.Sprintf("%s is not read by %s: it changes only %s", o.ABKey, a.coll.Name,
			strings.Join(colls, ", ")))
	}
	if suite {
		same := collectives.SameEffect(a.coll, a.runShape(o), plan.Overlay(o.CommEnv, a.parseEnv()), o.ABKey, x, y)
		return plan.ABVariable{Known: true, Read: true, NoEffect: same}, nil
	}
	if a.engines.open == nil {
		return plan.ABVariable{}, nil
	}
	eng, err := a.engines.open(name)
	if err != nil {
		return plan.ABVariable{}, nil
	}
	s, ok := eng.(collectives.LibraryScanner)
	if !ok {
		return plan.ABVariable{}, nil
	}
	read, lib, err := s.LibraryReads(collectives.Config{Library: o.Library}, o.ABKey)
	if err != nil {
		return plan.ABVariable{}, nil
	}
	if !read && o.ABStrict {
		return refuse(fmt.Sprintf("%s does not contain the name %s, so it never reads it and both arms would run "+
			"the same (--ab-strict)", lib, o.ABKey))
	}
	return plan.ABVariable{Known: true, Read: read, Library: lib}, nil
}

// recordABVariable puts what v knows into the JSON's ab key.
func recordABVariable(v plan.ABVariable, r *results.ABReport) {
	if v.Known {
		r.VariableRead, r.Library = &v.Read, v.Library
	}
}

// runShape is the run's types, operations and rank count (every process's -t x -g, as the consistency check
// holds them; unknown where the launcher's variables do not say), as the policy's no-effect check takes them.
func (a *app) runShape(o *plan.Options) collectives.RunShape {
	s := collectives.RunShape{DTypes: o.DTypes, Ops: plan.Ops(a.coll, o)}
	if l, err := bootstrap.Detect(a.parseEnv()); err == nil {
		s.NRanks = l.Size * o.NThreads * o.NGpus
	}
	return s
}

// abVariableNote is the "#" line for a variable that is not read, or has no effect on coll, "" otherwise.
func abVariableNote(v plan.ABVariable, key, coll string) string {
	switch {
	case v.NoEffect:
		return fmt.Sprintf("# WARNING: with the run's other settings both values of %s give %s the same algorithms "+
			"and settings (the path it tunes is off, another switch decides, or no type, operation or rank count of the "+
			"run takes that path), so both arms will behave the same",
			key, coll)
	case !v.Known || v.Read:
		return ""
	}
	return fmt.Sprintf("# WARNING: %s does not contain the name %s: the library never reads it, so both arms "+
		"will behave the same", v.Library, key)
}
