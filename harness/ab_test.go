package harness

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/bench"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/results"
)

// plantedDelayUS is the delay the A/B tests plant in one arm with RCCLX_TESTS_DELAY_US, a variable read once per
// process: two communicators in one process would both run without it.
const plantedDelayUS = 2000

// TestABArmsInProcessesOfTheirOwn: --ab RCCLX_TESTS_DELAY_US=0,2000 on the host engine must find the planted
// delay in arm B at every size (slower, by the planted time), and in arm A with the arms swapped (faster); both
// arms ran the same algorithm, which the verdict says. The JSON has both arms' rows and their workers' pids.
func TestABArmsInProcessesOfTheirOwn(t *testing.T) {
	for _, c := range []struct {
		values, verdict string
		delayed         int // the arm with the delay
	}{
		{"0," + strconv.Itoa(plantedDelayUS), results.VerdictSlower, 1},
		{strconv.Itoa(plantedDelayUS) + ",0", results.VerdictFaster, 0},
	} {
		t.Run(c.values, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "ab.json")
			r := hostRun(t, collectives.AllReduce, "-g", "2", "-b", "8", "-e", "512", "-f", "8", "-n", "5", "-w", "1",
				"--ab", collectives.EnvDelayUS+"="+c.values, "--ab-rounds", "7", "-J", file)
			if r.code != exit.OK || !strings.Contains(r.stdout, "each arm runs in worker processes of its own") {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if n := strings.Count(r.stdout, " same algorithm (ring): "+c.verdict+" |"); n != 3 {
				t.Errorf("%d rows say %q, want 3:\n%s", n, c.verdict, r.stdout)
			}
			rec := loadRecord(t, file)
			if rec.AB == nil || len(rec.AB.Rows) != 3 {
				t.Fatalf("ab key: %+v", rec.AB)
			}
			for _, row := range rec.AB.Rows {
				times := [2]float64{row.TimeA, row.TimeB}
				extra := times[c.delayed] - times[1-c.delayed]
				planted := times[0] / times[1]
				if row.Verdict != c.verdict || extra < 0.75*plantedDelayUS || extra > 3*plantedDelayUS ||
					row.Speedup != planted && (row.Speedup/planted < 1-1e-9 || row.Speedup/planted > 1+1e-9) {
					t.Errorf("size %d: %s, speedup %.4f, arms %.1f and %.1f us: want the delayed arm %.0f us slower",
						row.Size, row.Verdict, row.Speedup, row.TimeA, row.TimeB, float64(plantedDelayUS))
				}
			}
			checkABRecord(t, rec, 6)
		})
	}
}

// checkABRecord: both arms' rows, in order, and the pids of two distinct workers, neither this process.
func checkABRecord(t *testing.T, rec *results.Record, rows int) {
	t.Helper()
	if len(rec.Results) != rows {
		t.Fatalf("%d results, want %d", len(rec.Results), rows)
	}
	for i, res := range rec.Results {
		if want := rec.AB.Arms[i*2/rows]; res.ExperimentName != want {
			t.Errorf("result %d is arm %q, want %q", i, res.ExperimentName, want)
		}
	}
	a, b := rec.AB.Pids[0], rec.AB.Pids[1]
	if len(a) == 0 || len(b) != len(a) || slices.Contains(append(a, b...), os.Getpid()) || slices.ContainsFunc(a, func(p int) bool {
		return slices.Contains(b, p)
	}) || rec.Config.Devices[0].Pid != a[0] {
		t.Errorf("pids A %v B %v, devices %+v, this process %d", a, b, rec.Config.Devices, os.Getpid())
	}
}

// TestABValidation: each arm's workers validate their own output: a corrupted element in each arm is one wrong
// element per arm and size, the trailer fails and the exit code is 7, as in a plain run.
func TestABValidation(t *testing.T) {
	file := filepath.Join(t.TempDir(), "ab.json")
	r := hostRun(t, collectives.AllGather, "-g", "2", "-b", "1K", "-e", "4K", "-f", "4", "-n", "1", "--ab-rounds", "2",
		"--ab", collectives.EnvCorruptRank+"=1,0", "-J", file)
	for _, size := range []string{"1024", "4096"} {
		if want := "# float none, size " + size + ": #wrong RCCLX_TESTS_CORRUPT_RANK=1 1, RCCLX_TESTS_CORRUPT_RANK=0 1\n"; !strings.Contains(r.stdout, want) {
			t.Errorf("no %q", want)
		}
	}
	if r.code != exit.TestFailed || !strings.Contains(r.stdout, "# Out of bounds values : 4 FAILED") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	rec := loadRecord(t, file)
	if rec.OutOfBounds.Count != 4 || len(rec.Results) != 4 || rec.Results[3].OutOfPlace.NWrong == nil ||
		*rec.Results[3].OutOfPlace.NWrong != 1 {
		t.Errorf("JSON: %d out of bounds, results %+v", rec.OutOfBounds.Count, rec.Results)
	}
}

// TestABWorkersFreeEverything: each arm's worker gives back its communicator and every buffer before it exits
// at the end of the run (a counting wrapper engine in the workers reports what it saw).
func TestABWorkersFreeEverything(t *testing.T) {
	seed := rand.Uint64()
	r := runWith(t, collectives.AllReduce, seedArgs(seed, "-b", "1K", "-e", "16K", "-f", "4", "-n", "1", "-t", "2", "-g", "2",
		"--ab", "FAKE_ALGO=a,b", "--ab-rounds", "2"), testSource(newFake(seed)), func(a *app) {
		a.workerEnv = append(a.workerEnv, childFaultEnv+"=count")
	})
	lines := regexp.MustCompile(`(?m)^probe: (\d+) opened (\d+) closed (\d+) allocated (\d+) freed$`).FindAllStringSubmatch(r.stderr, -1)
	if r.code != exit.OK || len(lines) != 2 {
		t.Fatalf("exit %d, %d probe lines\n%s%s", r.code, len(lines), r.stdout, r.stderr)
	}
	for _, m := range lines {
		if m[1] != "1" || m[2] != "1" || m[3] == "0" || m[3] != m[4] {
			t.Errorf("a worker: %s", m[0])
		}
	}
}

// TestABTimeoutNamesArm: -T ends a run whose arm hangs (a rank skips every call) with the timeout line, naming
// the size and the arm, exit 4.
func TestABTimeoutNamesArm(t *testing.T) {
	start := time.Now()
	r := hostRun(t, collectives.AllReduce, "-g", "2", "-b", "1K", "-e", "1K", "-T", "1", "-E", "RCCLX_TESTS_SKIP_RANK=1",
		"--ab", collectives.EnvDelayUS+"=0,1")
	want := regexp.MustCompile(`^timeout: rank 1 did not arrive at all_reduce size 1024 \(rank 0 waited in phase .* \(arm A, RCCLX_TESTS_DELAY_US=0\)\) after 1s\n$`)
	if r.code != exit.Timeout || !want.MatchString(r.stderr) || time.Since(start) > 10*time.Second {
		t.Errorf("exit %d after %v, stderr %q", r.code, time.Since(start), r.stderr)
	}
}

// abChild starts an A/B run of the host engine in a process of its own that runs until stopped, and returns it
// with its workers' pids once the first size is done.
func abChild(t *testing.T, file string) (*proc, [2]int) {
	t.Helper()
	p := startChild(t, "all_reduce", nil, "--engine", "host", "-g", "2", "-b", "8", "-e", "64K", "-i", "8", "-n", "2",
		"--ab", collectives.EnvDelayUS+"=0,"+strconv.Itoa(plantedDelayUS), "--ab-rounds", "2", "-J", file)
	p.waitOutput(t, regexp.MustCompile(`(?m)^# float sum, size 8: #wrong`), 30*time.Second)
	m := regexp.MustCompile(`\(A: pid (\d+), B: pid (\d+)\)`).FindStringSubmatch(p.stdout.String())
	if m == nil {
		t.Fatalf("no pids in the header:\n%s", p.stdout.String())
	}
	var pids [2]int
	for i := range pids {
		pids[i], _ = strconv.Atoi(m[1+i])
	}
	return p, pids
}

// gone reports whether no process has pid (the run reaped its workers before it exited).
func gone(pid int) bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }

// TestABWorkerDies: a worker killed in the middle of the run ends it within 2 s with one line naming the arm,
// its rank and the worker; exit 2; the JSON has the sizes done, marked incomplete, and the pids.
func TestABWorkerDies(t *testing.T) {
	for victim, name := range []string{"A", "B"} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "ab.json")
			p, pids := abChild(t, file)
			killed := time.Now()
			if err := syscall.Kill(pids[victim], syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			code, _ := p.exit(t, 20*time.Second)
			took := time.Since(killed)
			stderr := p.stderr.String()
			want := "all_reduce_perf: arm " + name + " (" + collectives.EnvDelayUS + "=" + []string{"0", strconv.Itoa(plantedDelayUS)}[victim] +
				") rank 0: worker process " + strconv.Itoa(pids[victim]) + " died (signal: killed)\n"
			if code != exit.Runtime || stderr != want || took > 2*time.Second {
				t.Errorf("exit %d %v after the kill, stderr %q, want %q", code, took, stderr, want)
			}
			if !gone(pids[1-victim]) {
				t.Errorf("the other worker (%d) outlived the run", pids[1-victim])
			}
			rec := loadRecord(t, file)
			if !rec.Incomplete || rec.AB == nil || len(rec.AB.Rows) == 0 || len(rec.Results) != 2*len(rec.AB.Rows) ||
				!strings.Contains(rec.Errors[0], "died") || rec.AB.Pids[victim][0] != pids[victim] {
				t.Errorf("JSON: incomplete %v, errors %q, ab %+v, %d results", rec.Incomplete, rec.Errors, rec.AB, len(rec.Results))
			}
		})
	}
}

// TestABInterrupt: Ctrl-C on the launching process stops the run after the current size: the table of the
// sizes done, the trailer, partial JSON, exit 130, and no worker left.
func TestABInterrupt(t *testing.T) {
	file := filepath.Join(t.TempDir(), "ab.json")
	p, pids := abChild(t, file)
	p.cmd.Process.Signal(os.Interrupt)
	code, _ := p.exit(t, 20*time.Second)
	out := p.stdout.String()
	if code != exit.Interrupted || !strings.Contains(out, " same algorithm (ring): ") ||
		!strings.Contains(out, "# Collective test concluded") || !gone(pids[0]) || !gone(pids[1]) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, p.stderr.String())
	}
	if rec := loadRecord(t, file); !rec.Incomplete || rec.AB == nil || len(rec.Results) != 2*len(rec.AB.Rows) {
		t.Errorf("JSON: incomplete %v, %d results", rec.Incomplete, len(rec.Results))
	}
}

// TestABAcrossProcesses: two launched processes (torchrun's variables) each start both arms' workers; each
// arm's workers meet in a world of their own (2 processes, 4 ranks), separate from the other arm's and from the
// launchers'. The fake engine stands in for an engine that runs across processes.
func TestABAcrossProcesses(t *testing.T) {
	port := freeTCPPort(t)
	seed := strconv.FormatUint(rand.Uint64(), 10)
	file := filepath.Join(t.TempDir(), "ab.json")
	var procs [2]*proc
	for rank := range procs {
		env := append(launcherEnv(rank, 2, port), plan.SeedEnv+"="+seed, childFaultEnv+"=none")
		procs[rank] = startChild(t, "all_reduce", env, "-g", "2", "-b", "1K", "-e", "4K", "-f", "2", "-n", "2",
			"--ab", "FAKE_ALGO=ring,tree", "--ab-rounds", "2", "-J", file, "-T", "10")
	}
	for rank, p := range procs {
		if code, _ := p.exit(t, 60*time.Second); code != exit.OK || (rank == 1) != (p.stdout.String() == "") {
			t.Fatalf("rank %d: exit %d\nstdout:\n%s\nstderr:\n%s", rank, code, p.stdout.String(), p.stderr.String())
		}
	}
	out := procs[0].stdout.String()
	if !strings.Contains(out, "# B Algorithm: tree") || strings.Count(out, "#  Rank ") != 4 ||
		!strings.Contains(out, "| speedup A/B (geomean of per-cycle time ratios) |") {
		t.Errorf("output:\n%s", out)
	}
	rec := loadRecord(t, file)
	checkABRecord(t, rec, 6)
	launchers := []int{procs[0].cmd.Process.Pid, procs[1].cmd.Process.Pid}
	for i, pids := range rec.AB.Pids {
		if len(pids) != 2 || pids[0] == pids[1] || slices.Contains(launchers, pids[0]) || slices.Contains(launchers, pids[1]) {
			t.Errorf("arm %d: pids %v (launchers %v)", i, pids, launchers)
		}
	}
	if len(rec.Config.Devices) != 4 || rec.Config.Devices[3].Pid != rec.AB.Pids[0][1] {
		t.Errorf("devices %+v", rec.Config.Devices)
	}
}

// stuckABLaunchers starts an A/B run of two launching processes of -g g each, whose rank 0's workers hang at
// their sixth launch.
func stuckABLaunchers(t *testing.T, g string) [2]*proc {
	port := freeTCPPort(t)
	seed := strconv.FormatUint(rand.Uint64(), 10)
	var procs [2]*proc
	for rank, fault := range []string{"hang:5", "none"} {
		env := append(launcherEnv(rank, 2, port), plan.SeedEnv+"="+seed, childFaultEnv+"="+fault)
		procs[rank] = startChild(t, "all_reduce", env, "-g", g, "-b", "1K", "-e", "4K", "-f", "2", "-n", "2",
			"--ab", "FAKE_ALGO=ring,tree")
	}
	return procs
}

// TestABOtherLaunchersWorkerDies: when a worker of another launching process dies, that process says why, and
// rank 0 (whose table and JSON the user reads) reports the same cause: the arm, the rank and the worker's pid.
func TestABOtherLaunchersWorkerDies(t *testing.T) {
	procs := stuckABLaunchers(t, "1")
	m := regexp.MustCompile(`\(A: pid \d+,(\d+), B: pid \d+,\d+\)`)
	procs[0].waitOutput(t, m, 30*time.Second)
	pid, _ := strconv.Atoi(m.FindStringSubmatch(procs[0].stdout.String())[1])
	time.Sleep(300 * time.Millisecond)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("arm A (FAKE_ALGO=ring) rank 1: worker process %d died (signal: killed)", pid)
	for rank, p := range procs {
		code, _ := p.exit(t, 20*time.Second)
		if stderr := p.stderr.String(); code != exit.Runtime || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, want) {
			t.Errorf("rank %d: exit %d, stderr %q, want %q", rank, code, stderr, want)
		}
	}
}

// TestABProcessLost: in a run of two processes, when one launching process dies while the other's worker is
// stuck (in a collective whose peers are gone, without -T), the survivor ends within 2 s, exit 2, naming the
// process that died, and ends its workers.
func TestABProcessLost(t *testing.T) {
	procs := stuckABLaunchers(t, "2")
	m := regexp.MustCompile(`\(A: pid (\d+),\d+, B: pid (\d+),\d+\)`)
	procs[0].waitOutput(t, m, 30*time.Second)
	time.Sleep(300 * time.Millisecond) // rank 0's arm A is stuck by now
	procs[1].cmd.Process.Kill()
	killed := time.Now()
	code, _ := procs[0].exit(t, 20*time.Second)
	took := time.Since(killed)
	stderr := procs[0].stderr.String()
	if code != exit.Runtime || took > 2*time.Second || strings.Count(stderr, "\n") != 1 ||
		!strings.Contains(stderr, fmt.Sprintf("bootstrap: rank 1 died or left the run (pid %d;", procs[1].cmd.Process.Pid)) {
		t.Errorf("exit %d %v after the kill, stderr %q", code, took, stderr)
	}
	for _, s := range m.FindStringSubmatch(procs[0].stdout.String())[1:] {
		if pid, _ := strconv.Atoi(s); !gone(pid) {
			t.Errorf("worker %d outlived the run", pid)
		}
	}
}

func TestWithoutAB(t *testing.T) {
	got := withoutAB([]string{"-g", "2", "--ab", "K=1,2", "--ab-rounds=3", "-b", "8", "--ab=K=1,2", "--ab-rounds", "4",
		"--ab-strict", "-E", "X=1", "--ab-strict=true"})
	if strings.Join(got, " ") != "-g 2 -b 8 -E X=1" {
		t.Errorf("withoutAB = %q", got)
	}
	if got := withoutAB([]string{"-g", "2", "--", "--ab", "x"}); strings.Join(got, " ") != "-g 2 -- --ab x" {
		t.Errorf("after --: %q", got)
	}
	// The workers' --seed goes before the user's "--", which ends the flags.
	r := hostRun(t, collectives.AllReduce, "-g", "2", "-b", "1K", "-e", "1K", "-n", "1", "--ab", "RCCLX_TESTS_DELAY_US=0,1",
		"--ab-rounds", "2", "--")
	if r.code != exit.OK {
		t.Errorf("with --: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestABIgnoredFlags: -N, -I, -K and -q, which the header says --ab ignores, reach neither the workers' timing
// (no per-iteration report in arm A's header lines) nor the JSON's configuration.
func TestABIgnoredFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "ab.json")
	r := testRun(t, collectives.AllReduce, seedArgs(rand.Uint64(), "-b", "1K", "-e", "1K", "-n", "3", "-g", "2",
		"-N", "2", "-I", "1", "-K", "1", "-q", "5", "--ab", "FAKE_ALGO=a,b", "--ab-rounds", "2", "-J", file), newFake(0))
	if r.code != exit.OK {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, f := range []string{"-N 2", "-I 1", "-K 1", "-q 5"} {
		if n := strings.Count(r.stdout, "# "+f+" ignored: --ab runs --ab-rounds interleaved rounds per size instead\n"); n != 1 {
			t.Errorf("%d notes for %s", n, f)
		}
	}
	if strings.Contains(r.stdout, "Per-Iteration") || strings.Count(r.stdout, "ignored") != 4 {
		t.Errorf("a worker applied an ignored flag, or noted it for another reason:\n%s", r.stdout)
	}
	if c := loadRecord(t, file).Config; c.PerIterTime != "false" || c.PerIterSkip != 0 {
		t.Errorf("JSON config: per_iter_timing %s, per_iter_skip %d", c.PerIterTime, c.PerIterSkip)
	}
}

// TestABRowsNameTypeOpRoot: each A/B row in the JSON names its type, reduction and root, in the sweep's order.
func TestABRowsNameTypeOpRoot(t *testing.T) {
	var reductions []string
	for _, op := range []string{"sum", "prod", "max", "min", "avg", "mulsum"} {
		reductions = append(reductions, "half "+op+" -1 1024", "half "+op+" -1 2048")
	}
	for _, c := range []struct {
		coll *collectives.Collective
		args []string
		want string
	}{
		{collectives.AllReduce, []string{"-o", "all", "-d", "half"}, strings.Join(reductions, ", ")},
		{collectives.Broadcast, []string{"-r", "-1"}, "float none 0 1024, float none 0 2048, float none 1 1024, float none 1 2048"},
	} {
		file := filepath.Join(t.TempDir(), "ab.json")
		r := hostRun(t, c.coll, append(c.args, "-b", "1K", "-e", "2K", "-f", "2", "-n", "1", "-w", "0", "-g", "2",
			"--ab", collectives.EnvDelayUS+"=0,1", "--ab-rounds", "2", "-J", file)...)
		if r.code != exit.OK {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		var got []string
		for _, row := range loadRecord(t, file).AB.Rows {
			got = append(got, fmt.Sprintf("%s %s %d %d", row.Type, row.Redop, row.Root, row.Size))
		}
		if strings.Join(got, ", ") != c.want {
			t.Errorf("%s rows: %s\nwant %s", c.coll.Name, strings.Join(got, ", "), c.want)
		}
	}
}

// TestABNoRowsIsEmptyList: a run whose worker dies before any size is done writes "rows": [], not null.
func TestABNoRowsIsEmptyList(t *testing.T) {
	file := filepath.Join(t.TempDir(), "ab.json")
	seed := rand.Uint64()
	r := runWith(t, collectives.AllReduce, seedArgs(seed, "-b", "1K", "-e", "1K", "-n", "1", "--ab", "FAKE_ALGO=a,b",
		"-J", file), testSource(newFake(seed)), func(a *app) { a.workerEnv = append(a.workerEnv, childFaultEnv+"=die:0") })
	rec := loadRecord(t, file)
	if r.code != exit.Runtime || !rec.Incomplete || rec.AB == nil || rec.AB.Rows == nil || len(rec.AB.Rows) != 0 {
		t.Errorf("exit %d, JSON incomplete %v, ab %+v\n%s%s", r.code, rec.Incomplete, rec.AB, r.stdout, r.stderr)
	}
}

// Arms whose engines cannot run the collective: one reason where both give it, else each arm's own.
func TestABCannotRun(t *testing.T) {
	run := func(a, b string) string {
		r := &abRun{arms: [2]*abArm{{name: "A", ready: &bench.Ready{CannotRun: a}}, {name: "B", ready: &bench.Ready{CannotRun: b}}}}
		return r.cannotRun()
	}
	for _, x := range [][3]string{
		{"", "", ""},
		{"no call", "no call", "no call"},
		{"", "no call", "arm B: no call"},
		{"x", "y", "arm A: x; arm B: y"},
	} {
		if got := run(x[0], x[1]); got != x[2] {
			t.Errorf("cannotRun(%q, %q) = %q, want %q", x[0], x[1], got, x[2])
		}
	}
}
