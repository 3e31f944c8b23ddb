package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
)

// realCgroup is a memory cgroup a test created (cgroup v2 where the unified hierarchy has the memory
// controller, else v1); the test's cleanup removes it.
type realCgroup struct {
	dir    string
	v2     bool
	handed string // the subtree_control file the test turned the memory controller on in, to turn it off after
}

// newRealCgroup creates a memory cgroup limited to limit bytes, or skips the test saying why it cannot.
func newRealCgroup(t *testing.T, limit int64) *realCgroup {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("creating a memory cgroup needs root")
	}
	name := fmt.Sprintf("rcclx-tests-%d-%d", os.Getpid(), time.Now().UnixNano())
	var c *realCgroup
	for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		ctl, err := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
		if err != nil || !strings.Contains(" "+strings.TrimSpace(string(ctl))+" ", " memory ") {
			continue
		}
		// The children of root get the memory controller only where root hands it down.
		sub := filepath.Join(root, "cgroup.subtree_control")
		c = &realCgroup{dir: filepath.Join(root, name), v2: true}
		if on, _ := os.ReadFile(sub); !strings.Contains(string(on), "memory") {
			if os.WriteFile(sub, []byte("+memory"), 0o644) != nil {
				c = nil
				continue
			}
			c.handed = sub
		}
		break
	}
	if c == nil {
		if _, err := os.Stat("/sys/fs/cgroup/memory/memory.limit_in_bytes"); err != nil {
			t.Skip("no cgroup memory controller here")
		}
		c = &realCgroup{dir: filepath.Join("/sys/fs/cgroup/memory", name)}
	}
	if err := os.Mkdir(c.dir, 0o755); err != nil {
		if c.handed != "" {
			_ = os.WriteFile(c.handed, []byte("-memory"), 0o644)
		}
		t.Skip("cannot create a memory cgroup:", err)
	}
	t.Cleanup(func() {
		if c.handed != "" {
			defer os.WriteFile(c.handed, []byte("-memory"), 0o644)
		}
		for range 50 { // the last process may still be leaving
			if err := os.Remove(c.dir); err == nil || os.IsNotExist(err) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("cgroup %s not removed", c.dir)
	})
	file, v := "memory.limit_in_bytes", strconv.FormatInt(limit, 10)
	if c.v2 {
		file = "memory.max"
		_ = os.WriteFile(filepath.Join(c.dir, "memory.swap.max"), []byte("0"), 0o644)
	}
	if err := os.WriteFile(filepath.Join(c.dir, file), []byte(v), 0o644); err != nil {
		t.Skip("cannot limit the cgroup's memory:", err)
	}
	return c
}

// start runs this test binary as coll's perf binary inside the cgroup (it joins before it starts).
func (c *realCgroup) start(t *testing.T, coll string, env []string, args ...string) *proc {
	t.Helper()
	return startCmd(t, exec.Command("/bin/sh", append([]string{"-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, c.dir,
		os.Args[0]}, args...)...), coll, env)
}

// oomKills is the number of processes the kernel's OOM killer ended in the cgroup.
func (c *realCgroup) oomKills(t *testing.T) int {
	t.Helper()
	file := "memory.oom_control"
	if c.v2 {
		file = "memory.events"
	}
	data, err := os.ReadFile(filepath.Join(c.dir, file))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "oom_kill" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// cgroupMiB is the memory cgroup the measured runs share: small enough that every run's -e of 1 GiB on 4
// ranks is reduced, large enough for the Go runtime and a few MiB of rows.
const cgroupMiB = 640

// TestMemoryPlanInRealCgroup: every perf binary, and all_reduce in both low-precision modes, run on 4
// host-engine ranks with -b and -e 1G inside a real memory cgroup of 640 MiB: each reduces the size (nccl-tests'
// line), is never OOM-killed, and writes a complete JSON. The plan must count every buffer of the collective
// and mode, the engine's scratch included, for this to hold.
func TestMemoryPlanInRealCgroup(t *testing.T) {
	cg := newRealCgroup(t, cgroupMiB*mib)
	type runCase struct {
		coll string
		args []string
	}
	var cases []runCase
	for _, c := range collectives.All() {
		cases = append(cases, runCase{c.Name, nil})
	}
	cases = append(cases, runCase{"all_reduce", []string{"--lp"}}, runCase{"all_reduce", []string{"--lp", "--lp-mode", "scaled"}})
	dir := t.TempDir()
	for i, c := range cases {
		file := filepath.Join(dir, fmt.Sprintf("r%d.json", i))
		args := append([]string{"--engine", "host", "-g", "4", "-b", "1G", "-e", "1G", "-w", "0", "-n", "1", "-J", file}, c.args...)
		p := cg.start(t, c.coll, nil, args...)
		code, took := p.exit(t, 120*time.Second)
		what := c.coll + " " + strings.Join(c.args, " ")
		if kills := cg.oomKills(t); kills != 0 || code != exit.OK {
			t.Fatalf("%s: exit %d, %d OOM kills in the cgroup (%v)\nstdout:\n%s\nstderr:\n%s", what, code, kills, took,
				p.stdout.String(), p.stderr.String())
		}
		if !strings.Contains(p.stdout.String(), "# Reducing maxBytes to ") {
			t.Errorf("%s: size not reduced", what)
		}
		if rec := loadRecord(t, file); rec.Incomplete || len(rec.Results) != 1 {
			t.Errorf("%s: JSON incomplete %v, %d rows", what, rec.Incomplete, len(rec.Results))
		}
		t.Logf("%s: %v", what, took.Round(10*time.Millisecond))
	}
}

// TestMemoryPlanSharedByProcessesOfOneHost: the processes of one run on one host (3 on 127.0.0.1, 2 host-engine
// ranks each, in one real memory cgroup) share its room: each plans for its part, none is OOM-killed, and
// rank 0 writes a complete JSON. Each planning for the whole room would take three times the memory.
func TestMemoryPlanSharedByProcessesOfOneHost(t *testing.T) {
	cg := newRealCgroup(t, cgroupMiB*mib)
	port := freeTCPPort(t)
	file := filepath.Join(t.TempDir(), "r.json")
	var ps []*proc
	for rank := range 3 {
		ps = append(ps, cg.start(t, "all_reduce", launcherEnv(rank, 3, port), "--engine", "host", "-g", "2", "-b", "1G",
			"-e", "1G", "-w", "0", "-n", "1", "-T", "60", "-J", file))
	}
	for rank, p := range ps {
		if code, _ := p.exit(t, 120*time.Second); code != exit.OK {
			t.Errorf("rank %d: exit %d\nstdout:\n%s\nstderr:\n%s", rank, code, p.stdout.String(), p.stderr.String())
		}
	}
	if kills := cg.oomKills(t); kills != 0 {
		t.Errorf("%d OOM kills", kills)
	}
	if !strings.Contains(ps[0].stdout.String(), "# Reducing maxBytes to ") {
		t.Errorf("size not reduced:\n%s", ps[0].stdout.String())
	}
	if rec := loadRecord(t, file); rec.Incomplete || len(rec.Results) != 1 {
		t.Errorf("JSON incomplete %v, %d rows", rec.Incomplete, len(rec.Results))
	}
}

// TestMemoryPlanUnderAddressSpaceLimit: under an address-space limit (RLIMIT_AS: `ulimit -v`), with and without
// a GOMEMLIMIT far above it, a sweep to 1 GiB on 4 host ranks is reduced to what the address space holds and
// ends normally with a complete JSON (3 GB), or, where the Go runtime's own reservations leave too little
// (2 GB: it maps 1.2 GB at start and 72 MiB per heap arena), with the plan's one line; never in the runtime's
// "out of memory".
func TestMemoryPlanUnderAddressSpaceLimit(t *testing.T) {
	dir := t.TempDir()
	for i, c := range []struct{ kb, gomemlimit string }{{"3000000", ""}, {"3000000", "100GiB"}, {"2000000", ""},
		{"2000000", "100GiB"}} {
		file := filepath.Join(dir, fmt.Sprintf("r%d.json", i))
		p := &proc{cmd: exec.Command("/bin/sh", "-c", `ulimit -v `+c.kb+` && exec "$0" "$@"`, os.Args[0], "--engine", "host",
			"-g", "4", "-b", "1M", "-e", "1G", "-f", "32", "-w", "1", "-n", "1", "-J", file), done: make(chan struct{})}
		p.cmd.Env = append(os.Environ(), childEnv+"=all_reduce", "RANK=", "OMPI_COMM_WORLD_RANK=", "PMI_RANK=",
			"SLURM_PROCID=", "GOMEMLIMIT="+c.gomemlimit)
		p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.cmd.Wait(); close(p.done) }()
		code, _ := p.exit(t, 60*time.Second)
		what := "ulimit -v " + c.kb + " GOMEMLIMIT=" + c.gomemlimit
		refused := code == exit.Runtime && c.kb == "2000000" && strings.Count(p.stderr.String(), "\n") == 1 &&
			strings.Contains(p.stderr.String(), "not enough memory for any buffer")
		if refused {
			t.Logf("%s: %s", what, p.stderr.String())
			continue
		}
		if code != exit.OK || !strings.Contains(p.stdout.String(), "# Reducing maxBytes to ") {
			t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%.2000s", what, code, p.stdout.String(), p.stderr.String())
		}
		if rec := loadRecord(t, file); rec.Incomplete || len(rec.Results) == 0 {
			t.Errorf("%s: JSON incomplete %v, %d rows", what, rec.Incomplete, len(rec.Results))
		}
	}
}
