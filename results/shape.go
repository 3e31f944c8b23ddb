package results

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// shape is what a side of the gate measured. Records of different shapes measure different things: the gate
// fails on a difference in any of these unless told to compare what the two sides share.
type shape struct {
	collective, types, ops, ranks, halves, ab string
}

// context is what a side ran on. A difference is worth a warning: it may be the change under test.
type context struct {
	engine, library, gpu, graph string
}

var shapeFields = []struct {
	name string
	get  func(shape) string
}{
	{"collective", func(s shape) string { return s.collective }},
	{"type", func(s shape) string { return s.types }},
	{"op", func(s shape) string { return s.ops }},
	{"rank count", func(s shape) string { return s.ranks }},
	{"halves (-O)", func(s shape) string { return s.halves }},
	{"A/B arms", func(s shape) string { return s.ab }},
}

var contextFields = []struct {
	name string
	get  func(context) string
}{
	{"engine", func(c context) string { return c.engine }},
	{"library version", func(c context) string { return c.library }},
	{"GPU model", func(c context) string { return c.gpu }},
	{"-G (CUDA graph)", func(c context) string { return c.graph }},
}

// sideSet collects the distinct values of one field over the records of a side, in a stable order.
type sideSet []string

func (s *sideSet) add(v string) {
	if v != "" && !slices.Contains(*s, v) {
		*s = append(*s, v)
	}
}

func (s sideSet) String() string {
	slices.Sort(s)
	return strings.Join(s, ",")
}

// shapeOf is the shape and context of the records of one side; a field no record states stays empty and is
// not compared.
func shapeOf(recs []*Record) (shape, context) {
	var coll, types, ops, ranks, halves, ab, engine, lib, gpu, graph sideSet
	for _, rec := range recs {
		c := strings.TrimSuffix(collectiveName(rec), "_perf")
		coll.add(c)
		if n := rankCount(rec, c); n > 0 {
			ranks.add(strconv.Itoa(n))
		}
		var half [2]bool
		for i := range rec.Results {
			r := &rec.Results[i]
			types.add(r.Type)
			ops.add(r.Redop)
			for j, h := range r.halves() {
				_, ok := h.Micros()
				half[j] = half[j] || ok
			}
		}
		for j, ran := range half {
			if ran {
				halves.add(halfNames[j])
			}
		}
		if rec.AB != nil {
			ab.add(strings.Join(rec.AB.Arms[:], " vs "))
		} else {
			ab.add("none")
		}
		engine.add(rec.Engine)
		if rec.NcclVersion != 0 {
			lib.add(strconv.Itoa(rec.NcclVersion))
		}
		if len(rec.Config.Devices) > 0 {
			gpu.add(rec.Config.Devices[0].DeviceInfo)
		}
		if rec.Suite != "" || rec.Config.Graph != 0 {
			graph.add(strconv.Itoa(rec.Config.Graph))
		}
	}
	return shape{coll.String(), types.String(), ops.String(), ranks.String(), halves.String(), ab.String()},
		context{engine.String(), lib.String(), gpu.String(), graph.String()}
}

// rankCount is the number of ranks of rec: from its device lines where they name several ranks (this suite's
// JSON and both tools' text list every rank), else inferred from the ratio of bus to algorithm bandwidth, the
// collective's bus factor at that rank count (nccl-tests' JSON lists one device per process), when the printed
// digits leave a single candidate. 0: unknown.
func rankCount(rec *Record, collName string) int {
	maxRank := -1
	for _, d := range rec.Config.Devices {
		maxRank = max(maxRank, d.Rank)
	}
	if maxRank > 0 {
		return maxRank + 1
	}
	var coll *collectives.Collective
	for _, c := range collectives.All() {
		if c.Name == collName {
			coll = c
		}
	}
	if coll == nil {
		return 0
	}
	// The row with the largest algbw has the most significant digits.
	best, ratio := -1.0, 0.0
	for i := range rec.Results {
		for _, h := range rec.Results[i].halves() {
			if h.AlgBW > best && h.AlgBW > 0 {
				best, ratio = h.AlgBW, h.BusBW/h.AlgBW
			}
		}
	}
	if best <= 0 {
		return 0
	}
	// Both bandwidths are printed to 0.01 GB/s at least: factors within that of the ratio are all possible.
	tol := 0.01 * (1 + ratio) / best
	n := 0
	for k := 1; k <= 1<<16; k++ {
		if math.Abs(coll.BusFactor(k)-ratio) <= tol {
			if n != 0 {
				return 0 // several rank counts fit the digits
			}
			n = k
		}
	}
	return n
}

// mismatches names, one line each, the fields in which the two sides differ.
func mismatches[T any](fields []struct {
	name string
	get  func(T) string
}, base, cur T) []string {
	var out []string
	for _, f := range fields {
		b, c := f.get(base), f.get(cur)
		if b != "" && c != "" && b != c {
			out = append(out, fmt.Sprintf("%s: baseline %s, current %s", f.name, b, c))
		}
	}
	return out
}

// unreadVariable describes an A/B record whose variable the run's library never reads ("" if rec is none).
func unreadVariable(rec *Record) string {
	if rec.AB == nil || rec.AB.VariableRead == nil || *rec.AB.VariableRead {
		return ""
	}
	key, _, _ := strings.Cut(rec.AB.Arms[0], "=")
	lib := rec.AB.Library
	if lib == "" {
		lib = "the library"
	}
	return fmt.Sprintf("an A/B run of %s, which %s never reads: both arms ran the same", key, lib)
}

// collectiveName is the binary name in args[0] ("all_reduce_perf"), or this suite's name of the collective an
// rccl-tests result file names ("AllReduce": "all_reduce").
func collectiveName(rec *Record) string {
	if len(rec.Args) == 0 {
		return ""
	}
	name := filepath.Base(rec.Args[0])
	if ours, ok := ourNames[name]; ok {
		return ours
	}
	return name
}
