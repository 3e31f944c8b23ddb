package harness

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/harness/report"
	"github.com/rcclx-tests/rcclx-tests/hostengine"
)

// TestRCCLFileOpenedAsGiven: -X writes the path it is given, as rccl-tests' reporter does: an existing file is
// replaced (no path.0), a named pipe receives the rows, and a run refused after the file was opened leaves an
// existing file as it was.
func TestRCCLFileOpenedAsGiven(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "r.csv")
	if err := os.WriteFile(file, []byte("an older result that is longer than the new one will be\n"+strings.Repeat("x", 4096)), 0o600); err != nil {
		t.Fatal(err)
	}
	seed := rand.Uint64()
	r := testRun(t, collectives.AllReduce, seedArgs(seed, "-b", "64", "-e", "64", "-n", "1", "-Z", "csv", "-X", file), newFake(seed))
	if r.code != exit.OK || !strings.Contains(r.stdout, "# Writing rccl-tests csv output to "+file+"\n") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if lines := rcclLines(t, file, "csv"); len(lines) != 2 {
		t.Errorf("%d lines", len(lines))
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("files %v, want only %s", entries, file)
	}
	if st, _ := os.Stat(file); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v: the existing file's mode is kept, as by truncation", st.Mode())
	}

	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- err.Error()
			return
		}
		defer f.Close()
		data, _ := io.ReadAll(f)
		got <- string(data)
	}()
	r = testRun(t, collectives.AllReduce, seedArgs(seed, "-b", "64", "-e", "64", "-n", "1", "-X", fifo), newFake(seed))
	select {
	case data := <-got:
		if r.code != exit.OK || !strings.HasPrefix(data, "[\n{\"numCycle\":0, \"name\":\"AllReduce\"") || !strings.HasSuffix(data, "}\n]\n") {
			t.Errorf("pipe: exit %d, read %q\n%s", r.code, data, r.stderr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing came through the pipe")
	}

	keep := filepath.Join(dir, "keep.csv")
	if err := os.WriteFile(keep, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	r = testRun(t, collectives.AllReduce, []string{"--csv", keep, "-J", filepath.Join(dir, "sub.json")}, newFake(1))
	if data, _ := os.ReadFile(keep); r.code != exit.Usage || string(data) != "keep" {
		t.Errorf("refused run: exit %d, %s now holds %q", r.code, keep, data)
	}
}

// TestFP8SkippedAsRCCLTests: with rccl-tests' result file asked for, the FP8 rows rccl-tests never runs
// (prod, avg, mulsum of a reducing collective) are skipped on every engine, a header line naming them, the
// table keeping nccl-tests' type names and the file rccl-tests'; without it they run, as in nccl-tests.
func TestFP8SkippedAsRCCLTests(t *testing.T) {
	file := filepath.Join(t.TempDir(), "r.csv")
	seed := rand.Uint64()
	r := testRun(t, collectives.AllReduce, seedArgs(seed, "-b", "64", "-e", "64", "-n", "1", "-d", "fp8_e4m3", "-o", "all",
		"--csv", file), newFake(seed))
	rows := tableRows(r.stdout)
	var ops []string
	for _, f := range rows {
		ops = append(ops, f[2]+" "+f[3])
	}
	if r.code != exit.OK || strings.Join(ops, ",") != "f8e4m3 sum,f8e4m3 max,f8e4m3 min" ||
		!strings.Contains(r.stdout, "# f8e4m3 prod, f8e4m3 avg, f8e4m3 mulsum skipped: rccl-tests runs FP8 with sum, max and min only\n") {
		t.Errorf("exit %d, rows %v\n%s", r.code, ops, r.stdout)
	}
	var csvOps []string
	for _, f := range rcclLines(t, file, "csv") {
		csvOps = append(csvOps, f[4]+" "+f[5])
	}
	if strings.Join(csvOps, ",") != "fp8_e4m3 sum,fp8_e4m3 sum,fp8_e4m3 max,fp8_e4m3 max,fp8_e4m3 min,fp8_e4m3 min" {
		t.Errorf("-X rows %v", csvOps)
	}
	for _, eng := range []collectives.Engine{newFake(seed), hostengine.New()} {
		dir := t.TempDir()
		args := seedArgs(seed, "-b", "64", "-e", "64", "-n", "1", "-d", "f8e5m2", "-o", "prod", "-g", "2")
		if eng.Name() == "host" {
			args = append(args, "--engine", "host")
		}
		r = testRun(t, collectives.ReduceScatter, append(args, "-Z", "json", "-X", filepath.Join(dir, "r.json")), eng)
		if r.code != exit.OK || len(tableRows(r.stdout)) != 0 || !strings.Contains(r.stdout, "# f8e5m2 prod skipped: rccl-tests") {
			t.Errorf("%s, -Z json: exit %d\n%s%s", eng.Name(), r.code, r.stdout, r.stderr)
		}
		r = testRun(t, collectives.ReduceScatter, args, eng)
		if r.code != exit.OK || len(tableRows(r.stdout)) != 1 || strings.Contains(r.stdout, "skipped") {
			t.Errorf("%s, nccl-tests' output only: exit %d\n%s%s", eng.Name(), r.code, r.stdout, r.stderr)
		}
	}
	r = testRun(t, collectives.SendRecv, seedArgs(seed, "-b", "64", "-e", "64", "-n", "1", "-d", "f8e4m3", "-o", "all",
		"-g", "2", "--csv", file), newFake(seed))
	if r.code != exit.OK || len(tableRows(r.stdout)) != len(collectives.AllOps()) || strings.Contains(r.stdout, "skipped") {
		t.Errorf("sendrecv: exit %d\n%s", r.code, r.stdout)
	}
}

// TestHalfNotRunIsNull: with -O the JSON writes the half that did not run as null, as nccl-tests' writer does
// for a half it has no measurement of, never as zeros; the half that ran has its numbers.
func TestHalfNotRunIsNull(t *testing.T) {
	for _, c := range []struct {
		halves       string
		ran, missing string
	}{{"1", "out_of_place", "in_place"}, {"0", "in_place", "out_of_place"}} {
		file := filepath.Join(t.TempDir(), "r.json")
		seed := rand.Uint64()
		r := testRun(t, collectives.AllReduce, seedArgs(seed, append(small, "-O", c.halves, "-J", file)...), newFake(seed))
		if r.code != exit.OK {
			t.Fatalf("-O %s: exit %d\n%s", c.halves, r.code, r.stderr)
		}
		var rec struct {
			Results []map[string]json.RawMessage `json:"results"`
		}
		readJSON(t, file, &rec)
		for i, res := range rec.Results {
			missing, ok := res[c.missing]
			if !ok || string(missing) != "null" {
				t.Errorf("-O %s row %d: %s is %s", c.halves, i, c.missing, missing)
			}
			var half map[string]any
			if err := json.Unmarshal(res[c.ran], &half); err != nil || half["time"] == nil || half["nwrong"] == nil {
				t.Errorf("-O %s row %d: %s is %s", c.halves, i, c.ran, res[c.ran])
			}
		}
	}
}

// openMemEngine's communicators report the memory opening them took.
type openMemEngine struct {
	*fakeEngine
	open int64
}

type openMemComm struct {
	collectives.Comm
	open int64
}

func (e *openMemEngine) Open(cfg collectives.Config) (collectives.Comm, error) {
	c, err := e.fakeEngine.Open(cfg)
	return openMemComm{c, e.open}, err
}

func (c openMemComm) OpenMemory() int64 { return c.open }

// TestMemoryLineAsNcclTests: -M prints nccl-tests' line, "Initialization" first; where the engine did not
// measure what opening the communicator took, that part and the total say N/A rather than a number.
func TestMemoryLineAsNcclTests(t *testing.T) {
	measured := &openMemEngine{newFake(1), 3 << 20}
	measured.free = 1 << 30
	unknown := newFake(1)
	unknown.free = 1 << 30
	for _, c := range []struct {
		eng  collectives.Engine
		want string
	}{
		{measured, "Initialization 3.00 MB | User-Allocated 0.00 B | Collective 0.00 B | Total  3.00 MB"},
		{unknown, "Initialization N/A | User-Allocated 0.00 B | Collective 0.00 B | Total  N/A"},
	} {
		r := testRun(t, collectives.AllReduce, seedArgs(1, append(small, "-M", "1")...), c.eng)
		want := "# Collective test concluded: all_reduce_perf\n# GPU memory usage     : " + c.want + "\n#\n"
		if r.code != exit.OK || !strings.Contains(r.stdout, want) {
			t.Errorf("exit %d, no %q in\n%s", r.code, want, r.stdout)
		}
	}
}

// TestHostEngineMemoryIgnored: the host engine has no device memory, so -M 1 prints no memory line; a # line
// in the header says the flag was ignored (nothing of nccl-tests' line, not even N/A, that was not measured).
func TestHostEngineMemoryIgnored(t *testing.T) {
	r := hostRun(t, collectives.AllReduce, "-b", "8", "-e", "8", "-n", "1", "-M", "1")
	if r.code != exit.OK || !strings.Contains(r.stdout, "\n# -M 1 ignored: engine host cannot report device memory\n") ||
		strings.Contains(r.stdout, "GPU memory usage") {
		t.Errorf("exit %d:\n%s", r.code, r.stdout)
	}
}

// TestTestingCycleLines: with -N above 1, each pass over the sizes starts with rccl-tests' "# Testing N
// cycle." line, for every type and operation; -N 1 prints none.
func TestTestingCycleLines(t *testing.T) {
	seed := rand.Uint64()
	r := testRun(t, collectives.AllReduce, seedArgs(seed, "-b", "8", "-e", "32", "-f", "4", "-n", "1", "-N", "2", "-o", "all"), newFake(seed))
	var got []string
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(line, "# Testing") {
			got = append(got, line)
		} else if f := tableRows(line); len(f) == 1 {
			got = append(got, f[0][3])
		}
	}
	var want []string
	for _, op := range collectives.AllOps() {
		for cycle := 1; cycle <= 2; cycle++ {
			want = append(want, fmt.Sprintf("# Testing %d cycle.", cycle), op.String(), op.String())
		}
	}
	if r.code != exit.OK || strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("exit %d:\n got %v\nwant %v", r.code, got, want)
	}
	r = testRun(t, collectives.AllReduce, seedArgs(seed, small...), newFake(seed))
	if strings.Contains(r.stdout, "# Testing") {
		t.Errorf("-N 1 printed a cycle line:\n%s", r.stdout)
	}
}

// TestSplitVariables: NCCL_TESTS_SPLIT and NCCL_TESTS_SPLIT_MASK are read as nccl-tests reads them; a split
// of the processes into communicators of unequal sizes is refused before anything runs (one line, exit 1), one
// that leaves them in one communicator gets a "#" line.
func TestSplitVariables(t *testing.T) {
	for _, c := range []struct {
		mask, split string
		nprocs      int
		comms       int // 0: refused as invalid
	}{
		{"", "AND 1", 4, 2}, {"", "&0", 4, 1}, {"", "or 0x4", 4, 4}, {"", "| 0b11", 4, 1}, {"", "MOD 2", 8, 2},
		{"", "%3", 2, 2}, {"", "DIV 2", 4, 2}, {"", "/8", 4, 1}, {"", "MOD 0", 4, 0}, {"", "XOR 1", 4, 0},
		{"", "AND", 4, 0}, {"3", "", 4, 4}, {"0x2", "AND 0", 4, 2}, {"0", "", 64, 1}, {"zz", "", 4, 0},
	} {
		getenv := func(k string) string {
			return map[string]string{plan.EnvSplitMask: c.mask, plan.EnvSplit: c.split}[k]
		}
		s, err := plan.ParseSplit(getenv)
		switch {
		case c.comms == 0 && err == nil:
			t.Errorf("mask %q split %q: accepted", c.mask, c.split)
		case c.comms != 0 && (err != nil || s.Communicators(c.nprocs) != c.comms):
			t.Errorf("mask %q split %q on %d processes: %v, want %d communicators", c.mask, c.split, c.nprocs, err, c.comms)
		}
	}
	env := map[string]string{"RANK": "0", "WORLD_SIZE": "4", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500",
		plan.EnvSplit: "DIV 3"}
	dir := t.TempDir()
	r := runWith(t, collectives.AllReduce, seedArgs(1, append(small, "-J", filepath.Join(dir, "r.json"))...),
		fakeSource(newFake(1)), func(a *app) { a.getenv = func(k string) string { return env[k] } })
	wantRefused(t, r, []string{plan.EnvSplit + "=DIV 3"}, plan.EnvSplit, "DIV 3", dir)
	if !strings.Contains(r.stderr, "into communicators of unequal sizes (3, 1)") {
		t.Errorf("stderr %q", r.stderr)
	}
	split := func(k string) string { return map[string]string{plan.EnvSplit: "MOD 2"}[k] }
	if err := plan.CheckSplit(split, 4, false); err != nil {
		t.Errorf("MOD 2 on 4 processes: %v", err)
	}
	if err := plan.CheckSplit(split, 4, true); err == nil || !strings.Contains(err.Error(), "not supported with --ab") {
		t.Errorf("MOD 2 on 4 processes with --ab: %v", err)
	}
	env = map[string]string{plan.EnvSplit: "MOD 2"}
	r = runWith(t, collectives.AllReduce, seedArgs(1, small...), fakeSource(newFake(1)),
		func(a *app) { a.getenv = func(k string) string { return env[k] } })
	if r.code != exit.OK || !strings.Contains(r.stdout, "# NCCL_TESTS_SPLIT=MOD 2 ignored: one process makes one communicator\n") {
		t.Errorf("one process: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestUnsupportedVariablesNoted: rccl-tests' NIC counter variables outside its dialect, its kernel-timing mode, and
// NCCL_TESTS_DEVICE on the host engine, are never ignored silently: a "#" line says so. Elsewhere NCCL_TESTS_DEVICE reaches the engine (pinned
// devices), and a bad value is refused before anything runs.
func TestUnsupportedVariablesNoted(t *testing.T) {
	env := map[string]string{"RCCL_TESTS_NET_COUNTER_ENABLE": "1", "RCCL_TESTS_NIC_COUNTER_LIST": "a,b"}
	tweak := func(a *app) { a.getenv = func(k string) string { return env[k] } }
	r := runWith(t, collectives.AllReduce, seedArgs(1, append(small, "-g", "2")...), fakeSource(newFake(1)), tweak)
	want := "# RCCL_TESTS_NET_COUNTER_ENABLE=1 RCCL_TESTS_NIC_COUNTER_LIST=a,b ignored: rccl-tests' NIC counters are read in its dialect only (--dialect rccl-tests)\n"
	if r.code != exit.OK || !strings.Contains(r.stdout, want) {
		t.Errorf("exit %d, no %q in\n%s", r.code, want, r.stdout)
	}
	env = map[string]string{plan.EnvDevice: "3"}
	fake := newFake(1)
	r = runWith(t, collectives.AllReduce, seedArgs(1, append(small, "-g", "2")...), fakeSource(fake), tweak)
	if r.code != exit.OK || strings.Contains(r.stdout, plan.EnvDevice) || !fake.cfg.PinDevices || fake.cfg.FirstDevice != 3 {
		t.Errorf("NCCL_TESTS_DEVICE=3: exit %d, config %+v\n%s", r.code, fake.cfg, r.stdout)
	}
	r = runWith(t, collectives.AllReduce, append(small, "--engine", "host"), fakeSource(hostengine.New()), tweak)
	if want := "# NCCL_TESTS_DEVICE=3 ignored: engine host has no devices\n"; r.code != exit.OK || !strings.Contains(r.stdout, want) {
		t.Errorf("host engine: exit %d, no %q in\n%s%s", r.code, want, r.stdout, r.stderr)
	}
	for _, bad := range []string{"-1", "x", "1.5"} {
		env = map[string]string{plan.EnvDevice: bad}
		dir := t.TempDir()
		r = runWith(t, collectives.AllReduce, seedArgs(1, append(small, "-J", filepath.Join(dir, "r.json"))...), fakeSource(newFake(1)), tweak)
		wantRefused(t, r, nil, "invalid NCCL_TESTS_DEVICE", bad, dir)
	}
	// An A/B arm cannot vary them: both arms would run the same, or on other devices.
	for _, name := range plan.UnsupportedVars {
		dir := t.TempDir()
		r = testRun(t, collectives.AllReduce, []string{"--ab", name + "=1,2", "-J", filepath.Join(dir, "r.json")}, newFake(1))
		wantRefused(t, r, []string{"--ab", name + "=1,2"}, name, "--ab", dir)
	}
}

// TestRCCLParsing: rccl-tests' switches read as it reads them: -O, -E, --rotating_tensor and -A take any
// integer (nonzero is on; -O nonzero is out-of-place only), -F 0 or less never flushes, -q is decimal.
func TestRCCLParsing(t *testing.T) {
	a := &app{coll: collectives.AllReduce, engines: engineSource{names: func() []string { return []string{"auto", "host"} }}}
	for _, c := range []struct {
		args  []string
		check func(o *plan.Options) bool
	}{
		{[]string{"-O", "2"}, func(o *plan.Options) bool { return o.Halves == plan.OutOfPlaceOnly }},
		{[]string{"-O", "-1"}, func(o *plan.Options) bool { return o.Halves == plan.OutOfPlaceOnly }},
		{[]string{"-O", "0x0"}, func(o *plan.Options) bool { return o.Halves == plan.InPlaceOnly }},
		{[]string{"-O", "both"}, func(o *plan.Options) bool { return o.Halves == plan.BothHalves }},
		{[]string{"-E", "2"}, func(o *plan.Options) bool { return o.RCCL.RotatingTensor == 1 }},
		{[]string{"-E", "0"}, func(o *plan.Options) bool { return o.RCCL.RotatingTensor == 0 }},
		{[]string{"--rotating_tensor", "-1"}, func(o *plan.Options) bool { return o.RCCL.RotatingTensor == 1 }},
		{[]string{"-A", "2"}, func(o *plan.Options) bool { return o.RCCL.AlgoColumns == 1 }},
		{[]string{"-F", "-1"}, func(o *plan.Options) bool { return o.RCCL.CacheFlush == -1 }},
		{[]string{"-q", "010"}, func(o *plan.Options) bool { return o.RCCL.DelayUs == 10 }},
	} {
		o, run, err := a.parse(c.args)
		if err != nil || !run || !c.check(o) {
			t.Errorf("%v: err %v, options %+v", c.args, err, o)
		}
	}
	r := testRun(t, collectives.AllReduce, seedArgs(1, append(small, "-F", "-1")...), newFake(1))
	if r.code != exit.OK || strings.Contains(r.stdout, "-F") {
		t.Errorf("-F -1 (never): exit %d\n%s", r.code, r.stdout)
	}
}

// TestDelayAfterOutOfPlaceOnly: with -O 1, -q still waits after each row's out-of-place half, as rccl-tests
// sleeps whenever that half ran (measured with the wall clock, lower bound only).
func TestDelayAfterOutOfPlaceOnly(t *testing.T) {
	const delay = 40 * time.Millisecond
	seed := rand.Uint64()
	fake := newFake(seed)
	var mu sync.Mutex
	var last time.Time
	var lastSize int64
	var gaps []time.Duration
	fake.onLaunch = func(c *collectives.Call) {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if size := c.Counts[0].Param; !last.IsZero() && size != lastSize {
			gaps = append(gaps, now.Sub(last))
		}
		last, lastSize = now, c.Counts[0].Param
	}
	r := testRun(t, collectives.AllReduce, seedArgs(seed, "-b", "8", "-e", "32", "-f", "2", "-n", "2", "-w", "0",
		"-O", "1", "-q", fmt.Sprint(int(delay/time.Microsecond))), fake)
	if r.code != exit.OK || len(gaps) != 2 {
		t.Fatalf("exit %d, gaps %v\n%s", r.code, gaps, r.stderr)
	}
	for _, g := range gaps {
		if g < delay {
			t.Errorf("gap %v between rows, want at least %v", g, delay)
		}
	}
}

// TestColumnHeaderBytes: the table's header lines are nccl-tests' (and, for -O and -A, rccl-tests') format
// strings filled in, trailing spaces included.
func TestColumnHeaderBytes(t *testing.T) {
	const lead = "# %10s  %12s  %8s  %6s  %6s"
	both := lead + "  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s"
	one := lead + "  %7s  %6s  %6s  %6s %*s %*s"
	for _, c := range []struct {
		o    *plan.Options
		want []string
	}{
		{&plan.Options{Halves: plan.BothHalves}, []string{
			fmt.Sprintf(lead+"           out-of-place                       in-place          ", "", "", "", "", ""),
			fmt.Sprintf(both, "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", 0, ""),
			fmt.Sprintf(both, "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", 0, ""),
		}},
		{&plan.Options{Halves: plan.BothHalves, CPUTime: 1, Timestamps: 1}, []string{
			fmt.Sprintf(lead+"           out-of-place                       in-place          ", "", "", "", "", ""),
			fmt.Sprintf(both, "size", "count", "type", "redop", "root", "cputime", "algbw", "busbw", "#wrong", "cputime", "algbw", "busbw", "#wrong", 19, "timestamp"),
			fmt.Sprintf(both, "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", 19, "%Y-%m-%d %H:%M:%S"),
		}},
		{&plan.Options{Halves: plan.OutOfPlaceOnly, RCCL: plan.RCCLOptions{AlgoColumns: 1}}, []string{
			fmt.Sprintf(lead+"           out-of-place          ", "", "", "", "", ""),
			fmt.Sprintf(one, "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", 28, "algo      proto      nchannels", 0, ""),
			fmt.Sprintf(one, "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", 28, "", 0, ""),
		}},
		{&plan.Options{Halves: plan.InPlaceOnly, Timestamps: 1}, []string{
			fmt.Sprintf(lead+"           in-place          ", "", "", "", "", ""),
			fmt.Sprintf(one, "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", 0, "", 19, "timestamp"),
			fmt.Sprintf(one, "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", 0, "", 19, "%Y-%m-%d %H:%M:%S"),
		}},
	} {
		compareLines(t, fmt.Sprintf("%+v", *c.o), report.ColumnHeader(c.o), c.want)
	}
	// -I 1 -p 1: nccl-tests prints its per-iteration line before the parallel-init line.
	r := testRun(t, collectives.AllReduce, seedArgs(1, append(small, "-I", "1", "-p", "1", "-z", "1")...), newFake(1))
	want := "# Blocking Enabled: wait and barrier after each inner iteration (-m) \n" +
		"# Per-Iteration Report: host clock timing with a wait after each iteration; i_* uses max over process rows \n" +
		"# Parallel Init Enabled: threads call into NcclInitRank concurrently \n"
	if r.code != exit.OK || !strings.Contains(r.stdout, want) {
		t.Errorf("exit %d, no\n%s in\n%s", r.code, want, r.stdout)
	}
}
