package harness

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/bench"
	"github.com/rcclx-tests/rcclx-tests/harness/cli"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/harness/report"
	"github.com/rcclx-tests/rcclx-tests/internal/syncbuf"
)

// The rows of docs/RELIABILITY.md. Faults that need a real process (signals, the process environment, exit
// codes through os.Exit, the multi-process rendezvous) re-execute this test binary as a perf binary.

const (
	// childEnv names the collective whose perf binary a re-executed test binary runs (Main, registered engines).
	childEnv = "RCCLX_RELIABILITY_CHILD"
	// childFaultEnv makes the child run the fake engine over the launcher's world instead, and plant a fault
	// before launch number N of this process: "die:N" (SIGKILL itself), "hang:N" (never return) or "none"; or
	// "count": no fault, and a line on stderr at the end with the communicators and buffers it took and gave back.
	childFaultEnv = "RCCLX_RELIABILITY_FAULT"
	// childCgroupEnv points the child at a fake cgroup tree (its "self" file stands for /proc/self/cgroup).
	childCgroupEnv = "RCCLX_RELIABILITY_CGROUP"
	// childGraceEnv sets the child's stopGrace (a duration).
	childGraceEnv = "RCCLX_RELIABILITY_STOP_GRACE"
)

func TestMain(m *testing.M) {
	// The dialect of a refusal must not depend on this machine's GPU driver (TestEarlyDialect sets them).
	cli.DriverFiles.AMD, cli.DriverFiles.NVIDIA = "/nonexistent/kfd", "/nonexistent/nvidiactl"
	if name := os.Getenv(childEnv); name != "" {
		os.Exit(childMain(name, os.Args[1:]))
	}
	os.Exit(m.Run())
}

func childMain(name string, args []string) int {
	var coll *collectives.Collective
	for _, c := range append(collectives.All(), collectives.AllReduceBias) {
		if c.Name == name {
			coll = c
		}
	}
	if g, err := time.ParseDuration(os.Getenv(childGraceEnv)); err == nil {
		stopGrace = g
	}
	if root := os.Getenv(childCgroupEnv); root != "" {
		bench.CgroupRoot, bench.SelfCgroup = root, filepath.Join(root, "self")
	}
	fault := os.Getenv(childFaultEnv)
	if fault == "" {
		return Main(coll, args)
	}
	kind, at, _ := strings.Cut(fault, ":")
	n, _ := strconv.Atoi(at)
	seed, _ := strconv.ParseUint(os.Getenv(plan.SeedEnv), 10, 64)
	p := &probe{Engine: newFake(seed)}
	p.beforeLaunch = func(launch int) {
		switch {
		case launch != n:
		case kind == "die":
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		case kind == "hang":
			select {}
		}
	}
	a := &app{coll: coll, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, environ: os.Environ,
		engines: testSource(p), argv: append([]string{name + "_perf"}, args...), now: time.Now, world: openWorld}
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, stopSignals...)
	a.handleSignals(sig, os.Exit, stdoutClosed)
	code := a.main(args)
	if kind == "count" {
		fmt.Fprintf(os.Stderr, "probe: %d opened %d closed %d allocated %d freed\n", p.opened, p.closed, p.allocs, p.frees)
	}
	return code
}

// probe wraps an engine: it counts communicators and buffers, so that a test sees every exit path give back
// what it took, and calls beforeLaunch (when set) with the number of launches before each one.
type probe struct {
	collectives.Engine
	beforeLaunch func(launch int)
	beforeAlloc  func()

	mu                                      sync.Mutex
	opened, closed, allocs, frees, launches int
}

func (p *probe) Open(cfg collectives.Config) (collectives.Comm, error) {
	c, err := p.Engine.Open(cfg)
	if err != nil {
		return nil, err
	}
	p.count(&p.opened)
	pc := &probeComm{Comm: c, p: p}
	for _, g := range c.Groups() {
		pc.groups = append(pc.groups, probeGroup{g, p})
	}
	return pc, nil
}

func (p *probe) count(n *int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	*n++
	return *n - 1
}

type probeComm struct {
	collectives.Comm
	p      *probe
	groups []collectives.Group
}

func (c *probeComm) Groups() []collectives.Group { return c.groups }
func (c *probeComm) Close() error                { c.p.count(&c.p.closed); return c.Comm.Close() }

type probeGroup struct {
	collectives.Group
	p *probe
}

func (g probeGroup) Alloc(local int, n int64) (collectives.Buffer, error) {
	if g.p.beforeAlloc != nil {
		g.p.beforeAlloc()
	}
	b, err := g.Group.Alloc(local, n)
	if err == nil {
		g.p.count(&g.p.allocs)
	}
	return b, err
}

func (g probeGroup) Free(b collectives.Buffer) error { g.p.count(&g.p.frees); return g.Group.Free(b) }

func (g probeGroup) Launch(c *collectives.Call) error {
	n := g.p.count(&g.p.launches)
	if g.p.beforeLaunch != nil {
		g.p.beforeLaunch(n)
	}
	return g.Group.Launch(c)
}

// TestReliabilityEveryExitFreesEverything: whatever ends the run (success, wrong results, a timeout, an
// interrupt, a failed allocation), every buffer allocated is freed and every communicator opened is closed.
func TestReliabilityEveryExitFreesEverything(t *testing.T) {
	args := []string{"-b", "1K", "-e", "16K", "-f", "4", "-n", "1", "-t", "2", "-g", "2"}
	for _, c := range []struct {
		name  string
		extra []string
		knob  func(e *fakeEngine)
		stop  int // > 0: interrupted after this many halves
		want  int
	}{
		{"ok", nil, nil, 0, exit.OK},
		{"wrong", nil, func(e *fakeEngine) { e.corruptRank = 3 }, 0, exit.TestFailed},
		{"timeout", []string{"-T", "1"}, func(e *fakeEngine) { e.timeoutRank = 2 }, 0, exit.Timeout},
		{"interrupt", nil, nil, 3, exit.Interrupted},
		{"alloc", nil, func(e *fakeEngine) { e.failAlloc = true }, 0, exit.Runtime},
	} {
		t.Run(c.name, func(t *testing.T) {
			seed := rand.Uint64()
			e := newFake(seed)
			if c.knob != nil {
				c.knob(e)
			}
			p := &probe{Engine: e}
			var halves int
			r := runWith(t, collectives.AllReduce, seedArgs(seed, append(args, c.extra...)...), testSource(p),
				func(a *app) {
					a.interrupted = func() bool { halves++; return c.stop > 0 && halves >= c.stop }
				})
			if r.code != c.want {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, c.want, r.stdout, r.stderr)
			}
			if p.allocs == 0 && c.name != "alloc" || p.allocs != p.frees || p.opened == 0 || p.opened != p.closed {
				t.Errorf("%d buffers allocated, %d freed; %d communicators opened, %d closed",
					p.allocs, p.frees, p.opened, p.closed)
			}
		})
	}
}

// TestReliabilityHostHooksEveryCollective: through the perf binaries' path on the host engine, a corrupted
// element on one rank is exactly one wrong element in every checked half (exit 7), and a rank that skips makes
// the run end past -T with one line naming the waiting rank, the collective, the size and the phase (exit 4),
// for every collective and every algorithm family.
func TestReliabilityHostHooksEveryCollective(t *testing.T) {
	for _, c := range []struct {
		coll  *collectives.Collective
		ranks []string // -t and -g: several rank counts and thread layouts over the cases
		flags []string
	}{
		{collectives.AllReduce, []string{"-t", "3"}, nil},
		{collectives.AllGather, []string{"-t", "2", "-g", "2"}, nil},
		{collectives.ReduceScatter, []string{"-g", "5"}, nil},
		{collectives.AllToAll, []string{"-g", "8"}, nil},
		{collectives.AllReduce, []string{"-g", "8"}, []string{"--dda", "-b", "64K", "-e", "64K"}},          // dda_flat
		{collectives.AllReduce, []string{"-t", "2", "-g", "2"}, []string{"--dda", "-b", "1M", "-e", "1M"}}, // dda_tree
		{collectives.ReduceScatter, []string{"-g", "6"}, []string{"--dda"}},
		{collectives.AllGather, []string{"-g", "8"}, []string{"--lp", "-d", "bfloat16", "-E", "RCCLX_TESTS_LP_MIN_BYTES=0"}},
	} {
		base := append(append([]string{"-n", "1", "-w", "0", "-b", "64K", "-e", "64K"}, c.ranks...), c.flags...)
		nranks := 1
		for i := 0; i < len(c.ranks); i += 2 {
			n, _ := strconv.Atoi(c.ranks[i+1])
			nranks *= n
		}
		name := c.coll.Name + strings.Join(c.flags, "")
		t.Run("corrupt/"+name, func(t *testing.T) {
			rank := rand.IntN(nranks)
			r := hostRun(t, c.coll, append(base, "-E", fmt.Sprintf("RCCLX_TESTS_CORRUPT_RANK=%d", rank))...)
			rows := tableRows(r.stdout)
			if r.code != exit.TestFailed || len(rows) != 1 || rows[0][8] != "1" || rows[0][12] != "1" {
				t.Errorf("rank %d: exit %d\n%s%s", rank, r.code, r.stdout, r.stderr)
			}
		})
		t.Run("skip/"+name, func(t *testing.T) {
			rank := rand.IntN(nranks)
			start := time.Now()
			r := hostRun(t, c.coll, append(base, "-T", "1", "-E", fmt.Sprintf("RCCLX_TESTS_SKIP_RANK=%d", rank))...)
			took := time.Since(start)
			// The line names the rank that never arrived, whichever peer gave up waiting for it.
			line := regexp.MustCompile(fmt.Sprintf(`^timeout: rank %d did not arrive at %s size \d+ \(rank \d+ waited in phase .+\) after 1s\n$`,
				rank, c.coll.Name))
			if r.code != exit.Timeout || !line.MatchString(r.stderr) {
				t.Errorf("%d ranks, rank %d skipped: exit %d, stderr %q", nranks, rank, r.code, r.stderr)
			}
			if took > 6*time.Second {
				t.Errorf("took %v with -T 1", took)
			}
		})
	}
}

// TestReliabilityHostMemoryLimit: -e beyond the host's available memory shrinks, with nccl-tests' line; with
// no memory at all the run is refused with one line and exit 2.
func TestReliabilityHostMemoryLimit(t *testing.T) {
	saved := bench.MemAvailable
	t.Cleanup(func() { bench.MemAvailable = saved })
	bench.MemAvailable = func() (int64, error) { return 64 << 20, nil }
	r := hostRun(t, collectives.AllReduce, "-b", "1M", "-e", "1G", "-f", "4", "-g", "2", "-n", "1", "-w", "0")
	m := regexp.MustCompile(`(?m)^# Reducing maxBytes to (\d+) due to memory limitation$`).FindStringSubmatch(r.stdout)
	if r.code != exit.OK || m == nil {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	limit, _ := strconv.ParseInt(m[1], 10, 64)
	rows := tableRows(r.stdout)
	last, _ := strconv.ParseInt(rows[len(rows)-1][0], 10, 64)
	// Validating, the host keeps 10 copies: 4 send/receive buffers, the poison pattern, 2 inputs, 1 expected
	// output and 2 read-back copies.
	if limit*10 > 64<<20 || last > limit || rows[0][8] != "0" {
		t.Errorf("limit %d, last row %d\n%s", limit, last, r.stdout)
	}

	bench.MemAvailable = func() (int64, error) { return 0, nil }
	r = hostRun(t, collectives.AllReduce, "-b", "1M", "-e", "1G", "-g", "2")
	if r.code != exit.Runtime || !strings.HasSuffix(r.stderr, ": not enough memory for any buffer (limit 0 bytes)\n") ||
		strings.Count(r.stderr, "\n") != 1 || len(tableRows(r.stdout)) != 0 {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// proc is this test binary started as a perf binary.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr syncbuf.Buffer
	start          time.Time
	done           chan struct{}
}

// startChild runs coll's perf binary with args in a process of its own; env is added to a copy of this
// process's environment without any launcher's variables. The process is killed when the test ends.
func startChild(t *testing.T, coll string, env []string, args ...string) *proc {
	t.Helper()
	return startCmd(t, exec.Command(os.Args[0], args...), coll, env)
}

// startCmd starts cmd, a command that ends in this test binary running coll's binary, as startChild does.
func startCmd(t *testing.T, cmd *exec.Cmd, coll string, env []string) *proc {
	t.Helper()
	p := &proc{cmd: cmd, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), childEnv+"="+coll, "RANK=", "OMPI_COMM_WORLD_RANK=", "PMI_RANK=", "SLURM_PROCID=")
	p.cmd.Env = append(p.cmd.Env, env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.start = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// waitOutput waits until stdout matches re.
func (p *proc) waitOutput(t *testing.T, re *regexp.Regexp, limit time.Duration) {
	t.Helper()
	for end := time.Now().Add(limit); !re.MatchString(p.stdout.String()); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no %v on stdout after %v\nstdout:\n%s\nstderr:\n%s", re, limit, p.stdout.String(), p.stderr.String())
		}
	}
}

// signalOnceStarted waits for the header's device line of the last rank (lastRank), lets the run go on for
// settle, sends sig, and returns the exit code and how long after the signal the process ended (within limit).
func (p *proc) signalOnceStarted(t *testing.T, lastRank string, settle time.Duration, sig os.Signal,
	limit time.Duration) (int, time.Duration) {
	t.Helper()
	p.waitOutput(t, regexp.MustCompile(`#  Rank  `+lastRank+` `), 30*time.Second)
	time.Sleep(settle)
	sent := time.Now()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	code, _ := p.exit(t, limit)
	return code, time.Since(sent)
}

// exit waits for the process to end and returns its exit code and how long it ran; it fails the test when the
// process is still running after limit.
func (p *proc) exit(t *testing.T, limit time.Duration) (int, time.Duration) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(limit):
		p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("still running after %v\nstdout:\n%s\nstderr:\n%s", limit, p.stdout.String(), p.stderr.String())
	}
	return p.cmd.ProcessState.ExitCode(), time.Since(p.start)
}

var firstRow = regexp.MustCompile(`(?m)^ +\d+ +\d+ +float `)

// TestReliabilitySIGINT: Ctrl-C stops after the current measurement with what completed printed, the trailer,
// partial JSON marked incomplete and exit 130; a second Ctrl-C ends even a run stuck in a collective at once.
func TestReliabilitySIGINT(t *testing.T) {
	file := filepath.Join(t.TempDir(), "r.json")
	p := startChild(t, "all_reduce", nil, "--engine", "host", "-g", "2", "-b", "1K", "-e", "4M", "-f", "2", "-n", "5",
		"-N", "0", "-J", file)
	p.waitOutput(t, firstRow, 30*time.Second)
	p.cmd.Process.Signal(os.Interrupt)
	code, _ := p.exit(t, 20*time.Second)
	rows := tableRows(p.stdout.String())
	if code != exit.Interrupted || len(rows) == 0 || !strings.Contains(p.stdout.String(), "# Collective test concluded") ||
		!strings.HasPrefix(p.stderr.String(), "all_reduce_perf: interrupted: ") || strings.Count(p.stderr.String(), "\n") != 1 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, p.stdout.String(), p.stderr.String())
	}
	if rec := loadRecord(t, file); !rec.Incomplete || len(rec.Results) != len(rows) || len(rec.Errors) != 1 ||
		rec.Errors[0] != report.ErrStopped {
		t.Errorf("JSON: incomplete %v, %d results for %d rows, errors %q", rec.Incomplete, len(rec.Results), len(rows), rec.Errors)
	}

	// Without -T a skipped rank hangs the first row for ever: one Ctrl-C cannot end it, the second does.
	p = startChild(t, "all_reduce", []string{"RCCLX_TESTS_SKIP_RANK=1"}, "--engine", "host", "-g", "2", "-b", "8",
		"-e", "8")
	p.waitOutput(t, regexp.MustCompile(`#  Rank  1 `), 30*time.Second)
	p.cmd.Process.Signal(os.Interrupt)
	time.Sleep(200 * time.Millisecond)
	p.cmd.Process.Signal(os.Interrupt)
	code, _ = p.exit(t, 10*time.Second)
	if code != exit.Interrupted || !strings.HasSuffix(p.stderr.String(), "all_reduce_perf: interrupted again: exiting now\n") {
		t.Errorf("exit %d, stderr %q", code, p.stderr.String())
	}
}

// TestReliabilityProcessEnvironmentHooks: the hooks as the device runs set them, in the process environment
// of the real entry point; the exit code comes through os.Exit.
func TestReliabilityProcessEnvironmentHooks(t *testing.T) {
	p := startChild(t, "reduce_scatter", []string{"RCCLX_TESTS_CORRUPT_RANK=1"}, "--engine", "host", "-g", "2",
		"-b", "1M", "-e", "4M", "-f", "2", "-n", "1")
	code, _ := p.exit(t, 60*time.Second)
	rows := tableRows(p.stdout.String())
	if code != exit.TestFailed || len(rows) != 3 || rows[2][8] != "1" || rows[2][12] != "1" {
		t.Errorf("corrupt: exit %d\n%s%s", code, p.stdout.String(), p.stderr.String())
	}
	file := filepath.Join(t.TempDir(), "r.json")
	p = startChild(t, "all_reduce", []string{"RCCLX_TESTS_SKIP_RANK=1"}, "--engine", "host", "-g", "2", "-b", "1K",
		"-e", "1M", "-f", "1024", "-T", "1", "-J", file)
	code, took := p.exit(t, 20*time.Second)
	if want := "timeout: rank 1 did not arrive at all_reduce size 1048576 (rank 0 waited in phase "; code != exit.Timeout ||
		!strings.HasPrefix(p.stderr.String(), want) || strings.Count(p.stderr.String(), "\n") != 1 || took > 6*time.Second {
		t.Errorf("skip: exit %d after %v, stderr %q", code, took, p.stderr.String())
	}
	if rec := loadRecord(t, file); !rec.Incomplete || len(rec.Results) != 0 || !strings.Contains(rec.Errors[0], "timeout") {
		t.Errorf("JSON: incomplete %v, %d results, errors %q", rec.Incomplete, len(rec.Results), rec.Errors)
	}
}

// TestReliabilityBadInputEndToEnd: bad values through the real entry point: one line naming the flag and the
// value, exit 1 (3 for a library that does not load), nothing on stdout, no JSON file.
func TestReliabilityBadInputEndToEnd(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "r.json")
	lib := filepath.Join(dir, "libnccl.so.2")
	for _, c := range []struct {
		args []string
		want int
		text string
		env  []string
	}{
		{[]string{"-J", file, "-u", "-3"}, exit.Usage, `invalid value "-3" for -u/--unalign`, nil},
		{[]string{"-J", file, "-b", "1X"}, exit.Usage, `invalid argument "1X" for "-b, --minbytes" flag`, nil},
		{[]string{"-J", file, "-b", ".5K", "-e", "1.5"}, exit.Usage, `invalid value ".5K" for -b/--minbytes: larger than -e 1.5 (1 B)`, nil},
		{[]string{"-J", file, "-e", "99999999999G"}, exit.Usage, `"99999999999G" for "-e, --maxbytes" flag`, nil},
		{[]string{"-J", file, "-d", "float7"}, exit.Usage, `invalid value "float7" for -d/--datatype`, nil},
		{[]string{"-J", file, "-o", "xor"}, exit.Usage, `invalid value "xor" for -o/--op`, nil},
		{[]string{"-J", file, "--engine", "cuda9"}, exit.Usage, `invalid value "cuda9" for --engine`, nil},
		{[]string{"-J", filepath.Join(dir, "missing", "r.json")}, exit.Usage, `for -J/--output_file: cannot create `, nil},
		// A file claimed before the bad one is not announced, and is gone.
		{[]string{"-X", file + ".csv", "-Z", "csv", "-J", filepath.Join(dir, "missing", "r.json")}, exit.Usage,
			`for -J/--output_file: cannot create `, nil},
		{[]string{"--engine", "vendor", "--lib", lib}, exit.Library, "tried " + lib + " (", nil},
		// The test hooks, from the process environment, -E or an arm: checked before any file is written.
		{[]string{"-J", file, "-X", file + ".csv", "-Z", "csv", "-g", "2"}, exit.Usage,
			`RCCLX_TESTS_SKIP_RANK="9": want a rank in [0, 2)`, []string{"RCCLX_TESTS_SKIP_RANK=9"}},
		{[]string{"-J", file, "-g", "2"}, exit.Usage, `RCCLX_TESTS_DELAY_US="abc"`, []string{"RCCLX_TESTS_DELAY_US=abc"}},
		{[]string{"-J", file, "-g", "2", "-E", "RCCLX_TESTS_SKIP_RANK=2"}, exit.Usage, `RCCLX_TESTS_SKIP_RANK="2"`, nil},
		{[]string{"-J", file, "-g", "2", "--ab", "RCCLX_TESTS_CORRUPT_RANK=0,7"}, exit.Usage,
			`RCCLX_TESTS_CORRUPT_RANK="7"`, nil},
	} {
		p := startChild(t, "all_gather", c.env, append([]string{"-b", "8", "-e", "8"}, c.args...)...)
		code, _ := p.exit(t, 30*time.Second)
		stderr := p.stderr.String()
		if code != c.want || p.stdout.String() != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.text) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", c.args, code, p.stdout.String(), stderr)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files left: %v", entries)
	}
}

func freeTCPPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

func launcherEnv(rank, size int, port string) []string {
	return []string{"RANK=" + strconv.Itoa(rank), "WORLD_SIZE=" + strconv.Itoa(size), "MASTER_ADDR=127.0.0.1",
		"MASTER_PORT=" + port}
}

// TestReliabilityLoneProcess: a process whose peers never come fails within -T with one line naming itself,
// the rendezvous address and the missing ranks, exit 2, nothing on stdout.
func TestReliabilityLoneProcess(t *testing.T) {
	for rank, want := range []string{"bootstrap: rank 0 waited 1s on 127.0.0.1:%s for ranks [1] to connect",
		"bootstrap: rank 1 could not reach 127.0.0.1:%s within 1s"} {
		port := freeTCPPort(t)
		p := startChild(t, "all_reduce", launcherEnv(rank, 2, port), "--engine", "host", "-b", "8", "-e", "8", "-T", "1")
		code, took := p.exit(t, 20*time.Second)
		stderr := p.stderr.String()
		if code != exit.Runtime || !strings.HasPrefix(stderr, "all_reduce_perf: "+fmt.Sprintf(want, port)) ||
			strings.Count(stderr, "\n") != 1 || p.stdout.String() != "" || took > 6*time.Second {
			t.Errorf("rank %d: exit %d after %v, stderr %q", rank, code, took, stderr)
		}
	}
}

// TestReliabilityPeerProcessFails: in a run of two processes, a process that dies (SIGKILL in the middle of the
// sweep) ends the other one at once (exit 2), and one that hangs ends it within -T as a timeout (exit 4, the
// harness's timeout line with the size); the message names the failed rank.
func TestReliabilityPeerProcessFails(t *testing.T) {
	for _, c := range []struct {
		fault  string
		victim int
		want   string
		code   int
		within time.Duration
	}{
		{"die:5", 1, "bootstrap: rank 1 died or left the run", exit.Runtime, 5 * time.Second},
		{"die:5", 0, "bootstrap: rank 1 lost rank 0 (127.0.0.1:", exit.Runtime, 5 * time.Second},
		{"hang:5", 1, "timeout: process 1 did not answer at all_reduce size ", exit.Timeout, 8 * time.Second},
	} {
		t.Run(fmt.Sprintf("%s-rank%d", c.fault, c.victim), func(t *testing.T) {
			port := freeTCPPort(t)
			seed := strconv.FormatUint(rand.Uint64(), 10)
			var procs [2]*proc
			for rank := range procs {
				env := append(launcherEnv(rank, 2, port), plan.SeedEnv+"="+seed, childFaultEnv+"=none")
				if rank == c.victim {
					env[len(env)-1] = childFaultEnv + "=" + c.fault
				}
				procs[rank] = startChild(t, "all_reduce", env, "-b", "1K", "-e", "1M", "-f", "2", "-n", "2", "-T", "2")
			}
			other := procs[1-c.victim]
			code, took := other.exit(t, 20*time.Second)
			stderr := other.stderr.String()
			if code != c.code || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 ||
				took > c.within {
				t.Errorf("surviving rank: exit %d after %v, stderr %q", code, took, stderr)
			}
		})
	}
}

// TestReliabilityProcessesDisagree: processes of one run started with different arguments or binaries are
// refused by every process (one line, exit 1) before anything runs; each would otherwise run its own sizes,
// types or counts against the others' (a crash, wrong elements or a hang).
func TestReliabilityProcessesDisagree(t *testing.T) {
	for _, c := range []struct {
		colls [2]string
		args  [2][]string
		want  string
	}{
		{[2]string{"all_reduce", "all_reduce"}, [2][]string{nil, {"-d", "double"}},
			`process 1 runs -d/--datatype "double", process 0 "float": every process of a run needs the same ` +
				`binary and arguments (--csv, --lib, -J, --progress, -X, --seed and -T may differ)`},
		{[2]string{"all_reduce", "all_reduce"}, [2][]string{nil, {"-e", "512K"}},
			`process 1 runs -e/--maxbytes "512K", process 0 "64K"`},
		{[2]string{"all_reduce", "broadcast"}, [2][]string{}, "process 1 runs broadcast_perf, process 0 all_reduce_perf"},
	} {
		port := freeTCPPort(t)
		var procs [2]*proc
		for rank := range procs {
			args := append([]string{"-g", "1", "-b", "8", "-e", "64K", "-f", "8", "-T", "10"}, c.args[rank]...)
			procs[rank] = startChild(t, c.colls[rank], launcherEnv(rank, 2, port), args...)
		}
		for rank, p := range procs {
			code, _ := p.exit(t, 20*time.Second)
			stderr := p.stderr.String()
			if code != exit.Usage || p.stdout.String() != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) {
				t.Errorf("%v rank %d: exit %d, stdout %q, stderr %q", c.args, rank, code, p.stdout.String(), stderr)
			}
		}
	}
}
