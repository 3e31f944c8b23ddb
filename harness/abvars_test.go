package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/engines"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/results"
)

// realEngines is the binaries' engine source.
var realEngines = engineSource{names: engines.Names, open: engines.New, readers: engines.Readers}

// Our engines know every variable they read: a name they do not read is one line naming the closest known
// one, exit 1, before anything runs or is written.
func TestUnknownVariableNamesClosest(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--engine", "host", "--ab", "RCCL_DDA_ENABLED=0,1"},
			`invalid value "RCCL_DDA_ENABLED=0,1" for --ab: RCCL_DDA_ENABLED is not a variable the host engine reads: did you mean RCCL_DDA_ENABLE?`},
		{[]string{"--ab", "RCCL_ENABLE_DDA_ALLREDUCE=0,1"}, "RCCL_ENABLE_DDA_ALLREDUCE is not a variable the " +
			autoEngine(t) + " engine reads: did you mean RCCL_ENABLE_DDA_ALL_REDUCE?"},
		{[]string{"--engine", "host,gpu", "-E", "RCCL_DDA_NRANK=8"},
			`invalid value "RCCL_DDA_NRANK=8" for -E/--env: RCCL_DDA_NRANK is not a variable the host or gpu engine reads: did you mean RCCL_DDA_NRANKS?`},
		{[]string{"--engine", "host", "--ab", "RCCLX_TESTS_GPU_CE_BYTES=off,8M"}, "read by the gpu engine, not host"},
		{[]string{"--engine", "host", "--ab", "RCCL_DDA_ENABLE=0,yes"}, `RCCL_DDA_ENABLE="yes": want 0 or 1`},
		{[]string{"--engine", "gpu", "-E", "RCCL_DDA_NRANKS=0"}, "RCCL_DDA_NRANKS"},
		{[]string{"--engine", "host", "-E", "RCCLX_TESTS_DELAY_US=100"}, "read from the process environment"},
	} {
		dir := t.TempDir()
		r := runWith(t, collectives.AllReduce, append(c.args, "-J", filepath.Join(dir, "x.json")), realEngines, nil)
		if r.code != exit.Usage || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", c.args, r.code, r.stdout, r.stderr)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%v wrote %v", c.args, entries)
		}
	}
	// Names our engines read, and any name where a library reads variables of its own, parse.
	a := &app{coll: collectives.AllReduce, engines: realEngines}
	for _, args := range [][]string{
		{"--engine", "host", "--ab", "RCCL_ENABLE_DDA_ALL_REDUCE=0,1"},
		{"--engine", "host", "--ab", "RCCLX_TESTS_DELAY_US=0,2000"},
		{"--engine", "gpu", "-E", "RCCLX_TESTS_GPU_CE_BYTES=off"},
		{"--engine", "host,gpu", "-E", "RCCLX_TESTS_GPU_CE_BYTES=off"},
		{"--engine", "vendor,host", "-E", "NCCL_ALGO=Ring"},
		{"--engine", "host", "-E", "NCCL_TESTS_ALLTOALLV_SPREAD=0"}, // the harness reads it with -E over the environment
	} {
		if _, _, err := a.parse(args); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// autoEngine is the engine --engine auto opens on this machine.
func autoEngine(t *testing.T) string {
	t.Helper()
	e, err := engines.New(engines.Auto)
	if err != nil {
		t.Fatal(err)
	}
	return e.Name()
}

// A variable nothing in the run reads is refused: not read by the engine auto picks (as the run will), or
// by the binary's collective. One read that changes nothing under the run's other settings is a "#" warning.
func TestABVariableNothingReads(t *testing.T) {
	type refusal struct {
		coll *collectives.Collective
		args []string
		want string
	}
	refused := []refusal{
		{collectives.AllReduce, []string{"--ab", "NCCL_TESTS_ALLTOALLV_SPREAD=0.5,1"},
			"NCCL_TESTS_ALLTOALLV_SPREAD is not read by all_reduce: it changes only alltoallv"},
		{collectives.AllReduce, []string{"--engine", "vendor", "--ab", "NCCL_TESTS_ALLTOALLV_SPREAD=0.5,1"},
			"NCCL_TESTS_ALLTOALLV_SPREAD is not read by all_reduce"},
		{collectives.AllReduce, []string{"--engine", "vendor", "--ab", "RCCL_ENABLE_DDA_ALL_GATHER=0,1"},
			"RCCL_ENABLE_DDA_ALL_GATHER is not read by all_reduce: it changes only all_gather"},
		{collectives.Broadcast, []string{"--ab", "RCCL_DDA_ENABLE=0,1"},
			"RCCL_DDA_ENABLE is not read by broadcast: it changes only all_reduce, all_gather, alltoall, reduce_scatter"},
		{collectives.AllReduce, []string{"--ab", "RCCL_ENABLE_DDA_ALL_GATHER=0,1"}, "it changes only all_gather"},
	}
	if autoEngine(t) == collectives.EngineHost {
		refused = append(refused,
			refusal{collectives.AllReduce, []string{"--ab", "RCCLX_TESTS_GPU_RING_BLOCKS=1,2"}, "read by the gpu engine, not host"},
			refusal{collectives.AllReduce, []string{"-E", "RCCLX_TESTS_GPU_RING_BLOCKS=4"}, "read by the gpu engine, not host"})
	}
	for _, c := range refused {
		dir := t.TempDir()
		r := runWith(t, c.coll, append(c.args, "-J", filepath.Join(dir, "x.json")), realEngines, nil)
		if r.code != exit.Usage || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s %v: exit %d, stdout %q, stderr %q", c.coll.Name, c.args, r.code, r.stdout, r.stderr)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%v wrote %v", c.args, entries)
		}
	}
	a := &app{coll: collectives.AllToAllV, engines: realEngines}
	if _, _, err := a.parse([]string{"--ab", "NCCL_TESTS_ALLTOALLV_SPREAD=0.5,1"}); err != nil {
		t.Errorf("alltoallv's own variable: %v", err)
	}
	a.coll = collectives.AllReduce
	for _, c := range []struct {
		args     []string
		noEffect bool
	}{
		{[]string{"--ab", "RCCLX_TESTS_LP_MODE=rcclx,scaled"}, true},
		{[]string{"--lp", "--ab", "RCCLX_TESTS_LP_MODE=rcclx,scaled"}, false},
		{[]string{"-E", "RCCL_ENABLE_DDA_ALL_REDUCE=1", "--ab", "RCCL_DDA_ENABLE=0,1"}, true},
		{[]string{"--ab", "RCCL_DDA_ENABLE=0,1"}, false},
		// No call of the run can take DDA: a type or operation it does not take, a rank count it does not run at.
		{[]string{"-d", "int32", "--ab", "RCCL_DDA_ENABLE=0,1"}, true},
		{[]string{"-o", "max", "--ab", "RCCL_DDA_ENABLE=0,1"}, true},
		{[]string{"-d", "all", "-o", "all", "--ab", "RCCL_DDA_ENABLE=0,1"}, false},
		{[]string{"-g", "4", "-E", "RCCL_DDA_NRANKS=8", "--ab", "RCCL_DDA_ENABLE=0,1"}, true},
		{[]string{"-g", "8", "-E", "RCCL_DDA_NRANKS=8", "--ab", "RCCL_DDA_ENABLE=0,1"}, false},
	} {
		o, _, err := a.parse(c.args)
		if err != nil || o.ABVar.NoEffect != c.noEffect || (abVariableNote(o.ABVar, o.ABKey, "all_reduce") != "") != c.noEffect {
			t.Errorf("%v: %+v, %v", c.args, o.ABVar, err)
		}
	}
	r := hostRun(t, collectives.AllReduce, "-b", "8", "-e", "8", "-n", "1", "--ab-rounds", "2", "--ab",
		"RCCLX_TESTS_LP_MODE=rcclx,scaled")
	if want := "# WARNING: with the run's other settings both values of RCCLX_TESTS_LP_MODE give all_reduce the " +
		"same algorithms and settings"; r.code != exit.OK || strings.Count(r.stdout, want) != 1 {
		t.Errorf("exit %d, no %q:\n%s%s", r.code, want, r.stdout, r.stderr)
	}
}

// fakeLibrary writes a file standing for a library: some bytes, and the name given, if any, as a C string.
func fakeLibrary(t *testing.T, name string) string {
	t.Helper()
	data := append([]byte("\x7fELF fake\x00NCCL_DEBUG\x00"), make([]byte, 1<<20)...)
	if name != "" {
		data = append(data, name+"\x00"...)
	}
	path := filepath.Join(t.TempDir(), "libnccl.so.2")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// With the vendor engine, the library file is searched for the --ab variable before anything runs: absent, a
// "#" warning and variable_read false in the JSON; with --ab-strict, one line and exit 1.
func TestABVariableInLibraryFile(t *testing.T) {
	with, without := fakeLibrary(t, "NCCL_MAX_NCHANNELS"), fakeLibrary(t, "")
	a := &app{coll: collectives.AllReduce, engines: realEngines}
	ab := []string{"--engine", "vendor", "--ab", "NCCL_MAX_NCHANNELS=1,32"}

	o, _, err := a.parse(append(ab, "--lib", with, "--ab-strict"))
	if err != nil || !o.ABVar.Known || !o.ABVar.Read || o.ABVar.Library != with || abVariableNote(o.ABVar, o.ABKey, "all_reduce") != "" {
		t.Fatalf("library with the name: %+v, %v", o.ABVar, err)
	}
	o, _, err = a.parse(append(ab, "--lib", without))
	if err != nil || !o.ABVar.Known || o.ABVar.Read {
		t.Fatalf("library without the name: %+v, %v", o.ABVar, err)
	}
	want := "# WARNING: " + without + " does not contain the name NCCL_MAX_NCHANNELS: the library never reads it, " +
		"so both arms will behave the same"
	if n := abVariableNote(o.ABVar, o.ABKey, "all_reduce"); n != want {
		t.Errorf("note %q", n)
	}
	var rep results.ABReport
	recordABVariable(o.ABVar, &rep)
	if rep.VariableRead == nil || *rep.VariableRead || rep.Library != without {
		t.Errorf("JSON: %+v", rep)
	}

	dir := t.TempDir()
	r := runWith(t, collectives.AllReduce, append(ab, "--lib", without, "--ab-strict", "-J", filepath.Join(dir, "x.json")),
		realEngines, nil)
	if r.code != exit.Usage || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 ||
		!strings.Contains(r.stderr, "does not contain the name NCCL_MAX_NCHANNELS") {
		t.Errorf("--ab-strict: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("--ab-strict wrote %v", entries)
	}
	// The suite's own variables are not searched for in the library: the vendor engine reads them itself.
	if o, _, err := a.parse([]string{"--engine", "vendor", "--lib", without, "--ab", "RCCLX_TESTS_DELAY_US=0,100",
		"--ab-strict"}); err != nil || !o.ABVar.Read {
		t.Errorf("suite variable on the vendor engine: %+v %v", o.ABVar, err)
	}
}

// Arms are refused when they mean the same to the variable's reader: for the suite's own variables the parsed
// value (an empty value is the default; a per-collective switch left empty follows its master, which no value
// spells), for a library's only the text, as its parser is unknown.
func TestABArmsThatMeanTheSame(t *testing.T) {
	a := &app{coll: collectives.AllReduce, engines: realEngines}
	for _, ab := range []string{"RCCLX_TESTS_DELAY_US=0,00", "RCCL_DDA_ENABLE=0,", "RCCL_DDA_ENABLE=,false",
		"RCCL_DDA_ENABLE=1,true", "RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES=200K,204800", "RCCLX_TESTS_LP_MODE=,rcclx",
		"RCCL_DDA_NRANKS=8,08"} {
		dir := t.TempDir()
		r := runWith(t, collectives.AllReduce, []string{"--engine", "host", "--ab", ab, "-J", filepath.Join(dir, "x.json")},
			realEngines, nil)
		want := `invalid value "` + ab + `" for --ab: both arms are the same`
		if r.code != exit.Usage || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", ab, r.code, r.stdout, r.stderr)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%s wrote %v", ab, entries)
		}
	}
	lib := fakeLibrary(t, "RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES")
	for _, args := range [][]string{
		{"--engine", "host", "--ab", "RCCL_DDA_ENABLE=,1"},
		{"--engine", "host", "--ab", "RCCL_ENABLE_DDA_ALL_REDUCE=,0"},
		{"--engine", "host", "--ab", "RCCLX_TESTS_SKIP_RANK=,0"},
		// librccl reads plain integers: 200K is 200 there.
		{"--engine", "vendor", "--lib", lib, "--ab", "RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES=200K,204800"},
	} {
		if _, _, err := a.parse(args); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// TestAutoInEngineList: auto beside the engine it picks would run that engine twice.
func TestAutoInEngineList(t *testing.T) {
	a := &app{coll: collectives.AllReduce, engines: realEngines}
	picked := autoEngine(t)
	_, _, err := a.parse([]string{"--engine", "auto," + picked})
	if err == nil || !strings.Contains(err.Error(), "names "+picked+" twice (auto is "+picked+" here)") {
		t.Errorf("--engine auto,%s: %v", picked, err)
	}
	if _, _, err := a.parse([]string{"--engine", "auto"}); err != nil {
		t.Errorf("--engine auto: %v", err)
	}
}

// An engine of an --engine list that cannot run here fails the run before any file is claimed or any engine's
// table is printed, rather than after the tables of the engines before it.
func TestEngineListProbedFirst(t *testing.T) {
	gpu, err := engines.New("gpu")
	if err != nil {
		t.Fatal(err)
	}
	if gpu.(collectives.Prober).Available() == nil {
		t.Skip("a GPU is here: the gpu engine can run")
	}
	file := filepath.Join(t.TempDir(), "r.json")
	r := runWith(t, collectives.AllReduce, []string{"--engine", "host,gpu", "-g", "2", "-b", "8", "-e", "8", "-J", file},
		realEngines, nil)
	if r.code != exit.Runtime || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 ||
		!strings.Contains(r.stderr, "--engine host,gpu: gpu cannot run here: ") {
		t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("%s was written", file)
	}
}
