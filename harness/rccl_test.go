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
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/hostengine"
)

// rccl-tests' reporter layouts, from its writer: the CSV header it writes for a build without MPI, and one
// line of each format (strings quoted, the #wrong count too; integers plain; floating point as C's %f; JSON
// keys joined by ", ").
const rcclCSVHeader = "numCycle,collective,gpus,size,type,redop,inplace,time,algbw,busbw,#wrong"

var (
	rcclCSVLine  = regexp.MustCompile(`^(\d+),"([A-Za-z]+)",(\d+),(\d+),"([a-z0-9_]+)","([a-z]*)",([01]),(\d+\.\d{6}),(\d+\.\d{6}),(\d+\.\d{6}),"(\d+|N/A)"$`)
	rcclJSONLine = regexp.MustCompile(`^\{"numCycle":(\d+), "name":"([A-Za-z]+)", "gpus":(\d+), "size":(\d+), "type":"([a-z0-9_]+)", "redop":"([a-z]*)", "inPlace":([01]), "time":(\d+\.\d{6}), "algBw":(\d+\.\d{6}), "busBw":(\d+\.\d{6}), "wrong":"(\d+|N/A)"\},?$`)
)

// rcclLines checks a reporter file against rccl-tests' layout and returns its lines' fields: numCycle, name,
// gpus, size, type, redop, inplace, time, algbw, busbw, wrong.
func rcclLines(t *testing.T, path, format string) [][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	re := rcclCSVLine
	if format == "csv" {
		if lines[0] != rcclCSVHeader {
			t.Fatalf("CSV header %q", lines[0])
		}
		lines = lines[1:]
	} else {
		if lines[0] != "[" || lines[len(lines)-1] != "]" {
			t.Fatalf("JSON not an array of lines:\n%s", data)
		}
		var v []map[string]any
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatalf("JSON: %v", err)
		}
		lines = lines[1 : len(lines)-1]
		re = rcclJSONLine
		if strings.HasSuffix(lines[len(lines)-1], ",") {
			t.Errorf("last JSON entry ends with a comma")
		}
	}
	var out [][]string
	for _, l := range lines {
		m := re.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("line %q is not rccl-tests' %s layout", l, format)
		}
		out = append(out, m[1:])
	}
	return out
}

// TestRCCLOutput: -Z csv|json -X FILE with -N 2 -t 2 -g 2 writes rccl-tests' layout: one line per half, the
// collective's rccl-tests name, gpus = threads x GPUs, numCycle 0 then 1 for every size, the times and
// bandwidths of the -J file of the same run; the file appears only complete, at the end (not when the engine
// opens), mode 0644.
func TestRCCLOutput(t *testing.T) {
	umask := syscall.Umask(0)
	syscall.Umask(umask)
	for _, format := range []string{"csv", "json"} {
		dir := t.TempDir()
		file, js := filepath.Join(dir, "r."+format), filepath.Join(dir, "j.json")
		seed := rand.Uint64()
		fake := newFake(seed)
		var existed bool
		eng := openHook{fake, func() { _, err := os.Stat(file); existed = err == nil }}
		args := seedArgs(seed, "-b", "1K", "-e", "16K", "-f", "4", "-n", "2", "-N", "2", "-t", "2", "-g", "2",
			"-Z", format, "-X", file, "-J", js)
		r := testRun(t, collectives.AllReduce, args, eng)
		if r.code != exit.OK || !strings.Contains(r.stdout, "# Writing rccl-tests "+format+" output to "+file+"\n") {
			t.Fatalf("%s: exit %d\n%s%s", format, r.code, r.stdout, r.stderr)
		}
		if existed {
			t.Errorf("%s: -X file existed before its rows were written", format)
		}
		if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o644&^os.FileMode(umask) {
			t.Errorf("%s: mode %v, %v", format, st.Mode(), err)
		}
		lines := rcclLines(t, file, format)
		// 3 sizes x 2 cycles x 2 halves.
		if len(lines) != 12 {
			t.Fatalf("%s: %d lines", format, len(lines))
		}
		var jr struct {
			Results []struct {
				Size       int64
				OutOfPlace rcclHalf `json:"out_of_place"`
				InPlace    rcclHalf `json:"in_place"`
			}
		}
		readJSON(t, js, &jr)
		for i, f := range lines {
			row := jr.Results[i/2]
			half := row.OutOfPlace
			if f[6] == "1" {
				half = row.InPlace
			}
			wantCycle := strconv.Itoa(i / 6)
			if f[0] != wantCycle || f[1] != "AllReduce" || f[2] != "4" || f[3] != strconv.FormatInt(row.Size, 10) ||
				f[4] != "float" || f[5] != "sum" || f[6] != strconv.Itoa(i%2) || f[10] != "0" {
				t.Errorf("%s line %d: %v (want cycle %s, size %d)", format, i, f, wantCycle, row.Size)
			}
			for j, want := range []float64{half.Time, half.AlgBW, half.BusBW} {
				got, _ := strconv.ParseFloat(f[7+j], 64)
				if math.Abs(got-want) > 5e-7+1e-9*want {
					t.Errorf("%s line %d field %d: %v, -J says %v", format, i, 7+j, got, want)
				}
			}
		}
	}
}

// rcclHalf is what TestRCCLOutput reads of a -J half.
type rcclHalf struct {
	Time  float64 `json:"time"`
	AlgBW float64 `json:"alg_bw"`
	BusBW float64 `json:"bus_bw"`
}

// openHook runs check when the engine opens, before anything is measured.
type openHook struct {
	*fakeEngine
	check func()
}

func (e openHook) Open(cfg collectives.Config) (collectives.Comm, error) {
	e.check()
	return e.fakeEngine.Open(cfg)
}

// TestRCCLOutputDetails: -c 0 writes "N/A", -X alone writes JSON, --csv is -Z csv, an existing file is
// replaced (as rccl-tests truncates it), FP8 and non-reducing collectives use rccl-tests' names.
func TestRCCLOutputDetails(t *testing.T) {
	dir := t.TempDir()
	keep := filepath.Join(dir, "k.csv")
	if err := os.WriteFile(keep, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := testRun(t, collectives.AllGather, seedArgs(1, append(small, "-c", "0", "--csv", keep)...), newFake(1))
	if r.code != exit.OK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, f := range rcclLines(t, keep, "csv") {
		if f[1] != "AllGather" || f[5] != "none" || f[10] != "N/A" || f[2] != "1" {
			t.Errorf("line %v", f)
		}
	}
	file := filepath.Join(dir, "x")
	seed := rand.Uint64()
	r = testRun(t, collectives.AllToAll, seedArgs(seed, "-b", "64", "-e", "64", "-n", "1", "-d", "f8e4m3", "-X", file), newFake(seed))
	if r.code != exit.OK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, f := range rcclLines(t, file, "json") {
		if f[1] != "AlltoAll" || f[4] != "fp8_e4m3" {
			t.Errorf("line %v", f)
		}
	}
	cube := filepath.Join(dir, "cube.csv")
	r = testRun(t, collectives.HyperCube, seedArgs(1, "-b", "64", "-e", "64", "-n", "1", "-g", "2", "--csv", cube), newFake(1))
	for _, f := range rcclLines(t, cube, "csv") {
		if r.code != exit.OK || len(f) < 6 || f[1] != "HyperCube" || f[5] != "none" {
			t.Errorf("hypercube: exit %d, line %v", r.code, f)
		}
	}
	r = testRun(t, collectives.AllReduce, seedArgs(1, append(small, "-Z", "csv")...), newFake(1))
	if r.code != exit.OK || !strings.Contains(r.stdout, "# -Z csv ignored: no -X file to write\n") {
		t.Errorf("-Z without -X: exit %d\n%s", r.code, r.stdout)
	}
}

// TestRCCLBadInput: bad values of the rccl-tests flags are one line naming the flag and the value, exit 1,
// nothing on stdout and no file.
func TestRCCLBadInput(t *testing.T) {
	for _, c := range []struct {
		args      []string
		name, val string
	}{
		{[]string{"-y", "warm"}, "stream_null", "warm"},
		{[]string{"-Y", "shared"}, "memory_type", "shared"},
		{[]string{"-u", "zz,1"}, "unalign", "zz,1"},
		{[]string{"--cumask", "1,2,3,4,5"}, "cumask", "1,2,3,4,5"},
		{[]string{"-E", "on"}, "env", "on"},
		{[]string{"--rotating_tensor", "on"}, "rotating_tensor", "on"},
		{[]string{"-Z", "xml"}, "rccl_output_format", "xml"},
		{[]string{"-q", "x"}, "delay_inout_place", "x"},
		{[]string{"-F", "x"}, "cache_flush", "x"},
		{[]string{"-A", "yes"}, "output_algo_proto_channels", "yes"},
		{[]string{"-O", "in"}, "out_of_place", "in"},
		{[]string{"-x", "3"}, "cta_policy", "3"},
		{[]string{"-D", "1"}, "device_implementation", "1"},
		{[]string{"-V", "200"}, "device_cta_count", "200"},
		{[]string{"--csv", "a.csv", "-Z", "json"}, "csv", "a.csv"},
		{[]string{"-X", "/nonexistent-dir/r.csv"}, "rccl_output_file", "/nonexistent-dir/r.csv"},
	} {
		dir := t.TempDir()
		args := append([]string{"-J", filepath.Join(dir, "out.json")}, c.args...)
		if c.name != "rccl_output_file" && c.name != "csv" {
			args = append([]string{"-X", filepath.Join(dir, "r.csv")}, args...)
		}
		r := testRun(t, collectives.AllReduce, args, newFake(1))
		wantRefused(t, r, c.args, c.name, c.val, dir)
	}
}

// TestClashRules: where nccl-tests and rccl-tests (or this suite) give a letter two meanings, the value's
// form decides, and nccl-tests' meaning wins where the form fits it.
func TestClashRules(t *testing.T) {
	a := &app{coll: collectives.AllReduce, engines: engineSource{names: func() []string { return []string{"auto", "host"} }}}
	for _, c := range []struct {
		args  []string
		check func(o *plan.Options) bool
	}{
		{[]string{"-y", "1"}, func(o *plan.Options) bool { return o.StreamNull == 1 && o.RCCL.MemoryType == "" }},
		{[]string{"-y", "coarse"}, func(o *plan.Options) bool { return o.StreamNull == 0 && o.RCCL.MemoryType == "coarse" }},
		{[]string{"-y", "managed"}, func(o *plan.Options) bool { return o.RCCL.MemoryKind() == collectives.MemoryManaged }},
		{[]string{"-Y", "host"}, func(o *plan.Options) bool { return o.RCCL.MemoryKind() == collectives.MemoryHost }},
		{[]string{"-r", "all"}, func(o *plan.Options) bool { return o.Root == -1 }},
		{[]string{"-r", "2"}, func(o *plan.Options) bool { return o.Root == 2 }},
		{[]string{"-u", "4"}, func(o *plan.Options) bool { return o.Unalign == 4 && o.RCCL.Cumask == "" }},
		{[]string{"-u", "0x10"}, func(o *plan.Options) bool { return o.Unalign == 16 && o.RCCL.Cumask == "" }},
		{[]string{"-u", "ff,0,0,0"}, func(o *plan.Options) bool { return o.Unalign == 0 && o.RCCL.Cumask == "ff,0,0,0" }},
		{[]string{"-u", "ff"}, func(o *plan.Options) bool { return o.Unalign == 0 && o.RCCL.Cumask == "ff" }},
		{[]string{"-E", "A=1"}, func(o *plan.Options) bool { return o.CommEnv["A"] == "1" && o.RCCL.RotatingTensor == 0 }},
		{[]string{"-E", "1", "-E", "B=0"}, func(o *plan.Options) bool {
			return o.RCCL.RotatingTensor == 1 && o.CommEnv["B"] == "0" && len(o.CommEnv) == 1
		}},
		{[]string{"--rotating_tensor", "1"}, func(o *plan.Options) bool { return o.RCCL.RotatingTensor == 1 }},
		{[]string{"--memory_report", "1"}, func(o *plan.Options) bool { return o.Memory == 1 }},
		{[]string{"-X", "f"}, func(o *plan.Options) bool { return o.RCCL.Format == "json" && o.RCCL.File == "f" }},
		{[]string{"--csv", "f"}, func(o *plan.Options) bool { return o.RCCL.Format == "csv" && o.RCCL.File == "f" }},
		{[]string{"-x", "1", "-q", "5", "-F", "3", "-A", "1"}, func(o *plan.Options) bool {
			return o.RCCL.CTAPolicy == 1 && o.RCCL.DelayUs == 5 && o.RCCL.CacheFlush == 3 && o.RCCL.AlgoColumns == 1
		}},
		{[]string{"-R", "2", "-D", "1", "-V", "32"}, func(o *plan.Options) bool { return o.RCCL.DeviceImpl == 1 && o.RCCL.DeviceCTAs == 32 }},
	} {
		o, run, err := a.parse(c.args)
		if err != nil || !run || !c.check(o) {
			t.Errorf("%v: err %v, options %+v", c.args, err, o)
		}
	}
}

// TestMemoryTypeNotes: -Y (or -y with a word) gets one "#" line on every engine: the host engine says it
// ignores it, an engine that places memory says what it did.
func TestMemoryTypeNotes(t *testing.T) {
	r := testRun(t, collectives.AllReduce, []string{"--engine", "host", "-g", "2", "-b", "8", "-e", "8", "-n", "1", "-y", "fine"},
		hostengine.New())
	if r.code != exit.OK || strings.Count(r.stdout, "# -Y fine ignored: engine host has one kind of memory\n") != 1 {
		t.Errorf("host: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	fake := &noteEngine{newFake(1)}
	r = testRun(t, collectives.AllReduce, seedArgs(1, append(small, "-Y", "managed", "-x", "1", "-F", "3")...), fake)
	if r.code != exit.OK || !strings.Contains(r.stdout, "# Memory: kind 4\n") || !strings.Contains(r.stdout, "# CTA policy 1\n") ||
		fake.cfg.Memory != collectives.MemoryManaged || fake.cfg.CTAPolicy != 1 || strings.Contains(r.stdout, "-F") {
		t.Errorf("noter: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = testRun(t, collectives.AllReduce, seedArgs(1, append(small, "-F", "2")...), fake)
	if !strings.Contains(r.stdout, "# -F 2 ignored: engine fake: cannot flush every 2\n") {
		t.Errorf("a flusher that cannot: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = testRun(t, collectives.AllReduce, seedArgs(1, append(small, "-F", "2", "-x", "0", "--cumask", "f", "-R", "2", "-D", "1")...), newFake(1))
	for _, want := range []string{"# -F 2 ignored", "# -x 0 ignored", "# --cumask f ignored", "# -D 1 ignored"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("no %q line:\n%s", want, r.stdout)
		}
	}
}

// noteEngine's communicators are MemoryNoters, CTAPolicyNoters and CacheFlushers.
type noteEngine struct{ *fakeEngine }

type noteComm struct {
	collectives.Comm
	cfg collectives.Config
}

func (e *noteEngine) Open(cfg collectives.Config) (collectives.Comm, error) {
	c, err := e.fakeEngine.Open(cfg)
	return noteComm{c, cfg}, err
}

func (c noteComm) MemoryNote() string    { return "Memory: kind " + strconv.Itoa(int(c.cfg.Memory)) }
func (c noteComm) CTAPolicyNote() string { return "CTA policy " + strconv.Itoa(c.cfg.CTAPolicy) }

// FlushICache can flush every third operation only.
func (c noteComm) FlushICache(every int) error {
	if every != 3 {
		return fmt.Errorf("cannot flush every %d", every)
	}
	return nil
}

// TestDelayBetweenHalves: -q puts at least its delay between a row's last out-of-place call and its first
// in-place call (measured with the wall clock, lower bound only).
func TestDelayBetweenHalves(t *testing.T) {
	const delay = 40 * time.Millisecond
	seed := rand.Uint64()
	fake := newFake(seed)
	var mu sync.Mutex
	var lastOut time.Time
	var gaps []time.Duration
	fake.onLaunch = func(c *collectives.Call) {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if !c.InPlace(0) {
			lastOut = now
		} else if !lastOut.IsZero() {
			gaps = append(gaps, now.Sub(lastOut))
			lastOut = time.Time{}
		}
	}
	r := testRun(t, collectives.AllReduce, seedArgs(seed, "-b", "8", "-e", "32", "-f", "2", "-n", "2", "-w", "0",
		"-q", strconv.Itoa(int(delay/time.Microsecond))), fake)
	if r.code != exit.OK || len(gaps) != 3 {
		t.Fatalf("exit %d, gaps %v\n%s", r.code, gaps, r.stderr)
	}
	for _, g := range gaps {
		if g < delay {
			t.Errorf("gap %v between halves, want at least %v", g, delay)
		}
	}
}

// TestAlgoProtoChannels: -A 1 appends rccl-tests' three columns in its layout: our algorithm, spelled as RCCL
// spells its own (Ring), then N/A for what only a library could tell.
func TestAlgoProtoChannels(t *testing.T) {
	r := testRun(t, collectives.AllReduce, seedArgs(1, append(small, "-A", "1", "-O", "1")...), newFake(1))
	want := "#       size         count      type   redop    root     time   algbw   busbw  #wrong algo      proto      nchannels \n" +
		"#        (B)    (elements)                               (us)  (GB/s)  (GB/s)                                      \n"
	if r.code != exit.OK || !strings.Contains(r.stdout, want) {
		t.Fatalf("exit %d\n%s", r.code, r.stdout)
	}
	for _, line := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(line, "#") &&
			(len(f) != 12 || !strings.HasSuffix(line, "       0    Ring       N/A         N/A")) {
			t.Errorf("row %q", line)
		}
	}
}

// TestRCCLOutputMPI: with two processes of two threads, only rank 0 writes the -X file, in rccl-tests' MPI
// layout: nodes 1 (one host), ranks 2 (processes), ranksPerNode 2, gpusPerRank 2 (threads x GPUs).
func TestRCCLOutputMPI(t *testing.T) {
	seed := rand.Uint64()
	dir := t.TempDir()
	for _, format := range []string{"csv", "json"} {
		file := filepath.Join(dir, "r."+format)
		args := seedArgs(seed, append(small, "-t", "2", "-Z", format, "-X", file)...)
		runs := multiRun(t, 2, args, func(int) *fakeEngine { return newFake(seed) })
		if runs[0].code != exit.OK || runs[1].code != exit.OK {
			t.Fatalf("exits %d %d: %s%s", runs[0].code, runs[1].code, runs[0].stderr, runs[1].stderr)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		line := regexp.MustCompile(`^\d+,"AllReduce",1,2,2,2,\d+,"float","sum",[01],\d+\.\d{6},\d+\.\d{6},\d+\.\d{6},"0"$`)
		if format == "json" {
			lines = lines[1 : len(lines)-1]
			line = regexp.MustCompile(`^\{"numCycle":0, "name":"AllReduce", "nodes":1, "ranks":2, "ranksPerNode":2, "gpusPerRank":2, "size":\d+, `)
		} else if lines[0] != "numCycle,collective,nodes,ranks,ranksPerNode,gpusPerRank,size,type,redop,inplace,time,algbw,busbw,#wrong" {
			t.Errorf("MPI CSV header %q", lines[0])
		} else {
			lines = lines[1:]
		}
		if len(lines) != 14 {
			t.Errorf("%s: %d lines", format, len(lines))
		}
		for _, l := range lines {
			if !line.MatchString(l) {
				t.Errorf("%s line %q", format, l)
			}
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("files %v, want one per format", entries)
	}
}
