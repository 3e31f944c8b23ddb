package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// RCCLRow is one line of rccl-tests' reporter output (-Z csv|json -X FILE): one half of one row in one cycle.
type RCCLRow struct {
	Cycle              int    // numCycle: the -N cycle, from 0, counted afresh for each type and operation
	Name               string // rccl-tests' collective name ("AllReduce"): RCCLName
	Size               int64  // the size column (bytes)
	Type, Redop        string
	InPlace            bool
	Time, AlgBW, BusBW float64 // us, GB/s, GB/s
	Wrong              *int64  // nil: not checked ("N/A")
}

// RCCLLayout is the process layout the reporter writes in every line. rccl-tests built with MPI writes
// nodes, ranks (processes), ranksPerNode and gpusPerRank (GPUs per process); built without, only gpus.
type RCCLLayout struct {
	MPI                                            bool
	Nodes, Processes, ProcsPerNode, GPUsPerProcess int
}

// RCCL output formats, as -Z spells them.
const (
	RCCLCSV  = "csv"
	RCCLJSON = "json"
)

// rcclNames are rccl-tests' names of its collectives (each test's testColl name; all_reduce_bias_perf's is
// "AllReduce" too).
var rcclNames = map[string]string{
	"all_reduce": "AllReduce", "all_gather": "AllGather", "alltoall": "AlltoAll", "reduce_scatter": "ReduceScatter",
	"broadcast": "Broadcast", "reduce": "Reduce", "gather": "Gather", "scatter": "Scatter", "sendrecv": "SendRecv",
	"alltoallv": "AlltoAllv", "hypercube": "HyperCube", "all_reduce_bias": "AllReduce",
}

// ourNames reads rccl-tests' names as this suite's ("AllReduce" is all_reduce, though all_reduce_bias_perf's
// files say it too).
var ourNames = func() map[string]string {
	m := map[string]string{}
	for ours, theirs := range rcclNames {
		if ours != "all_reduce_bias" {
			m[theirs] = ours
		}
	}
	return m
}()

// RCCLName is rccl-tests' name of the collective this suite calls name ("all_reduce" -> "AllReduce").
func RCCLName(name string) string {
	if n, ok := rcclNames[name]; ok {
		return n
	}
	return name
}

// RCCLTypeName is rccl-tests' spelling of a type name: its FP8 names differ from nccl-tests'.
func RCCLTypeName(t string) string {
	switch t {
	case "f8e4m3":
		return "fp8_e4m3"
	case "f8e5m2":
		return "fp8_e5m2"
	}
	return t
}

// RCCLRedopName is rccl-tests' redop column: hypercube's, blank in nccl-tests, is none there.
func RCCLRedopName(r string) string {
	if r == "" {
		return "none"
	}
	return r
}

// rcclField is one value of a line: its JSON key and its text, as rccl-tests renders it (strings quoted in
// both formats, integers in decimal, floating-point numbers as C's %f).
type rcclField struct{ key, text string }

func rcclString(s string) string        { return `"` + s + `"` }
func rcclFloat(v float64) string        { return strconv.FormatFloat(v, 'f', 6, 64) }
func rcclInt[T int | int64](v T) string { return strconv.FormatInt(int64(v), 10) }

func (l RCCLLayout) fields(r RCCLRow) []rcclField {
	wrong := "N/A"
	if r.Wrong != nil {
		wrong = rcclInt(*r.Wrong)
	}
	inPlace := 0
	if r.InPlace {
		inPlace = 1
	}
	f := []rcclField{{"numCycle", rcclInt(r.Cycle)}, {"name", rcclString(r.Name)}}
	if l.MPI {
		f = append(f, rcclField{"nodes", rcclInt(l.Nodes)}, rcclField{"ranks", rcclInt(l.Processes)},
			rcclField{"ranksPerNode", rcclInt(l.ProcsPerNode)}, rcclField{"gpusPerRank", rcclInt(l.GPUsPerProcess)})
	} else {
		f = append(f, rcclField{"gpus", rcclInt(l.GPUsPerProcess)})
	}
	return append(f, rcclField{"size", rcclInt(r.Size)}, rcclField{"type", rcclString(r.Type)},
		rcclField{"redop", rcclString(r.Redop)}, rcclField{"inPlace", rcclInt(inPlace)},
		rcclField{"time", rcclFloat(r.Time)}, rcclField{"algBw", rcclFloat(r.AlgBW)},
		rcclField{"busBw", rcclFloat(r.BusBW)}, rcclField{"wrong", rcclString(wrong)})
}

// RCCLCSVHeader is the CSV header line rccl-tests writes for the layout (without its newline).
func (l RCCLLayout) RCCLCSVHeader() string {
	procs := "gpus,"
	if l.MPI {
		procs = "nodes,ranks,ranksPerNode,gpusPerRank,"
	}
	return "numCycle,collective," + procs + "size,type,redop,inplace,time,algbw,busbw,#wrong"
}

// FormatRCCL renders rows as rccl-tests' reporter writes its file: format is RCCLCSV or RCCLJSON.
func FormatRCCL(format string, l RCCLLayout, rows []RCCLRow) []byte {
	var b bytes.Buffer
	if format == RCCLCSV {
		b.WriteString(l.RCCLCSVHeader() + "\n")
		for _, r := range rows {
			var vals []string
			for _, f := range l.fields(r) {
				vals = append(vals, f.text)
			}
			b.WriteString(strings.Join(vals, ",") + "\n")
		}
		return b.Bytes()
	}
	b.WriteString("[\n")
	for i, r := range rows {
		var kv []string
		for _, f := range l.fields(r) {
			kv = append(kv, `"`+f.key+`":`+f.text)
		}
		b.WriteString("{" + strings.Join(kv, ", ") + "}")
		if i < len(rows)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("]\n")
	return b.Bytes()
}

// rcclJSONKeys maps the reporter's JSON keys to the CSV loader's column names.
var rcclJSONKeys = map[string]string{
	"numCycle": "cycle", "name": "name", "gpus": "gpus", "size": "size", "type": "type", "redop": "redop",
	"inPlace": "inplace", "time": "time", "algBw": "algbw", "busBw": "busbw", "wrong": "wrong",
}

// parseRCCLJSON reads rccl-tests' JSON reporter output: an array of one object per line of its CSV.
func parseRCCLJSON(data []byte) (*Record, error) {
	var lines []map[string]json.RawMessage
	if err := json.Unmarshal(data, &lines); err != nil {
		return nil, jsonError(data, err)
	}
	rec := &Record{Version: SchemaVersion}
	col := newCollector()
	for i, line := range lines {
		if _, ok := line["size"]; !ok {
			return nil, fmt.Errorf("entry %d: no size", i+1)
		}
		if _, ok := line["time"]; !ok {
			return nil, fmt.Errorf("entry %d: no time", i+1)
		}
		cells := map[string]string{}
		for k, raw := range line {
			name, ok := rcclJSONKeys[k]
			if !ok {
				continue
			}
			var s string
			if json.Unmarshal(raw, &s) != nil {
				s = string(raw)
			}
			cells[name] = s
		}
		cell := func(name string) (string, bool) {
			v, ok := cells[name]
			return strings.TrimSpace(v), ok
		}
		if err := addCSVLine(rec, col, cell); err != nil {
			return nil, fmt.Errorf("entry %d: %v", i+1, err)
		}
	}
	if err := col.finish(rec); err != nil {
		return nil, err
	}
	return rec, nil
}
