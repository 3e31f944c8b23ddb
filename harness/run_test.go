package harness

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/results"
)

// small is a quick sweep: 8 B to 64 KiB by 4, two timed iterations.
var small = []string{"-b", "8", "-e", "64K", "-f", "4", "-n", "2", "-w", "1"}

func TestAllCollectivesValidate(t *testing.T) {
	for _, coll := range collectives.All() {
		seed := rand.Uint64()
		r := testRun(t, coll, seedArgs(seed, append(small, threeByTwo(coll)...)...), newFake(seed))
		rows := allRight(t, coll, r, 7)
		for _, f := range rows {
			if want := coll.RedOpName(collectives.Sum); f[3] != want {
				t.Errorf("%s: redop %q, want %q", coll.Name, f[3], want)
			}
		}
		if !strings.Contains(r.stdout, "# Out of bounds values : 0 OK") {
			t.Errorf("%s: trailer\n%s", coll.Name, r.stdout)
		}
	}
}

// TestInPlaceAlltoallUncheckedWhereUndefined: an engine whose library has no in-place alltoall (NCCL) gets
// N/A in that half, as nccl-tests prints; the out-of-place half is still checked.
func TestInPlaceAlltoallUncheckedWhereUndefined(t *testing.T) {
	seed := rand.Uint64()
	e := newFake(seed)
	e.noInPlaceA2A = true
	r := testRun(t, collectives.AllToAll, seedArgs(seed, append(small, "-g", "2")...), e)
	rows := tableRows(r.stdout)
	if r.code != exit.OK || len(rows) != 7 {
		t.Fatalf("exit %d, %d rows\n%s", r.code, len(rows), r.stdout)
	}
	for _, f := range rows {
		if f[8] != "0" || f[12] != "N/A" {
			t.Errorf("row %v: want 0 out of place and N/A in place", f)
		}
	}
}

// TestPlantedWrongElement: one flipped byte on one rank is one wrong element per validated half, exit 7.
func TestPlantedWrongElement(t *testing.T) {
	seed := rand.Uint64()
	e := newFake(seed)
	e.corruptRank = 2
	r := testRun(t, collectives.ReduceScatter, seedArgs(seed, "-b", "1K", "-e", "4K", "-f", "2", "-g", "4", "-n", "1"), e)
	if r.code != exit.TestFailed {
		t.Fatalf("exit %d\n%s", r.code, r.stdout)
	}
	for _, f := range tableRows(r.stdout) {
		if f[8] != "1" || f[12] != "1" {
			t.Errorf("row %v: want one wrong element per half", f)
		}
	}
	if !strings.Contains(r.stdout, "# Out of bounds values : 6 FAILED") {
		t.Errorf("trailer:\n%s", r.stdout)
	}
}

// TestNonRootBuffersChecked: reduce and gather must leave the receive views of the ranks other than the root
// as they were, as nccl-tests checks: one byte written into rank 1's is one wrong element per half.
func TestNonRootBuffersChecked(t *testing.T) {
	for _, coll := range []*collectives.Collective{collectives.Reduce, collectives.Gather} {
		seed := rand.Uint64()
		e := newFake(seed)
		e.onLaunch = func(c *collectives.Call) {
			if out, err := span(c.Recv[1], c.Counts[1].Recv*int64(c.DType.Size())); err == nil && len(out) > 0 {
				out[len(out)-1] ^= 0x10
			}
		}
		r := testRun(t, coll, seedArgs(seed, "-b", "1K", "-e", "1K", "-g", "3", "-r", "0", "-n", "1"), e)
		rows := tableRows(r.stdout)
		if r.code != exit.TestFailed || len(rows) != 1 || rows[0][8] != "1" || rows[0][12] != "1" {
			t.Errorf("%s: exit %d\n%s", coll.Name, r.code, r.stdout)
		}
	}
}

// TestUncheckedIsNA: -c 0 prints N/A and writes null.
func TestUncheckedIsNA(t *testing.T) {
	file := filepath.Join(t.TempDir(), "r.json")
	r := testRun(t, collectives.AllGather, append(small, "-c", "0", "-J", file), newFake(1))
	if r.code != exit.OK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, f := range tableRows(r.stdout) {
		if f[8] != "N/A" || f[12] != "N/A" {
			t.Errorf("row %v", f)
		}
	}
	rec := loadRecord(t, file)
	if rec.Results[0].OutOfPlace.NWrong != nil {
		t.Errorf("nwrong = %v, want null", *rec.Results[0].OutOfPlace.NWrong)
	}
}

// TestCSVOutput: --csv (-Z csv -X) writes the run's rows in rccl-tests' CSV, which loads back with the same sizes, times and
// #wrong as the JSON of the same run; an existing file is replaced, as rccl-tests truncates it.
func TestCSVOutput(t *testing.T) {
	dir := t.TempDir()
	csv, js := filepath.Join(dir, "r.csv"), filepath.Join(dir, "r.json")
	if err := os.WriteFile(csv, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	seed := rand.Uint64()
	r := testRun(t, collectives.AllReduce, seedArgs(seed, append(small, "-g", "2", "--csv", csv, "-J", js)...), newFake(seed))
	if r.code != exit.OK || !strings.Contains(r.stdout, "# Writing rccl-tests csv output to "+csv+"\n") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	fromCSV, err := results.Load(csv)
	if err != nil {
		t.Fatal(err)
	}
	fromJSON := loadRecord(t, js)
	if len(fromCSV.Results) != len(fromJSON.Results) || len(fromCSV.Results) != 7 {
		t.Fatalf("%d CSV rows, %d JSON rows", len(fromCSV.Results), len(fromJSON.Results))
	}
	for i, c := range fromCSV.Results {
		j := fromJSON.Results[i]
		ct, _ := c.OutOfPlace.Micros()
		jt, _ := j.OutOfPlace.Micros()
		if c.Size != j.Size || c.Type != j.Type || math.Abs(ct-jt) > 0.01*jt || c.OutOfPlace.NWrong == nil ||
			*c.OutOfPlace.NWrong != 0 {
			t.Errorf("row %d: CSV %+v, JSON %+v", i, c, j)
		}
	}
}

// TestTimeout: a rank stuck past -T ends the run with one line naming it and the size (here the warmup at the
// largest size, the first collective) and exit code 4.
func TestTimeout(t *testing.T) {
	e := newFake(1)
	e.timeoutRank = 1
	start := time.Now()
	r := testRun(t, collectives.AllReduce, append(small, "-t", "2", "-T", "1"), e)
	if r.code != exit.Timeout {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	want := "timeout: rank 1 all_reduce size 32768 phase fake step 1 after 1s\n" // the warmup at -e
	if r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

// TestInterrupt: after a signal the current half finishes, the trailer prints, the JSON says incomplete, exit 130.
func TestInterrupt(t *testing.T) {
	file := filepath.Join(t.TempDir(), "r.json")
	var halves atomic.Int32
	stop := func() bool { return halves.Add(1) >= 3 }
	r := runWith(t, collectives.AllReduce, append(small, "-J", file), testSource(newFake(1)),
		func(a *app) { a.interrupted = stop })
	if r.code != exit.Interrupted {
		t.Fatalf("exit %d\n%s", r.code, r.stdout)
	}
	if n := len(tableRows(r.stdout)); n != 2 {
		t.Errorf("%d rows, want 2", n)
	}
	if !strings.Contains(r.stdout, "# Collective test concluded: all_reduce_perf") {
		t.Errorf("no trailer:\n%s", r.stdout)
	}
	rec := loadRecord(t, file)
	if !rec.Incomplete || len(rec.Results) != 2 || rec.Results[1].InPlace.Time != nil {
		t.Errorf("record: incomplete %v, %d results", rec.Incomplete, len(rec.Results))
	}
}

// TestMemoryLimit: with little free memory -e shrinks and the header says so, as in nccl-tests.
func TestMemoryLimit(t *testing.T) {
	e := newFake(1)
	e.free = 64 << 20
	r := testRun(t, collectives.AllReduce, []string{"-b", "1M", "-e", "1G", "-f", "4", "-n", "1", "-c", "0"}, e)
	m := regexp.MustCompile(`(?m)^#\n# Reducing maxBytes to (\d+) due to memory limitation$`).FindStringSubmatch(r.stdout)
	if r.code != exit.OK || m == nil {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	limit, _ := strconv.ParseInt(m[1], 10, 64)
	rows := tableRows(r.stdout)
	last, _ := strconv.ParseInt(rows[len(rows)-1][0], 10, 64)
	if limit >= 32<<20 || last > limit || len(rows) != 3 {
		t.Errorf("limit %d, last row %d, %d rows", limit, last, len(rows))
	}
}

// TestAllocFailure: one line, exit 2, nothing measured.
func TestAllocFailure(t *testing.T) {
	e := newFake(1)
	e.failAlloc = true
	r := testRun(t, collectives.AllReduce, append(small, "-g", "2"), e)
	if r.code != exit.Runtime || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "out of fake memory") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	if len(tableRows(r.stdout)) != 0 {
		t.Errorf("rows printed:\n%s", r.stdout)
	}
}

// TestUnsupportedTypeSkipped: -d all on an engine without half runs every other type.
func TestUnsupportedTypeSkipped(t *testing.T) {
	seed := rand.Uint64()
	e := newFake(seed)
	e.unsupported = map[collectives.DType]bool{collectives.Half: true}
	r := testRun(t, collectives.AllReduce, seedArgs(seed, "-b", "64", "-e", "64", "-d", "all", "-n", "1", "-g", "2"), e)
	if r.code != exit.OK || !strings.Contains(r.stdout, "# half sum skipped: not supported by engine fake") ||
		len(tableRows(r.stdout)) != len(collectives.AllDTypes())-1 {
		t.Errorf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestAllTypesAndOps: -d all -o all nests type, then operation, like nccl-tests (FP8 with every operation).
func TestAllTypesAndOps(t *testing.T) {
	seed := rand.Uint64()
	r := testRun(t, collectives.AllReduce, seedArgs(seed, "-b", "32", "-e", "32", "-d", "all", "-o", "all", "-n", "1", "-g", "3"), newFake(seed))
	rows := tableRows(r.stdout)
	if r.code != exit.OK || len(rows) != len(collectives.AllDTypes())*len(collectives.AllOps()) {
		t.Fatalf("exit %d, %d rows\n%s", r.code, len(rows), r.stderr)
	}
	if rows[0][2] != "int8" || rows[0][3] != "sum" || rows[1][3] != "prod" || rows[6][2] != "uint8" {
		t.Errorf("order: %v %v %v", rows[0], rows[1], rows[6])
	}
}

// TestSeveralEngines: each engine's table in turn, then time ratios; JSON rows name their engine.
func TestSeveralEngines(t *testing.T) {
	seed := rand.Uint64()
	a, b := newFake(seed), newFake(seed)
	b.name = "fake2"
	file := filepath.Join(t.TempDir(), "r.json")
	r := testRun(t, collectives.AllToAll, seedArgs(seed, append(small, "--engine", "fake,fake2", "-g", "2", "-J", file)...), a, b)
	if r.code != exit.OK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"# Engine: fake\n# rcclx-tests version", "# Engine: fake2\n# rcclx-tests version",
		"# Time ratio fake2 / fake:"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	if n := len(regexp.MustCompile(`(?m)^#\s+\d+\s+float\s+none\s+[0-9.]+\s+[0-9.]+$`).FindAllString(r.stdout, -1)); n != 7 {
		t.Errorf("%d ratio lines, want 7", n)
	}
	rec := loadRecord(t, file)
	if len(rec.Results) != 14 || rec.Results[0].Engine != "fake" || rec.Results[13].Engine != "fake2" || rec.Engine != "fake,fake2" {
		t.Errorf("JSON: %d results, engine %q", len(rec.Results), rec.Engine)
	}
}

// TestAB: interleaved rounds of two communicators, a table per size, every round in JSON.
func TestAB(t *testing.T) {
	seed := rand.Uint64()
	file := filepath.Join(t.TempDir(), "r.json")
	r := testRun(t, collectives.AllReduce, seedArgs(seed, "-b", "1K", "-e", "4K", "-f", "2", "-n", "2", "-g", "2",
		"--ab", "FAKE_ALGO=ring,tree", "--ab-rounds", "3", "-J", file), newFake(seed))
	if r.code != exit.OK {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"# A/B: A is FAKE_ALGO=ring, B is FAKE_ALGO=tree, 3 interleaved rounds per size",
		"# Algorithm: ring", "# B Algorithm: tree", "FAKE_ALGO=ring us", "speedup", "verdict",
		"# float sum, size 4096: #wrong FAKE_ALGO=ring 0, FAKE_ALGO=tree 0", "# Avg bus bandwidth"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	rec := loadRecord(t, file)
	if rec.AB == nil || len(rec.AB.Rows) != 3 || len(rec.AB.Rows[2].TimesB) != 3 || rec.AB.Arms[1] != "FAKE_ALGO=tree" {
		t.Fatalf("ab key: %+v", rec.AB)
	}
	if len(rec.Results) != 6 || rec.Results[3].ExperimentName != "FAKE_ALGO=tree" ||
		len(rec.Results[3].OutOfPlace.Rounds) != 3 || rec.Results[3].Algorithm != "tree" {
		t.Errorf("results: %+v", rec.Results)
	}
}

// TestPerIterationColumns: -I adds four columns per half, with device events or the host clock.
func TestPerIterationColumns(t *testing.T) {
	for _, events := range []bool{false, true} {
		e := newFake(1)
		e.events = events
		file := filepath.Join(t.TempDir(), "r.json")
		r := testRun(t, collectives.AllReduce, append(small, "-I", "1", "-K", "1", "-c", "0", "-J", file), e)
		rows := tableRows(r.stdout)
		if r.code != exit.OK || len(rows) == 0 || len(rows[0]) != 21 {
			t.Fatalf("events %v: exit %d\n%s", events, r.code, r.stdout)
		}
		clock := map[bool]string{false: "host clock", true: "CUDA event timing"}[events]
		if !strings.Contains(r.stdout, "# Per-Iteration Report: "+clock) || !strings.Contains(r.stdout, "skips first 1") {
			t.Errorf("header:\n%s", r.stdout)
		}
		p := loadRecord(t, file).Results[0].OutOfPlacePerIter
		if p == nil || len(p.TimesUs) != 2 || p.MaxUs < p.MinUs || p.SkippedIterations != 1 {
			t.Errorf("per-iteration JSON %+v", p)
		}
	}
}

// TestGraphs: -G replays a captured graph where the engine can, and is noted as ignored where it cannot.
func TestGraphs(t *testing.T) {
	e := newFake(1)
	e.graphs = true
	r := testRun(t, collectives.AllReduce, append(small, "-G", "3", "-c", "0"), e)
	if r.code != exit.OK || !strings.Contains(r.stdout, "graph: 3 ") {
		t.Fatalf("exit %d\n%s", r.code, r.stdout)
	}
	// 1 warmup at the largest and the smallest size, then 7 sizes x 2 halves x (1 warmup + 3 replays of the
	// 2 captured launches)
	if e.launches != 2+7*2*7 {
		t.Errorf("%d launches", e.launches)
	}
	r = testRun(t, collectives.AllReduce, append(small, "-G", "3", "-c", "0"), newFake(1))
	if !strings.Contains(r.stdout, "graph: 0 ") || !strings.Contains(r.stdout, "# -G 3 ignored: engine fake cannot capture graphs") {
		t.Errorf("no graph note:\n%s", r.stdout)
	}
}

// TestHalvesAndExtras: -O, -S, -C, --algo-column and the algorithm summary.
func TestHalvesAndExtras(t *testing.T) {
	seed := rand.Uint64()
	e := newFake(seed)
	e.splitAt = 1024
	r := testRun(t, collectives.AllReduce, seedArgs(seed, append(small, "-O", "1", "-S", "1", "-C", "1", "--algo-column")...), e)
	if r.code != exit.OK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"# Algorithms: 8-512 small, 2048-32768 large", "  cputime  ", " timestamp  algorithm"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	rows := tableRows(r.stdout)
	if last := rows[len(rows)-1]; len(last) != 12 || last[11] != "large" || rows[0][11] != "small" {
		t.Errorf("rows %v", rows)
	}
	// -O 0, as rccl-tests prints it: the in-place half's header and values only.
	r = testRun(t, collectives.AllReduce, seedArgs(seed, append(small, "-O", "0")...), newFake(seed))
	if !strings.Contains(r.stdout, "#"+strings.Repeat(" ", 62)+"in-place          \n") || strings.Contains(r.stdout, "out-of-place") {
		t.Errorf("in-place only header:\n%s", r.stdout)
	}
	for _, line := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(line, "#") && (len(f) != 9 || len(line) != 85) {
			t.Errorf("in-place only row %q", line)
		}
	}
}

// TestBlockingModes: -z modes run and say so in the header.
func TestBlockingModes(t *testing.T) {
	for mode, line := range map[int]string{1: "wait and barrier after each inner iteration",
		2: "wait after each inner iteration (-m), no barrier", 3: "time excludes barrier"} {
		seed := rand.Uint64()
		r := testRun(t, collectives.AllReduce, seedArgs(seed, append(small, "-z", strconv.Itoa(mode), "-t", "2", "-m", "2")...), newFake(seed))
		if r.code != exit.OK || !strings.Contains(r.stdout, line) {
			t.Errorf("-z %d: exit %d\n%s", mode, r.code, r.stdout)
		}
	}
}

// TestLoopLauncher: a LoopLauncher gets the warmups (before the sweep and before each half, not aggregated)
// and the whole timed loop at once; -I and
// -z 3 hand it the timed loop one iteration at a time, -z 1 and 2 operation by operation (they wait after
// each). The validation run goes operation by operation.
func TestLoopLauncher(t *testing.T) {
	each := [][3]int{{0, 1, 3}, {3, 1, 3}, {6, 1, 3}, {9, 1, 3}}
	for _, tc := range []struct {
		args []string
		want [][3]int // per half
	}{
		{nil, [][3]int{{0, 4, 3}}},
		{[]string{"-I", "1"}, each},
		{[]string{"-z", "3"}, each},
		{[]string{"-z", "1"}, nil},
		{[]string{"-z", "2"}, nil},
	} {
		seed := rand.Uint64()
		e := newFake(seed)
		e.loops = true
		args := append([]string{"-b", "1K", "-e", "1K", "-n", "4", "-m", "3", "-w", "2", "-g", "2"}, tc.args...)
		r := testRun(t, collectives.AllReduce, seedArgs(seed, args...), e)
		half := append([][3]int{{0, 2, 1}}, tc.want...)
		want := append(append([][3]int{{0, 2, 1}, {0, 2, 1}}, half...), half...) // -e, -b; out of place, in place
		if r.code != exit.OK || fmt.Sprint(e.loopArgs) != fmt.Sprint(want) || e.launches != 2*2+2*(2+12+1) {
			t.Errorf("%v: exit %d, loops %v (want %v), %d launches\n%s", tc.args, r.code, e.loopArgs, want, e.launches, r.stdout)
		}
	}
}

// A Paced group (the host engine) has each timed iteration of 16 MiB and up awaited before the next; any other
// group has its timed loop awaited once, so that a device engine's iterations follow one another without a host
// round trip between them.
func TestPacedIterations(t *testing.T) {
	for _, tc := range []struct {
		paced bool
		size  string
		want  int // Waits: 2 outside the timed halves, then per half the warmup's, each paced iteration's and the loop's
	}{
		{true, "16M", 2 + 2*(1+5+1)}, {true, "8M", 2 + 2*(1+1)}, {false, "16M", 2 + 2*(1+1)},
	} {
		seed := rand.Uint64()
		e := newFake(seed)
		e.paced = tc.paced
		r := testRun(t, collectives.AllReduce, seedArgs(seed, "-b", tc.size, "-e", tc.size, "-n", "5", "-w", "1", "-c", "0"), e)
		if waits := strings.Count(string(e.trace), "W"); r.code != exit.OK || waits != tc.want {
			t.Errorf("paced %v at %s: exit %d, %d waits, want %d\n%s%s", tc.paced, tc.size, r.code, waits, tc.want, r.stdout, r.stderr)
		}
	}
}

// A Waker group is woken once per timed half: after the warmup's wait, before the first timed launch.
func TestWakeBeforeClock(t *testing.T) {
	seed := rand.Uint64()
	e := newFake(seed)
	e.wakers = true
	r := testRun(t, collectives.AllReduce, seedArgs(seed, "-b", "1K", "-e", "1K", "-w", "2", "-n", "4", "-c", "0"), e)
	trace := string(e.trace)
	if r.code != exit.OK || strings.Count(trace, "K") != 2 || strings.Count(trace, "LLWKLLLLW") != 2 {
		t.Errorf("exit %d, trace %s: want each half as LLWKLLLLW\n%s", r.code, trace, r.stderr)
	}
}

// TestJSONHasAnchorKeys walks nccl-tests' JSON and ours as maps: every key of the anchor is in ours.
func TestJSONHasAnchorKeys(t *testing.T) {
	seed := rand.Uint64()
	file := filepath.Join(t.TempDir(), "out.json")
	r := testRun(t, collectives.AllReduce, seedArgs(seed, append(small, "-f", "2", "-g", "2", "-J", file)...), newFake(seed))
	if r.code != exit.OK || !strings.HasPrefix(r.stdout, "# Writing JSON output to "+file+"\n") {
		t.Fatalf("exit %d\n%s", r.code, r.stdout)
	}
	var ours, theirs map[string]any
	readJSON(t, file, &ours)
	readJSON(t, "testdata/anchors/all_reduce.json", &theirs)
	walkKeys(t, "", theirs, ours)
	rec := loadRecord(t, file)
	res := rec.Results[0]
	if rec.Engine != "fake" || res.Algorithm != "ring" || res.OutOfPlace.MaxRelErr == nil || res.Root != "    -1" ||
		rec.Config.Devices[1].DeviceHex != "0000:00:01" || rec.Incomplete {
		t.Errorf("record %+v", rec)
	}
	env := strings.Join(rec.Env, " ")
	if !strings.Contains(env, "RCCLX_TESTS_SEED="+strconv.FormatUint(seed, 10)) || !strings.Contains(env, "NCCL_PROTO=Simple") ||
		strings.Contains(env, "HOME") {
		t.Errorf("env %v", rec.Env)
	}
	// A second run never overwrites the first.
	r = testRun(t, collectives.AllReduce, seedArgs(seed, append(small, "-J", file)...), newFake(seed))
	if _, err := os.Stat(file + ".0"); err != nil || !strings.Contains(r.stdout, "to "+file+".0") {
		t.Errorf("second file: %v\n%s", err, r.stdout)
	}
}

func walkKeys(t *testing.T, path string, want, got any) {
	t.Helper()
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			t.Errorf("%s: not an object in ours", path)
			return
		}
		for k, v := range w {
			if _, ok := g[k]; !ok {
				t.Errorf("%s.%s missing", path, k)
				continue
			}
			walkKeys(t, path+"."+k, v, g[k])
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) == 0 {
			t.Errorf("%s: not a non-empty list in ours", path)
			return
		}
		if len(w) > 0 {
			walkKeys(t, path+"[0]", w[0], g[0])
		}
	}
}

func readJSON(t *testing.T, file string, v any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}

func loadRecord(t *testing.T, file string) *results.Record {
	t.Helper()
	var rec results.Record
	readJSON(t, file, &rec)
	return &rec
}

func testSource(engs ...collectives.Engine) engineSource {
	var src engineSource
	src.names = func() []string { return []string{"auto", engs[0].Name()} }
	src.open = func(string) (collectives.Engine, error) { return engs[0], nil }
	return src
}

// TestOurTextParses: our rows line up with the anchors' columns and results' loader reads them back.
func TestOurTextParses(t *testing.T) {
	seed := rand.Uint64()
	r := testRun(t, collectives.AllReduce, seedArgs(seed, append(small, "-g", "2")...), newFake(seed))
	anchorLine := ""
	for _, a := range loadAnchors(t) {
		for _, l := range a.lines {
			if !strings.HasPrefix(l, "#") && len(strings.Fields(l)) == 13 {
				anchorLine = l
			}
		}
	}
	ends := fieldEnds(anchorLine)
	for _, l := range strings.Split(r.stdout, "\n") {
		if len(strings.Fields(l)) == 13 && !strings.HasPrefix(l, "#") {
			if got := fieldEnds(l); !equalInts(got, ends) {
				t.Errorf("columns of %q end at %v, anchor's at %v", l, got, ends)
			}
		}
	}
	file := filepath.Join(t.TempDir(), "out.txt")
	if err := os.WriteFile(file, []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := results.Load(file)
	if err != nil || len(rec.Results) != 7 || rec.Results[6].Size != 32768 {
		t.Fatalf("results.Load: %v %+v", err, rec)
	}
}

func fieldEnds(line string) []int {
	var ends []int
	for i := range line {
		if line[i] != ' ' && (i+1 == len(line) || line[i+1] == ' ') {
			ends = append(ends, i)
		}
	}
	return ends
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestMinimumBandwidth: NCCL_TESTS_MIN_BW fails a run whose average bus bandwidth is under 90% of it.
func TestMinimumBandwidth(t *testing.T) {
	for bw, want := range map[string]int{"1e12": exit.TestFailed, "0": exit.OK} {
		r := runWith(t, collectives.AllReduce, append(small, "-g", "2", "-c", "0"), testSource(newFake(1)), func(a *app) {
			a.getenv = func(k string) string { return map[string]string{"NCCL_TESTS_MIN_BW": bw}[k] }
		})
		verdict := map[int]string{exit.OK: " OK\n", exit.TestFailed: " FAILED\n"}[want]
		if r.code != want || !regexp.MustCompile(`# Avg bus bandwidth    : \S+`+verdict).MatchString(r.stdout) {
			t.Errorf("NCCL_TESTS_MIN_BW=%s: exit %d\n%s", bw, r.code, r.stdout)
		}
	}
}

// allRight checks a run of coll that must pass: exit 0, n rows, no wrong element (in-place alltoall is not
// validated, as in nccl-tests). It returns the rows.
// threeByTwo is -t 2 -g 3, or -t 2 -g 2 for hypercube (a power of two).
func threeByTwo(coll *collectives.Collective) []string {
	if coll == collectives.HyperCube {
		return []string{"-t", "2", "-g", "2"}
	}
	return []string{"-t", "2", "-g", "3"}
}

func allRight(t *testing.T, coll *collectives.Collective, r run, n int) [][]string {
	t.Helper()
	rows := tableRows(r.stdout)
	if r.code != exit.OK || len(rows) != n {
		t.Fatalf("%s: exit %d, %d rows, want %d\n%s%s", coll.Name, r.code, len(rows), n, r.stdout, r.stderr)
	}
	inPlace := "0"
	if !coll.InPlaceChecked() {
		inPlace = "N/A"
	}
	for _, f := range rows {
		if f[8] != "0" || f[12] != inPlace {
			t.Errorf("%s: row %v has wrong elements", coll.Name, f)
		}
	}
	return rows
}

// TestSeedFromEnvironment: the seed recorded in JSON replays through the environment.
func TestSeedFromEnvironment(t *testing.T) {
	r := runWith(t, collectives.AllReduce, append(small, "-g", "2"), testSource(newFake(77)), func(a *app) {
		a.getenv = func(k string) string { return map[string]string{plan.SeedEnv: "77"}[k] }
	})
	allRight(t, collectives.AllReduce, r, 7)
	if !strings.Contains(r.stdout, "# Seed: 77\n") {
		t.Errorf("no seed line:\n%s", r.stdout)
	}
}

// TestEnginePreparedBeforeMeasuring: a Preparer engine is asked once, before any launch, for every type and
// operation of the sweep (one operation for a collective that does not reduce); its line goes to stderr, and
// its failure ends the run before the table with the runtime exit code.
func TestEnginePreparedBeforeMeasuring(t *testing.T) {
	seed := rand.Uint64()
	e := newFake(seed)
	e.prepare, e.prepareNote = true, "compiling 12 kernels for sm_90, first run only"
	r := testRun(t, collectives.AllReduce, seedArgs(seed, "-b", "8", "-e", "64", "-f", "8", "-n", "1", "-w", "1",
		"-d", "all", "-o", "max"), e)
	if r.code != exit.OK || len(e.prepared) != 1 {
		t.Fatalf("exit %d, %d Prepare calls\n%s%s", r.code, len(e.prepared), r.stdout, r.stderr)
	}
	p := e.prepared[0]
	if p.coll != collectives.AllReduce || p.launches != 0 || fmt.Sprint(p.dtypes) != fmt.Sprint(collectives.AllDTypes()) ||
		fmt.Sprint(p.ops) != fmt.Sprint([]collectives.Op{collectives.Max}) {
		t.Errorf("Prepare(%s, %v, %v) after %d launches; want all_reduce, every type, [max], before any",
			p.coll.Name, p.dtypes, p.ops, p.launches)
	}
	if r.stderr != "all_reduce_perf: compiling 12 kernels for sm_90, first run only\n" {
		t.Errorf("stderr %q", r.stderr)
	}

	e = newFake(seed)
	e.prepare = true
	r = testRun(t, collectives.AllGather, seedArgs(seed, "-b", "8", "-e", "64", "-n", "1", "-o", "all"), e)
	if r.code != exit.OK || r.stderr != "" || len(e.prepared) != 1 || len(e.prepared[0].ops) != 1 {
		t.Errorf("all_gather: exit %d, stderr %q, Prepare calls %+v; want one with one operation and no line",
			r.code, r.stderr, e.prepared)
	}

	e = newFake(seed)
	e.prepare, e.prepareErr = true, &collectives.RuntimeError{Err: fmt.Errorf("compiling k.cu for sm_90: bad")}
	r = testRun(t, collectives.AllReduce, seedArgs(seed, "-b", "8", "-e", "64", "-n", "1"), e)
	if r.code != exit.Runtime || len(tableRows(r.stdout)) != 0 || e.launches != 0 || !strings.Contains(r.stderr, "k.cu") {
		t.Errorf("failing Prepare: exit %d, %d launches, stderr %q\n%s", r.code, e.launches, r.stderr, r.stdout)
	}
}

// TestJSONRMSRelErr: one planted wrong element in a checked half gives max_rel_err its relative error and
// rms_rel_err that error over the square root of the elements checked (every rank's output); exact halves 0.
func TestJSONRMSRelErr(t *testing.T) {
	seed := rand.Uint64()
	file := filepath.Join(t.TempDir(), "out.json")
	e := newFake(seed)
	e.corruptRank = 1
	r := testRun(t, collectives.AllGather, seedArgs(seed, "-b", "1K", "-e", "16K", "-f", "4", "-g", "3", "-n", "1",
		"-J", file), e)
	if r.code != exit.TestFailed {
		t.Fatalf("exit %d\n%s", r.code, r.stdout)
	}
	rec := loadRecord(t, file)
	if len(rec.Results) != 3 {
		t.Fatalf("%d results", len(rec.Results))
	}
	for _, res := range rec.Results {
		for _, h := range []results.Half{res.OutOfPlace, res.InPlace} {
			if h.MaxRelErr == nil || h.RMSRelErr == nil || *h.MaxRelErr <= 0 {
				t.Fatalf("size %d: max %v rms %v", res.Size, h.MaxRelErr, h.RMSRelErr)
			}
			n := float64(3 * res.Size / 4)
			if got, want := *h.RMSRelErr, *h.MaxRelErr/math.Sqrt(n); math.Abs(got-want) > 1e-9*want {
				t.Errorf("size %d: rms_rel_err %g, want %g (max %g over %g elements)", res.Size, got, want, *h.MaxRelErr, n)
			}
		}
	}
	exact := filepath.Join(t.TempDir(), "exact.json")
	r = testRun(t, collectives.AllGather, seedArgs(seed, "-b", "1K", "-e", "1K", "-n", "1", "-J", exact), newFake(seed))
	if h := loadRecord(t, exact).Results[0].OutOfPlace; r.code != exit.OK || h.RMSRelErr == nil || *h.RMSRelErr != 0 {
		t.Errorf("exact run: exit %d, rms %v", r.code, h.RMSRelErr)
	}
}
