package harness

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/hostengine"
)

// ktRun runs all_reduce with RCCL_TESTS_KERNEL_TIMING set to a fresh prefix and returns the run, the file the
// process should write, and its rows (nil when there is none).
func ktRun(t *testing.T, eng collectives.Engine, args ...string) (run, string, [][]string) {
	t.Helper()
	prefix := filepath.Join(t.TempDir(), "kt")
	env := map[string]string{plan.EnvKernelTiming: prefix}
	r := runWith(t, collectives.AllReduce, args, fakeSource(eng), func(a *app) {
		a.getenv = func(k string) string { return env[k] }
	})
	path := fmt.Sprintf("%s_pid%d.csv", prefix, os.Getpid())
	b, err := os.ReadFile(path)
	if err != nil {
		return r, path, nil
	}
	if first, _, _ := strings.Cut(string(b), "\n"); first != `"Rank","Seq","Comm_Hash","Func","Datatype","Count","nChannels","nThreads","nColls","Start_Timestamp","End_Timestamp","Duration_ns","Config"` {
		t.Errorf("header %q", first)
	}
	rows, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r, path, rows[1:]
}

func num(t *testing.T, s string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("field %q: %v", s, err)
	}
	return n
}

// On an engine that times by events, every dispatch of the warm-up (phase=setup) and of the timed loop has a
// record per rank, in rccl-tests' columns, on one clock, numbered per rank without a gap.
func TestKernelTimingByEvents(t *testing.T) {
	fake := newFake(1)
	fake.events = true
	r, path, rows := ktRun(t, fake, "-g", "2", "-b", "1K", "-e", "2K", "-f", "2", "-w", "3", "-n", "5", "-m", "2", "-c", "0")
	if r.code != exit.OK {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// 2 sizes x 2 halves x (3 warm-up dispatches + 5 timed iterations of 2 operations each) x 2 ranks
	if len(rows) != 64 {
		t.Fatalf("%d records, want 64", len(rows))
	}
	if want := fmt.Sprintf("rccl-tests: wrote 64 kernel timing records to %s (0 dropped)\n", path); !strings.Contains(r.stderr, want) {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
	if strings.Contains(r.stdout, plan.EnvKernelTiming) {
		t.Errorf("the table mentions kernel timing:\n%s", r.stdout)
	}
	first := "rccl-tests timed_loop size=1024 count=256 type=7 op=0 in_place=0 proc=0 thread=0 ngpus=2 graph=0"
	if rows[0][12] != first+" phase=setup" || rows[6][12] != first || rows[63][12] != strings.NewReplacer("1024", "2048", "256", "512", "in_place=0", "in_place=1").Replace(first) {
		t.Errorf("configs %q, %q, %q", rows[0][12], rows[6][12], rows[63][12])
	}
	next := map[string]uint64{}
	var last uint64
	for i, f := range rows {
		start, end := num(t, f[9]), num(t, f[10])
		if start == 0 || end < start || num(t, f[11]) != end-start || start < last {
			t.Errorf("row %d: start %d end %d duration %s after a start at %d", i, start, end, f[11], last)
		}
		last = start
		if seq := num(t, f[1]); seq != next[f[0]] {
			t.Errorf("row %d: rank %s seq %d, want %d", i, f[0], seq, next[f[0]])
		}
		next[f[0]]++
		colls := "2"
		if strings.HasSuffix(f[12], "phase=setup") {
			colls = "1"
		}
		if f[3] != "4" || f[4] != "7" || f[5] != strings.Split(strings.Split(f[12], "count=")[1], " ")[0] || f[8] != colls || f[2] != rows[0][2] {
			t.Errorf("row %d: %q", i, f)
		}
	}
}

// Past a window's bound the dispatches still run and are counted as dropped.
func TestKernelTimingDropsPastTheWindow(t *testing.T) {
	fake := newFake(1)
	fake.events = true
	r, path, rows := ktRun(t, fake, "-b", "1K", "-e", "1K", "-w", "0", "-n", "1030", "-c", "0")
	if want := fmt.Sprintf("rccl-tests: wrote 2048 kernel timing records to %s (12 dropped)\n", path); r.code != exit.OK || len(rows) != 2048 || !strings.Contains(r.stderr, want) {
		t.Errorf("exit %d, %d records, stderr %q; want %q", r.code, len(rows), r.stderr, want)
	}
}

// A library that records its dispatches is drained after each half's warm-up and timed loop, as rccl-tests
// drains RCCL; without records (RCCL_KERNEL_TIMING unset) rccl-tests' line says so and no file is written.
func TestKernelTimingFromTheLibrary(t *testing.T) {
	fake := newFake(1)
	fake.drains = true
	r, path, rows := ktRun(t, fake, "-b", "1K", "-e", "1K", "-w", "2", "-n", "3", "-c", "0")
	if want := fmt.Sprintf("rccl-tests: wrote %d kernel timing records to %s (3 dropped)\n", len(rows), path); r.code != exit.OK || !strings.Contains(r.stderr, want) {
		t.Fatalf("exit %d, stderr %q, want %q", r.code, r.stderr, want)
	}
	// The first setup drain also holds the run's warm-up before its first point (rccl-tests' too).
	tags := map[string]int{}
	for i, f := range rows {
		tags[f[12]]++
		if seq := num(t, f[1]); seq != uint64(i) || f[2] != "feed" || f[6] != "8" || f[7] != "256" || f[11] != "500" {
			t.Errorf("row %d: %q", i, f)
		}
	}
	half := "rccl-tests timed_loop size=1024 count=256 type=7 op=0 in_place=%d proc=0 thread=0 ngpus=1 graph=0"
	for ip := range 2 {
		timed := fmt.Sprintf(half, ip)
		if tags[timed] != 3 || tags[timed+" phase=setup"] < 2 {
			t.Errorf("in_place=%d: %d timed and %d setup records, want 3 and at least 2: %v", ip, tags[timed],
				tags[timed+" phase=setup"], tags)
		}
	}
	fake = newFake(1)
	fake.drains, fake.drainResult = true, 5
	r, path, rows = ktRun(t, fake, "-b", "1K", "-e", "1K", "-w", "2", "-n", "3", "-c", "0")
	want := "rccl-tests: no kernel timing records after 4 drain(s), result 5 (is RCCL_KERNEL_TIMING=1 set, and did the library find an event layout?)\n"
	if _, err := os.Stat(path); r.code != exit.OK || rows != nil || err == nil || !strings.Contains(r.stderr, want) {
		t.Errorf("exit %d, %d records, stderr %q; want %q and no file", r.code, len(rows), r.stderr, want)
	}
}

// The host engine launches no kernels: one line says so, no file is written, and the run goes on.
func TestKernelTimingOnTheHostEngine(t *testing.T) {
	r, path, _ := ktRun(t, hostengine.New(), "--engine", "host", "-b", "1K", "-e", "1K")
	want := "all_reduce_perf: RCCL_TESTS_KERNEL_TIMING set but engine host launches no kernels to time: no kernel timing records\n"
	if _, err := os.Stat(path); r.code != exit.OK || err == nil || r.stderr != want {
		t.Errorf("exit %d, stderr %q (want %q), file: %v", r.code, r.stderr, want, err)
	}
}
