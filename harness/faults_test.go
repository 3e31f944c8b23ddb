package harness

import (
	"bufio"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/results"
)

// noPartFiles fails when a part file (a result being written) is left in dir.
func noPartFiles(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".part") {
			t.Errorf("part file left: %s", e.Name())
		}
	}
}

// TestSignalHangUp: SIGHUP (a closed terminal, a dropped ssh connection) stops a run as SIGTERM does: the
// trailer, the JSON marked incomplete, exit 129.
func TestSignalHangUp(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "r.json")
	p := startChild(t, "all_reduce", nil, "--engine", "host", "-g", "2", "-b", "1K", "-e", "1M", "-f", "2", "-N", "0",
		"-J", file)
	p.waitOutput(t, firstRow, 30*time.Second)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	code, _ := p.exit(t, 10*time.Second)
	if code != 129 || !strings.Contains(p.stdout.String(), "# Collective test concluded") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, p.stdout.String(), p.stderr.String())
	}
	if rec := loadRecord(t, file); !rec.Incomplete || len(rec.Results) == 0 {
		t.Errorf("JSON: incomplete %v, %d rows", rec.Incomplete, len(rec.Results))
	}
	noPartFiles(t, dir)
}

// TestSignalClosedStdout: `all_reduce_perf -J r.json | head -1`: once standard output has no reader the run
// stops as on SIGTERM, with its JSON (the rows so far, incomplete), exit 141, one line on stderr.
func TestSignalClosedStdout(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "r.json")
	cmd := exec.Command(os.Args[0], "--engine", "host", "-g", "2", "-b", "1K", "-e", "1M", "-f", "2", "-N", "0", "-J", file)
	cmd.Env = append(os.Environ(), childEnv+"=all_reduce", "RANK=", "OMPI_COMM_WORLD_RANK=", "PMI_RANK=", "SLURM_PROCID=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	for sc.Scan() && !firstRow.MatchString(sc.Text()) {
	}
	out.Close() // head -1 has its line
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("still running 20 s after its output closed\nstderr:\n%s", stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 141 || !strings.Contains(stderr.String(), "standard output closed") {
		t.Errorf("exit %d (%v)\nstderr:\n%s", code, cmd.ProcessState, stderr.String())
	}
	if rec := loadRecord(t, file); !rec.Incomplete || len(rec.Results) == 0 {
		t.Errorf("JSON: incomplete %v, %d rows", rec.Incomplete, len(rec.Results))
	}
	noPartFiles(t, dir)
}

// TestSecondSignalLeavesNoPartialFile: a second signal ends a stuck run at once, and neither the -J nor the -X
// name holds a truncated or empty file then (an -X file that was there is kept as it was).
func TestSecondSignalLeavesNoPartialFile(t *testing.T) {
	dir := t.TempDir()
	file, csv := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.csv")
	if err := os.WriteFile(csv, []byte("older\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startChild(t, "all_reduce", []string{childGraceEnv + "=10m", "RCCLX_TESTS_SKIP_RANK=1"}, "--engine", "host",
		"-g", "2", "-b", "8", "-e", "8", "-J", file, "--csv", csv)
	p.waitOutput(t, regexp.MustCompile(`#  Rank  1 `), 30*time.Second)
	for range 2 {
		if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	code, _ := p.exit(t, 10*time.Second)
	if code != exit.Interrupted {
		t.Errorf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	if _, err := os.Stat(file); err == nil {
		if _, err := results.Load(file); err != nil {
			t.Errorf("%s is there but not whole: %v", file, err)
		}
	}
	if data, _ := os.ReadFile(csv); string(data) != "older\n" {
		t.Errorf("the -X file was changed to %q", data)
	}
	noPartFiles(t, dir)
}

// TestSecondSignalWaitsForTheWrite: a second signal while the result files are being written exits only once
// they are complete; before that it gives the unwritten ones up.
func TestSecondSignalWaitsForTheWrite(t *testing.T) {
	dir := t.TempDir()
	a := &app{coll: collectives.AllReduce, stderr: &strings.Builder{}}
	aside, err := results.CreateAside(filepath.Join(dir, "r.json"))
	if err != nil {
		t.Fatal(err)
	}
	a.outputs.Claim(aside)
	sig := make(chan os.Signal, 2)
	exited := make(chan int, 1)
	a.handleSignals(sig, func(code int) { exited <- code }, func() bool { return false })
	a.outputs.Mu.Lock()    // finish is writing
	sig <- syscall.SIGPIPE // stdout is fine: a connection's SIGPIPE is no signal to stop
	sig <- syscall.SIGTERM
	sig <- syscall.SIGINT
	select {
	case <-exited:
		t.Fatal("exited while the result file was being written")
	case <-time.After(200 * time.Millisecond):
	}
	if !a.interrupted() {
		t.Fatal("the first signal did not stop the run")
	}
	if _, err := aside.Commit([]byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	a.outputs.Mu.Unlock()
	if code := <-exited; code != 130 {
		t.Errorf("exit %d", code)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "r.json")); err != nil || string(data) != "{}\n" {
		t.Errorf("the written file: %q %v", data, err)
	}
	noPartFiles(t, dir)
}

// TestSignalDuringSetUp: SIGTERM while the buffers are touched and the inputs and expected values are made
// (seconds at these sizes) ends the run within about a second, with its trailer and JSON.
func TestSignalDuringSetUp(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "r.json")
	p := startChild(t, "all_reduce", []string{childGraceEnv + "=10m"}, "--engine", "host", "-g", "4", "-b", "256M",
		"-e", "256M", "-w", "0", "-n", "1", "-J", file)
	code, took := p.signalOnceStarted(t, "3", 100*time.Millisecond, syscall.SIGTERM, 60*time.Second)
	if code != 143 || took > 1500*time.Millisecond || !strings.Contains(p.stdout.String(), "# Collective test concluded") {
		t.Errorf("exit %d %v after SIGTERM\nstdout:\n%s\nstderr:\n%s", code, took, p.stdout.String(), p.stderr.String())
	}
	t.Logf("ended %v after SIGTERM", took)
	if rec := loadRecord(t, file); !rec.Incomplete {
		t.Errorf("JSON not marked incomplete")
	}
}

// TestInterruptedRowCountsOnce: a one-row run stopped during its in-place half keeps the out-of-place half
// it measured in the table, the JSON and the average bus bandwidth alike.
func TestInterruptedRowCountsOnce(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "r.json")
	// Launch 0 is the out-of-place half's timed call, launch 1 the in-place half's, which never returns.
	p := startChild(t, "all_reduce", []string{childFaultEnv + "=hang:1", childGraceEnv + "=200ms"}, "-g", "2",
		"-b", "1K", "-e", "1K", "-w", "0", "-n", "1", "-c", "0", "-J", file)
	p.waitOutput(t, regexp.MustCompile(`#  Rank  1 `), 30*time.Second)
	time.Sleep(300 * time.Millisecond)
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	code, _ := p.exit(t, 10*time.Second)
	rows := tableRows(p.stdout.String())
	rec := loadRecord(t, file)
	if code != exit.Interrupted || len(rows) != 1 || len(rec.Results) != 1 {
		t.Fatalf("exit %d, %d table rows, %d JSON rows\nstdout:\n%s\nstderr:\n%s", code, len(rows), len(rec.Results),
			p.stdout.String(), p.stderr.String())
	}
	res := rec.Results[0]
	if res.OutOfPlace.Time == nil || res.InPlace.Time != nil {
		t.Fatalf("JSON halves %+v %+v", res.OutOfPlace, res.InPlace)
	}
	if avg := float64(rec.AverageBusBandwidth.Bandwidth); math.Abs(avg-res.OutOfPlace.BusBW) > 1e-9*max(1, avg) {
		t.Errorf("average bus bandwidth %v, the one half's %v", avg, res.OutOfPlace.BusBW)
	}
	if !strings.Contains(p.stdout.String(), "# Avg bus bandwidth") {
		t.Errorf("no trailer:\n%s", p.stdout.String())
	}
}

// TestResultFileDiskFull: a -J record that does not fit on its file system (a tmpfs of 8 KiB the test mounts;
// root only) fails with one line saying the file system is full, and leaves no file under the name.
func TestResultFileDiskFull(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=8k"); err != nil {
		t.Skip("cannot mount a tmpfs (needs root):", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	file := filepath.Join(dir, "r.json")
	r := hostRun(t, collectives.AllReduce, "-b", "8", "-e", "1M", "-f", "2", "-n", "1", "-J", file)
	if r.code != exit.Runtime || !strings.Contains(r.stderr, "file system is full") {
		t.Errorf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left on the full file system: %v", entries)
	}
}

// TestRCCLFileNamedPipeWithoutReader: --csv to a named pipe nobody reads waits for a reader no longer than -T,
// then says the pipe has no reader (exit 1); without -T a signal ends the wait.
func TestRCCLFileNamedPipeWithoutReader(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	start := time.Now()
	r := hostRun(t, collectives.AllReduce, "-b", "8", "-e", "8", "-T", "1", "--csv", fifo)
	if took := time.Since(start); r.code != exit.Usage || !strings.Contains(r.stderr, "no reader") || took > 3*time.Second {
		t.Errorf("-T 1: exit %d after %v\nstderr:\n%s", r.code, took, r.stderr)
	}
	p := startChild(t, "all_reduce", nil, "--engine", "host", "-b", "8", "-e", "8", "--csv", fifo)
	time.Sleep(300 * time.Millisecond)
	sent := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, _ := p.exit(t, 10*time.Second)
	if took := time.Since(sent); code != 143 || !strings.Contains(p.stderr.String(), "no reader") || took > time.Second {
		t.Errorf("SIGTERM: exit %d after %v\nstderr:\n%s", code, took, p.stderr.String())
	}
}

// TestSignalDuringRendezvous: a process waiting for the run's other processes (without -T: for minutes) ends
// within a second of SIGINT, exit 130, saying what it was waiting for.
func TestSignalDuringRendezvous(t *testing.T) {
	for rank := range 2 {
		p := startChild(t, "all_reduce", launcherEnv(rank, 2, freeTCPPort(t)), "--engine", "host", "-T", "0")
		time.Sleep(500 * time.Millisecond)
		sent := time.Now()
		if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		code, _ := p.exit(t, 10*time.Second)
		if took := time.Since(sent); code != exit.Interrupted || took > time.Second ||
			!strings.Contains(p.stderr.String(), "was interrupted while it waited for the other processes") {
			t.Errorf("rank %d: exit %d %v after SIGINT\nstderr:\n%s", rank, code, took, p.stderr.String())
		}
	}
}

// slowPrepare is an engine whose first-use work (Preparer: the GPU engine's kernel compilation) takes a minute.
type slowPrepare struct{ collectives.Engine }

func (e slowPrepare) Open(cfg collectives.Config) (collectives.Comm, error) {
	c, err := e.Engine.Open(cfg)
	return slowPrepareComm{c}, err
}

type slowPrepareComm struct{ collectives.Comm }

func (slowPrepareComm) Prepare(*collectives.Collective, []collectives.DType, []collectives.Op, func(string)) error {
	time.Sleep(time.Minute)
	return nil
}

// TestSignalDuringEnginePreparation: a signal while the engine does its first-use work (minutes of kernel
// compilation on a GPU) ends the run at once, exit 130, the JSON marked incomplete.
func TestSignalDuringEnginePreparation(t *testing.T) {
	file := filepath.Join(t.TempDir(), "r.json")
	seed := uint64(7)
	start := time.Now()
	r := runWith(t, collectives.AllReduce, seedArgs(seed, "-b", "8", "-e", "8", "-J", file),
		fakeSource(slowPrepare{newFake(seed)}), func(a *app) {
			sig := make(chan os.Signal, 1)
			a.handleSignals(sig, func(int) {}, func() bool { return false })
			time.AfterFunc(300*time.Millisecond, func() { sig <- os.Interrupt })
		})
	if took := time.Since(start); r.code != exit.Interrupted || took > 5*time.Second {
		t.Errorf("exit %d after %v\nstdout:\n%s\nstderr:\n%s", r.code, took, r.stdout, r.stderr)
	}
	if rec := loadRecord(t, file); !rec.Incomplete {
		t.Errorf("JSON not marked incomplete")
	}
}
