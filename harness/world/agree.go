package world

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rcclx-tests/rcclx-tests/bootstrap"
	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
)

// perProcessFlags may differ between the processes of one run: where a process writes (only rank 0 does),
// what it shows on its terminal, its timeout, its own library path, and the seed (rank 0's is taken).
var perProcessFlags = []string{"output_file", "rccl_output_file", "csv", "progress", "version", "help", "timeout",
	"lib", "seed"}

// SwitchEnv is the RCCLX switches of getenv that are set.
func SwitchEnv(getenv func(string) string) map[string]string {
	out := map[string]string{}
	for _, v := range collectives.Variables {
		if val := getenv(v.Name); v.Policy() && val != "" {
			out[v.Name] = val
		}
	}
	return out
}

func NewArgs(binary string, fs *pflag.FlagSet) plan.Args {
	r := plan.Args{Binary: binary}
	fs.VisitAll(func(f *pflag.Flag) {
		name, short := "--"+f.Name, "--"+f.Name
		if f.Shorthand != "" {
			name, short = "-"+f.Shorthand+"/"+name, "-"+f.Shorthand
		}
		if slices.Contains(perProcessFlags, f.Name) {
			if f.Name != "help" && f.Name != "version" {
				r.Free = append(r.Free, short)
			}
			return
		}
		r.Flags = append(r.Flags, [2]string{name, f.Value.String()})
	})
	return r
}

// AgreeArgs refuses a run whose processes were started with different binaries or arguments: each would run
// its own sizes, types or counts against the others' (a wrong element, a hang or a crash). Every process
// names the first difference from process 0.
func AgreeArgs(w collectives.World, local plan.Args) error {
	all, err := collectives.Exchange(w, "the command lines", local)
	if err != nil {
		return err
	}
	for p, other := range all {
		if why := differs(all[0], other); why != "" {
			return &exit.UsageError{Msg: fmt.Sprintf("process %d runs %s: every process of a run needs the same "+
				"binary and arguments (%s and %s may differ)", p, bootstrap.Printable(why),
				strings.Join(local.Free[:len(local.Free)-1], ", "), local.Free[len(local.Free)-1])}
		}
	}
	return agreeSwitches(all)
}

// agreeSwitches refuses a run whose processes have different RCCLX switches in their environments, naming the
// first such variable and which process has which value.
func agreeSwitches(all []plan.Args) error {
	for _, v := range collectives.Variables {
		if !v.Policy() {
			continue
		}
		var values []string // the distinct values, in the order of the first process that has each
		procs := [][]int{}  // the processes of each value
		for p, a := range all {
			val := a.Switches[v.Name]
			i := slices.IndexFunc(values, func(x string) bool { return v.Same(x, val) })
			if i < 0 {
				values, procs, i = append(values, val), append(procs, nil), len(values)
			}
			procs[i] = append(procs[i], p)
		}
		if len(values) < 2 {
			continue
		}
		var parts []string
		for i, val := range values {
			shown := "unset"
			if val != "" {
				shown = strconv.Quote(val)
			}
			parts = append(parts, fmt.Sprintf("%s %s %s", collectives.ProcessesWord(procs[i]),
				collectives.JoinRanks(procs[i]), shown))
		}
		return &exit.UsageError{Msg: fmt.Sprintf("%s differs between the processes (%s): every process of a run "+
			"needs the same RCCLX switches (set it alike everywhere, or with -E)", v.Name, strings.Join(parts, ", "))}
	}
	return nil
}

// differs names the first difference of o from r, "" when there is none.
func differs(r, o plan.Args) string {
	if r.Binary != o.Binary {
		return fmt.Sprintf("%s, process 0 %s", o.Binary, r.Binary)
	}
	for i, f := range r.Flags {
		if i >= len(o.Flags) || o.Flags[i] != f {
			if i < len(o.Flags) && o.Flags[i][0] == f[0] {
				return fmt.Sprintf("%s %q, process 0 %q", f[0], o.Flags[i][1], f[1])
			}
			return fmt.Sprintf("other flags than process 0 (%s)", f[0])
		}
	}
	if len(o.Flags) != len(r.Flags) {
		return "other flags than process 0"
	}
	return ""
}
