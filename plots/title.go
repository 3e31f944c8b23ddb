package plots

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rcclx-tests/rcclx-tests/nccl"
	"github.com/rcclx-tests/rcclx-tests/results"
)

// The facts of a run in the order a title reads them.
const (
	factCollective = iota
	factType
	factOp
	factRanks
	factDevice
	factEngine
	factLibrary
	factGraph
	nFacts
)

// factsOf spells what rec says about its run: "all_reduce", "float", "sum", "2 ranks", "on NVIDIA H200" (or "on
// the CPU" for the host engine), "engine vendor", "NCCL 2.28.3", "-G 20"; "" where it says nothing.
func factsOf(rec *results.Record) [nFacts]string {
	f := results.FactsOf(rec)
	var out [nFacts]string
	out[factCollective] = f.Collective
	out[factType] = list(f.Types, "types")
	if f.Ops != "none" {
		out[factOp] = list(f.Ops, "ops")
	}
	if f.Ranks != "" {
		out[factRanks] = f.Ranks + " ranks"
		if f.Ranks == "1" {
			out[factRanks] = "1 rank"
		}
	}
	switch {
	case f.GPU == "host" || f.Engine == "host":
		out[factDevice] = "on the CPU"
	case f.GPU != "":
		out[factDevice] = "on " + f.GPU
	}
	if f.Engine != "" {
		out[factEngine] = "engine " + f.Engine
	}
	out[factLibrary] = libraryName(rec.Library, f)
	if f.Graph != "" && f.Graph != "0" {
		out[factGraph] = "-G " + f.Graph
	}
	return out
}

// list is a comma list of up to three names as it is, a longer one as its count: "12 types".
func list(names, what string) string {
	if n := strings.Count(names, ",") + 1; n > 3 {
		return fmt.Sprintf("%d %s", n, what)
	}
	return names
}

// libraryName spells the library of a run: this suite's "nccl-library=22803,rcclx-gpu=1" as "NCCL 2.28.3,
// rcclx-gpu 1"; where the record has only nccl-tests' version code, that version. An NCCL-ABI library is
// named RCCL on an AMD GPU.
func libraryName(lib string, f results.Facts) string {
	vendor := "NCCL"
	switch {
	case strings.Contains(f.GPU, "AMD") || strings.Contains(f.GPU, "Instinct") || strings.Contains(f.GPU, "Radeon"):
		vendor = "RCCL"
	case f.GPU == "":
		vendor = "library"
	}
	if lib == "" && f.Library != "" {
		lib = "nccl-library=" + f.Library
	}
	var names []string
	for l := range strings.SplitSeq(lib, ",") {
		name, ver, ok := strings.Cut(l, "=")
		if !ok {
			continue
		}
		if name == "nccl-library" {
			if code, err := strconv.Atoi(ver); err == nil {
				ver = nccl.VersionString(code)
			}
			name = vendor
		}
		names = append(names, name+" "+ver)
	}
	return strings.Join(names, ", ")
}

// title joins facts as a title line: "all_reduce, float sum, 2 ranks on NVIDIA H200, engine vendor".
func title(facts []string) string {
	var b strings.Builder
	for i, f := range facts {
		if f == "" {
			continue
		}
		if b.Len() > 0 {
			if (i == factOp && facts[factType] != "") || (i == factDevice && facts[factRanks] != "") {
				b.WriteString(" ")
			} else {
				b.WriteString(", ")
			}
		}
		b.WriteString(f)
	}
	return b.String()
}

// sharedFacts is the title line of runs: the facts all of them share.
func sharedFacts(runs []results.Run) string {
	facts := make([]string, nFacts)
	for i, r := range runs {
		rf := factsOf(r.Record)
		for k := range facts {
			if i == 0 {
				facts[k] = rf[k]
			} else if facts[k] != rf[k] {
				facts[k] = ""
			}
		}
	}
	return title(facts)
}

// runLabels names each run in the legend: by given (one per run), else by the facts in which the runs differ
// (the engine and library of a lone run), then by start time, then by position, until the names differ.
func runLabels(runs []results.Run, given []string) ([]string, error) {
	if given != nil {
		if len(given) != len(runs) {
			return nil, fmt.Errorf("--label given %d times for %d inputs: give it once per input, in order", len(given), len(runs))
		}
		for i, l := range given {
			if strings.TrimSpace(l) == "" {
				return nil, fmt.Errorf("--label %q (input %d): empty", l, i+1)
			}
		}
		return given, nil
	}
	facts := make([][nFacts]string, len(runs))
	for i, r := range runs {
		facts[i] = factsOf(r.Record)
	}
	labels := make([]string, len(runs))
	if len(runs) == 1 {
		labels[0] = title([]string{factEngine: facts[0][factEngine], factLibrary: facts[0][factLibrary], nFacts - 1: ""})
		if labels[0] == "" {
			labels[0] = "run"
		}
		return labels, nil
	}
	differ := make([]bool, nFacts)
	for k := range differ {
		for _, f := range facts {
			differ[k] = differ[k] || f[k] != facts[0][k]
		}
	}
	for i := range runs {
		parts := make([]string, nFacts)
		for k := range parts {
			if differ[k] {
				parts[k] = facts[i][k]
				if k == factGraph && parts[k] == "" {
					parts[k] = "-G 0"
				}
			}
		}
		labels[i] = title(parts)
	}
	// Runs that share a label are told apart by start time where theirs differ, else by position.
	groups := map[string][]int{}
	for i, l := range labels {
		groups[l] = append(groups[l], i)
	}
	for l, idx := range groups {
		if len(idx) == 1 && l != "" {
			continue
		}
		starts := make([]string, len(idx))
		for j, i := range idx {
			starts[j] = runs[i].Record.StartTime
		}
		for j, i := range idx {
			if distinct(starts) {
				labels[i] = strings.TrimSpace(l + " " + starts[j])
			} else {
				labels[i] = strings.TrimSpace(fmt.Sprintf("%s run %d", l, i+1))
			}
		}
	}
	return labels, nil
}

// distinct reports whether labels are all different and none is empty.
func distinct(labels []string) bool {
	sorted := slices.Sorted(slices.Values(labels))
	return sorted[0] != "" && len(slices.Compact(sorted)) == len(labels)
}
