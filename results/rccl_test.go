package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func rcclRows() []RCCLRow {
	zero, two := int64(0), int64(2)
	return []RCCLRow{
		{Cycle: 0, Name: "AllReduce", Size: 1024, Type: "float", Redop: "sum", Time: 22.1, AlgBW: 0.046335, BusBW: 0.0810862, Wrong: &zero},
		{Cycle: 0, Name: "AllReduce", Size: 1024, Type: "float", Redop: "sum", InPlace: true, Time: 21.95, AlgBW: 0.04665, BusBW: 0.0816, Wrong: nil},
		{Cycle: 1, Name: "AllReduce", Size: 1024, Type: "float", Redop: "sum", Time: 30, AlgBW: 0.034133, BusBW: 0.059733, Wrong: &two},
	}
}

// TestRCCLFormatsExact pins the bytes rccl-tests' reporter writes for three lines: its CSV header, strings
// quoted (the #wrong count too), integers plain, times and bandwidths as C's %f, one line per half; the JSON
// as its writer joins keys and entries.
func TestRCCLFormatsExact(t *testing.T) {
	single := RCCLLayout{GPUsPerProcess: 4}
	wantCSV := `numCycle,collective,gpus,size,type,redop,inplace,time,algbw,busbw,#wrong
0,"AllReduce",4,1024,"float","sum",0,22.100000,0.046335,0.081086,"0"
0,"AllReduce",4,1024,"float","sum",1,21.950000,0.046650,0.081600,"N/A"
1,"AllReduce",4,1024,"float","sum",0,30.000000,0.034133,0.059733,"2"
`
	if got := string(FormatRCCL(RCCLCSV, single, rcclRows())); got != wantCSV {
		t.Errorf("CSV:\n%s\nwant\n%s", got, wantCSV)
	}
	mpi := RCCLLayout{MPI: true, Nodes: 2, Processes: 16, ProcsPerNode: 8, GPUsPerProcess: 1}
	wantJSON := `[
{"numCycle":0, "name":"AllReduce", "nodes":2, "ranks":16, "ranksPerNode":8, "gpusPerRank":1, "size":1024, "type":"float", "redop":"sum", "inPlace":0, "time":22.100000, "algBw":0.046335, "busBw":0.081086, "wrong":"0"},
{"numCycle":0, "name":"AllReduce", "nodes":2, "ranks":16, "ranksPerNode":8, "gpusPerRank":1, "size":1024, "type":"float", "redop":"sum", "inPlace":1, "time":21.950000, "algBw":0.046650, "busBw":0.081600, "wrong":"N/A"},
{"numCycle":1, "name":"AllReduce", "nodes":2, "ranks":16, "ranksPerNode":8, "gpusPerRank":1, "size":1024, "type":"float", "redop":"sum", "inPlace":0, "time":30.000000, "algBw":0.034133, "busBw":0.059733, "wrong":"2"}
]
`
	if got := string(FormatRCCL(RCCLJSON, mpi, rcclRows())); got != wantJSON {
		t.Errorf("JSON:\n%s\nwant\n%s", got, wantJSON)
	}
	if got := mpi.RCCLCSVHeader(); got != "numCycle,collective,nodes,ranks,ranksPerNode,gpusPerRank,size,type,redop,inplace,time,algbw,busbw,#wrong" {
		t.Errorf("MPI header %q", got)
	}
	if got := string(FormatRCCL(RCCLJSON, single, nil)); got != "[\n]\n" {
		t.Errorf("empty JSON %q", got)
	}
}

// TestLoadRCCLReporter: both formats and both layouts load back; cycles become rounds, "N/A" no count.
func TestLoadRCCLReporter(t *testing.T) {
	dir := t.TempDir()
	for _, format := range []string{RCCLCSV, RCCLJSON} {
		for _, l := range []RCCLLayout{{GPUsPerProcess: 4}, {MPI: true, Nodes: 1, Processes: 2, ProcsPerNode: 2, GPUsPerProcess: 1}} {
			path := filepath.Join(dir, "r."+format)
			if err := os.WriteFile(path, FormatRCCL(format, l, rcclRows()), 0o644); err != nil {
				t.Fatal(err)
			}
			rec, err := Load(path)
			if err != nil {
				t.Fatalf("%s %+v: %v", format, l, err)
			}
			if len(rec.Results) != 1 || rec.Args[0] != "AllReduce" {
				t.Fatalf("%s: %+v", format, rec)
			}
			r := rec.Results[0]
			if r.Size != 1024 || r.Type != "float" || r.Redop != "sum" || len(r.OutOfPlace.Rounds) != 2 ||
				r.OutOfPlace.Rounds[1] != 30 || *r.OutOfPlace.NWrong != 2 || r.InPlace.NWrong != nil ||
				*r.InPlace.Time != 21.95 {
				t.Errorf("%s %+v: row %+v", format, l, r)
			}
			if !l.MPI && rec.Config.NGpus != 4 {
				t.Errorf("%s: gpus %d", format, rec.Config.NGpus)
			}
			os.Remove(path)
		}
	}
}

func TestRCCLMalformed(t *testing.T) {
	for name, c := range map[string]struct{ data, want string }{
		"nosize.json":  {`[{"time":1.0}]`, "entry 1: no size"},
		"badtime.json": {`[{"size":8, "time":"x"}]`, "entry 1: bad number"},
		"broken.json":  {"[\n{\"size\":8,\n", "broken.json"},
		"empty.json":   {"[\n]\n", "no result rows"},
	} {
		_, err := Parse(name, []byte(c.data))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

func TestRCCLNames(t *testing.T) {
	for in, want := range map[string]string{"all_reduce": "AllReduce", "alltoall": "AlltoAll", "reduce_scatter": "ReduceScatter",
		"all_gather": "AllGather", "hypercube": "HyperCube", "alltoallv": "AlltoAllv", "sendrecv": "SendRecv",
		"all_reduce_bias": "AllReduce"} {
		if got := RCCLName(in); got != want {
			t.Errorf("RCCLName(%s) = %s, want %s", in, got, want)
		}
	}
	if RCCLTypeName("f8e4m3") != "fp8_e4m3" || RCCLTypeName("bfloat16") != "bfloat16" {
		t.Error("type names")
	}
}

// TestRCCLFileNamesOurCollective: the gate's like-with-like check reads rccl-tests' collective names as ours,
// so a run saved as -J JSON and as rccl-tests' CSV compare.
func TestRCCLFileNamesOurCollective(t *testing.T) {
	for args, want := range map[string]string{"AllReduce": "all_reduce", "AlltoAllv": "alltoallv",
		"/bin/all_reduce_perf": "all_reduce_perf", "HyperCube": "hypercube"} {
		if got := collectiveName(&Record{Args: []string{args}}); got != want {
			t.Errorf("collectiveName(%s) = %s, want %s", args, got, want)
		}
	}
}
