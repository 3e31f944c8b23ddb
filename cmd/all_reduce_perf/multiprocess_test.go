package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/internal/syncbuf"
)

// These tests run the real binary as several processes on this machine, as torchrun would start them
// (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), on the host engine: every multi-process path without a GPU.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds all_reduce_perf once for the package's tests.
func binary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary as several processes")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rcclx-mp-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "all_reduce_perf")
		goBin, err := exec.LookPath("go")
		if err != nil {
			goBin = "/usr/local/go/bin/go"
		}
		cmd := exec.Command(goBin, "build", "-o", binPath, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// baseEnv is this environment without any launcher's variables.
func baseEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "RANK", k == "WORLD_SIZE", k == "LOCAL_RANK", k == "LOCAL_WORLD_SIZE", k == "MASTER_ADDR",
			k == "MASTER_PORT", strings.HasPrefix(k, "OMPI_"), strings.HasPrefix(k, "PMI_"),
			strings.HasPrefix(k, "SLURM_"), strings.HasPrefix(k, "RCCLX_TESTS_"):
			continue
		}
		out = append(out, kv)
	}
	return out
}

type proc struct {
	cmd         *exec.Cmd
	out, stderr syncbuf.Buffer
	exited      time.Time
	err         error
	done        chan struct{}
}

// launch starts n processes of the binary with args in dir; env adds variables for every process. With n = 0
// it starts one process without launcher variables.
func launch(t *testing.T, ctx context.Context, dir string, n, port int, env []string, args ...string) []*proc {
	t.Helper()
	return launchEach(t, ctx, dir, n, port, func(int) []string { return env }, args...)
}

// launchEach is launch with the variables added to each rank's given by envOf.
func launchEach(t *testing.T, ctx context.Context, dir string, n, port int, envOf func(rank int) []string, args ...string) []*proc {
	t.Helper()
	bin := binary(t)
	count := max(n, 1)
	procs := make([]*proc, count)
	for r := range count {
		p := &proc{cmd: exec.CommandContext(ctx, bin, args...), done: make(chan struct{})}
		p.cmd.Dir = dir
		p.cmd.Env = append(baseEnv(), envOf(r)...)
		if n > 0 {
			p.cmd.Env = append(p.cmd.Env, "RANK="+strconv.Itoa(r), "WORLD_SIZE="+strconv.Itoa(n),
				"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port))
		}
		p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.stderr
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			p.err = p.cmd.Wait()
			p.exited = time.Now()
			close(p.done)
		}()
		procs[r] = p
	}
	return procs
}

func waitAll(procs []*proc) {
	for _, p := range procs {
		<-p.done
	}
}

func exitCode(p *proc) int {
	if p.cmd.ProcessState == nil {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

type jsonRecord struct {
	Config struct {
		Validation int `json:"validation"`
	} `json:"config"`
	Results []struct {
		Size       int64  `json:"size"`
		Algorithm  string `json:"algorithm"`
		OutOfPlace struct {
			NWrong *float64 `json:"nwrong"`
		} `json:"out_of_place"`
		InPlace struct {
			NWrong *float64 `json:"nwrong"`
		} `json:"in_place"`
	} `json:"results"`
	Errors     []string `json:"errors"`
	Incomplete bool     `json:"incomplete"`
}

func readJSON(t *testing.T, path string) jsonRecord {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rec jsonRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rec
}

// rows renders a record's rows as size, algorithm and #wrong of both halves ("-" where validation did not run).
func rows(rec jsonRecord) []string {
	w := func(v *float64) string {
		if v == nil {
			return "-"
		}
		return strconv.FormatFloat(*v, 'f', -1, 64)
	}
	var out []string
	for _, r := range rec.Results {
		out = append(out, fmt.Sprintf("%d %s %s %s", r.Size, r.Algorithm, w(r.OutOfPlace.NWrong), w(r.InPlace.NWrong)))
	}
	return out
}

// The host engine across 2 and 4 processes gives the rows of a one-process run with as many ranks and the same
// seed: the same sizes and algorithms, every row validated and right; a planted wrong element in one process
// is seen by rank 0's validation.
func TestHostEngineAcrossProcessesMatchesOneProcess(t *testing.T) {
	for _, tc := range []struct {
		n   int
		env []string
	}{
		{2, nil},
		{4, nil},
		{4, []string{"RCCL_DDA_ENABLE=1"}},
		{3, []string{"RCCL_LOW_PRECISION_ENABLE=1", "RCCLX_TESTS_LP_MIN_BYTES=0"}},
	} {
		t.Run(fmt.Sprintf("%dprocs%v", tc.n, tc.env), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			dir := t.TempDir()
			env := append([]string{"RCCLX_TESTS_SEED=12345"}, tc.env...)
			args := []string{"--engine", "host", "-b", "8", "-e", "1M", "-f", "8", "-w", "1", "-n", "3"}
			one := launch(t, ctx, dir, 0, 0, env, append(args, "-g", strconv.Itoa(tc.n), "-J", "one.json")...)
			waitAll(one)
			many := launch(t, ctx, dir, tc.n, freePort(t), env, append(args, "-g", "1", "-J", "many.json")...)
			waitAll(many)
			for r, p := range append(one, many...) {
				if p.err != nil {
					t.Fatalf("process %d: %v\nstderr: %s", r, p.err, p.stderr.String())
				}
			}
			a, b := readJSON(t, filepath.Join(dir, "one.json")), readJSON(t, filepath.Join(dir, "many.json"))
			ra, rb := rows(a), rows(b)
			if b.Config.Validation != 1 || len(rb) < 3 || strings.Join(ra, "\n") != strings.Join(rb, "\n") {
				t.Errorf("one process:\n%s\n%d processes (validation %d):\n%s", strings.Join(ra, "\n"), tc.n,
					b.Config.Validation, strings.Join(rb, "\n"))
			}
			for _, row := range rb {
				if !strings.HasSuffix(row, " 0 0") {
					t.Errorf("row %q: not validated or wrong", row)
				}
			}
		})
	}
	t.Run("planted wrong element", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		dir := t.TempDir()
		procs := launch(t, ctx, dir, 2, freePort(t), []string{"RCCLX_TESTS_CORRUPT_RANK=1"},
			"--engine", "host", "-b", "1K", "-e", "1K", "-g", "1", "-n", "2", "-J", "bad.json")
		waitAll(procs)
		if c := exitCode(procs[0]); c != 7 {
			t.Errorf("rank 0 exit code %d, want 7 (wrong results)", c)
		}
		rec := readJSON(t, filepath.Join(dir, "bad.json"))
		if r := rows(rec); len(r) != 1 || strings.HasSuffix(r[0], " 0 0") || strings.Contains(r[0], "-") {
			t.Errorf("rows %q: want rank 1's planted wrong element counted", r)
		}
	})
}

// kill -9 of one process in a 4-process run mid-sweep ends the others within 2 s, naming its rank and pid and
// the size in progress, exit 2; rank 0 writes the rows done so far to its JSON, marked incomplete.
func TestHostEngineKilledProcessEndsRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	procs := launch(t, ctx, dir, 4, freePort(t), nil,
		"--engine", "host", "-b", "8", "-e", "16M", "-f", "2", "-g", "1", "-w", "1", "-n", "20", "-J", "part.json")
	for start := time.Now(); strings.Count(procs[0].out.String(), "float     sum") < 3; time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("no rows after 30 s; stderr %s", procs[0].stderr.String())
		}
	}
	victim := procs[2]
	pid := victim.cmd.Process.Pid
	killed := time.Now()
	victim.cmd.Process.Kill()
	waitAll(procs)
	want := fmt.Sprintf("rank 2 died or left the run (pid %d;", pid)
	withSize := regexp.MustCompile(regexp.QuoteMeta(want) + `.*\) at all_reduce size (\d+)$`)
	for r, p := range procs {
		if r == 2 {
			continue
		}
		line := strings.TrimSpace(p.stderr.String())
		if took := p.exited.Sub(killed); took > 2*time.Second {
			t.Errorf("rank %d ended %v after the kill, want within 2 s", r, took)
		}
		m := withSize.FindStringSubmatch(line)
		if exitCode(p) != 2 || m == nil || strings.Count(line, "\n") != 0 {
			t.Errorf("rank %d: exit %d, stderr %q: want exit 2 and one line matching %q", r, exitCode(p), line, withSize)
		} else if n, _ := strconv.Atoi(m[1]); n < 64 || n > 16<<20 || n&(n-1) != 0 {
			t.Errorf("rank %d: size %d in %q: want the size of a row after the third (64 B ... 16 MiB)", r, n, line)
		}
	}
	rec := readJSON(t, filepath.Join(dir, "part.json"))
	if !rec.Incomplete || len(rec.Results) < 3 || len(rec.Errors) == 0 || !strings.Contains(rec.Errors[0], want) {
		t.Errorf("rank 0's JSON: incomplete %v, %d rows, errors %q: want the rows so far and the error naming the dead rank",
			rec.Incomplete, len(rec.Results), rec.Errors)
	}
	entries, _ := filepath.Glob("/dev/shm/rcclx-tests-*")
	for _, e := range entries {
		if fi, err := os.Stat(e); err == nil && time.Since(fi.ModTime()) < time.Minute {
			t.Errorf("shared memory left behind: %s", e)
		}
	}
}

// kill -9 of one process while the others are deep in a large size (1 GiB: filling and writing the buffers'
// first pattern, then the warm-up: seconds of work without a wait for another process on a 2-core machine,
// 6-17 s before the others noticed) ends the others within 3 s, each with one line naming the lost rank and
// its pid (and the size, once a row of it has started), exit 2 (a lost process), never 130 (an interrupt);
// rank 0's JSON says why, marked incomplete. Rank 0 sees the dead process's connection close, rank 2 hears
// it from rank 0: both paths are timed. Where memory or /dev/shm cannot hold 3 processes' 1 GiB buffers
// (reserved in /dev/shm up front), it runs 512 or 256 MiB.
func TestHostEngineKilledProcessEndsLongComputation(t *testing.T) {
	size := int64(1 << 30)
	for room := shmAndMemoryRoom(); 3*2*size+(512<<20) > room; size /= 2 {
		if size == 256<<20 {
			t.Skipf("memory and /dev/shm hold %d bytes, too few for 3 processes' 256 MiB buffers", room)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	e := strconv.FormatInt(size>>20, 10) + "M"
	procs := launch(t, ctx, dir, 3, freePort(t), nil,
		"--engine", "host", "-g", "1", "-b", e, "-e", e, "-w", "5", "-n", "1", "-J", "lost.json")
	for start := time.Now(); !strings.Contains(procs[0].out.String(), "# Using devices"); time.Sleep(10 * time.Millisecond) {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("no header after 30 s; stderr %s", procs[0].stderr.String())
		}
	}
	time.Sleep(time.Second) // every process is now setting up its buffers
	victim := procs[1]
	pid := victim.cmd.Process.Pid
	killed := time.Now()
	victim.cmd.Process.Kill()
	waitAll(procs)
	want := fmt.Sprintf(`rank 1 died or left the run \(pid %d;[^)]*\)( at all_reduce size (\d+))?$`, pid)
	reduced := regexp.MustCompile(`# Reducing maxBytes to (\d+) `).FindStringSubmatch(procs[0].out.String())
	for _, r := range []int{0, 2} {
		p := procs[r]
		line := strings.TrimSpace(p.stderr.String())
		took := p.exited.Sub(killed)
		t.Logf("rank %d: exit %d %v after the kill: %s", r, exitCode(p), took.Round(time.Millisecond), line)
		if took > 3*time.Second {
			t.Errorf("rank %d ended %v after the kill, want within 3 s", r, took)
		}
		m := regexp.MustCompile(want).FindStringSubmatch(line)
		if exitCode(p) != 2 || m == nil || strings.Contains(line, "\n") {
			t.Errorf("rank %d: exit %d, stderr %q: want exit 2 and one line matching %q", r, exitCode(p), line, want)
		} else if reduced == nil && m[2] != "" && m[2] != strconv.FormatInt(size, 10) {
			t.Errorf("rank %d: size %s in %q, want %d", r, m[2], line, size)
		}
	}
	rec := readJSON(t, filepath.Join(dir, "lost.json"))
	if !rec.Incomplete || len(rec.Errors) == 0 || !strings.Contains(rec.Errors[0], fmt.Sprintf("rank 1 died or left the run (pid %d;", pid)) {
		t.Errorf("rank 0's JSON: incomplete %v, errors %q: want the error naming the dead rank", rec.Incomplete, rec.Errors)
	}
}

// shmAndMemoryRoom is the least of /dev/shm's free bytes and half of MemAvailable (0 when unknown).
func shmAndMemoryRoom() int64 {
	var st syscall.Statfs_t
	if syscall.Statfs("/dev/shm", &st) != nil {
		return 0
	}
	room := int64(st.Bavail) * st.Bsize
	b, _ := os.ReadFile("/proc/meminfo")
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemAvailable:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return min(room, kb<<10/2)
		}
	}
	return 0
}

// A rank that never calls (RCCLX_TESTS_SKIP_RANK) makes every process end with exit code 4 at -T, the process
// of the skipping rank too, and the waiting processes sleep rather than spin. The planted delay holds the
// ranks that call for 0.3 s before they start waiting: a skipping process that ran ahead into the next
// rendezvous would time out there first and report a silent process 0.
func TestHostEngineTimeoutAcrossProcesses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	procs := launch(t, ctx, t.TempDir(), 4, freePort(t), []string{"RCCLX_TESTS_SKIP_RANK=3", "RCCLX_TESTS_DELAY_US=300000"},
		"--engine", "host", "-b", "1K", "-e", "1K", "-g", "1", "-T", "3")
	start := time.Now()
	waitAll(procs)
	for r, p := range procs {
		line := strings.TrimSpace(p.stderr.String())
		if exitCode(p) != 4 || !strings.HasPrefix(line, "timeout: rank ") {
			t.Errorf("rank %d: exit %d, stderr %q: want exit 4 and the timeout line", r, exitCode(p), line)
		}
		// The processes that wait for it (rank 0's prints the table) name the rank that never arrived, in
		// another process.
		if want := "timeout: rank 3 did not arrive at all_reduce size 1024 ("; r < 3 && !strings.HasPrefix(line, want) {
			t.Errorf("rank %d: stderr %q, want %q...", r, line, want)
		}
		wall := p.exited.Sub(start)
		cpu := p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()
		if cpu > wall/2 {
			t.Errorf("rank %d used %v of CPU in %v: waiting spins", r, cpu, wall)
		}
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("the run took %v with -T 3", el)
	}
}

// A port held by another program: one clear line from every process within 10 s.
func TestPortHeldByAnotherProgram(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	procs := launch(t, ctx, t.TempDir(), 3, ln.Addr().(*net.TCPAddr).Port, nil, "--engine", "host", "-g", "1")
	waitAll(procs)
	for r, p := range procs {
		line := strings.TrimSpace(p.stderr.String())
		if exitCode(p) == 0 || !strings.Contains(line, "another program") || strings.Contains(line, "\n") {
			t.Errorf("rank %d: exit %d, stderr %q: want one line saying another program holds the port", r, exitCode(p), line)
		}
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("took %v, want within 10 s", el)
	}
}

// --ab under launcher variables, on a real engine: each of 2 launched processes starts one worker per arm, the
// arms' workers form worlds of their own (the host engine over shared memory), and the planted per-process
// delay shows in every row, in both arm orders. Arms sharing a process would both see the first value.
func TestABAcrossProcessesHostEngine(t *testing.T) {
	for _, tc := range []struct{ arms, verdict string }{{"0,2000", "slower"}, {"2000,0", "faster"}} {
		t.Run(tc.arms, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			procs := launch(t, ctx, t.TempDir(), 2, freePort(t), nil, "--engine", "host", "-g", "2", "-b", "1K",
				"-e", "64K", "-f", "8", "-n", "3", "--ab-rounds", "7", "--ab", "RCCLX_TESTS_DELAY_US="+tc.arms)
			waitAll(procs)
			for r, p := range procs {
				if p.err != nil {
					t.Fatalf("process %d: %v\nstderr: %s", r, p.err, p.stderr.String())
				}
			}
			var rows []string
			for _, line := range strings.Split(procs[0].out.String(), "\n") {
				if strings.HasPrefix(line, "| ") && strings.Contains(line, "KiB") {
					rows = append(rows, line)
				}
			}
			if len(rows) != 3 {
				t.Fatalf("want 3 A/B rows, got:\n%s", procs[0].out.String())
			}
			for _, row := range rows {
				if !strings.HasSuffix(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(row), "|")), tc.verdict) {
					t.Errorf("row %q: want %s", row, tc.verdict)
				}
			}
			if out := procs[1].out.String(); out != "" {
				t.Errorf("rank 1 printed:\n%s", out)
			}
		})
	}
}

// Processes whose devices compute FP8 in different flavours (gfx942's FNUZ and OCP elsewhere; here the host
// engine told so per process) cannot check FP8 data across them: a sweep with an FP8 type is refused on every
// process, naming the flavours; one without runs.
func TestFP8FlavourAcrossProcesses(t *testing.T) {
	flavour := func(r int) []string { return []string{"RCCLX_TESTS_FP8=" + []string{"fnuz", "ocp"}[r]} }
	for _, tc := range []struct {
		dtype string
		code  int
	}{{"f8e4m3", 2}, {"float", 0}} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		ps := launchEach(t, ctx, t.TempDir(), 2, freePort(t), flavour, "--engine", "host", "-g", "1", "-b", "1K",
			"-e", "1K", "-d", tc.dtype, "-T", "20")
		waitAll(ps)
		cancel()
		for r, p := range ps {
			if code := exitCode(p); code != tc.code {
				t.Errorf("-d %s, rank %d: exit %d, want %d\n%s", tc.dtype, r, code, tc.code, p.stderr.String())
			}
		}
		if want := "process 1's devices compute FP8 in ocp, this process's in fnuz"; tc.code != 0 && !strings.Contains(ps[0].stderr.String(), want) {
			t.Errorf("rank 0's stderr %q, want %q", ps[0].stderr.String(), want)
		}
	}
}
