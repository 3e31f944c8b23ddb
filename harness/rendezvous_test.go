package harness

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/world"
)

// TestRendezvousSignalAtStart: a signal while the processes meet (a peer that never comes) ends the process
// within a second, with one line and the shell's code for the signal; it used to wait for -T.
func TestRendezvousSignalAtStart(t *testing.T) {
	for _, c := range []struct {
		rank int
		sig  syscall.Signal
		code int
	}{{0, syscall.SIGINT, 130}, {1, syscall.SIGTERM, 143}} {
		port := freeTCPPort(t)
		p := startChild(t, "all_reduce", launcherEnv(c.rank, 2, port), "--engine", "host", "-b", "8", "-e", "8",
			"-T", "60")
		time.Sleep(1500 * time.Millisecond) // meeting
		sent := time.Now()
		if err := p.cmd.Process.Signal(c.sig); err != nil {
			t.Fatal(err)
		}
		code, _ := p.exit(t, 20*time.Second)
		took := time.Since(sent)
		stderr := p.stderr.String()
		if code != c.code || took > 1500*time.Millisecond || !strings.Contains(stderr, "was interrupted while it waited") {
			t.Errorf("rank %d, %v: exit %d %v after the signal, stderr %q", c.rank, c.sig, code, took, stderr)
		}
	}
}

// TestRendezvousBadLauncherVariables: partial launcher variables and a port inside MASTER_ADDR are refused at
// start, one line, exit 1; they used to run lone processes that all exit 0, or fail only at -T.
func TestRendezvousBadLauncherVariables(t *testing.T) {
	for _, c := range []struct {
		env  []string
		want string
	}{
		{[]string{"WORLD_SIZE=2"}, `RANK="" and WORLD_SIZE="2": a launcher sets both`},
		{[]string{"RANK=1"}, `RANK="1" and WORLD_SIZE="": a launcher sets both`},
		{[]string{"RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1:29500", "MASTER_PORT=29500"},
			"a port belongs in MASTER_PORT"},
	} {
		p := startChild(t, "all_reduce", c.env, "--engine", "host", "-b", "8", "-e", "8", "-T", "60")
		code, took := p.exit(t, 20*time.Second)
		stderr := p.stderr.String()
		if code != exit.Usage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) ||
			p.stdout.String() != "" || took > 5*time.Second {
			t.Errorf("%v: exit %d after %v, stdout %q, stderr %q", c.env, code, took, p.stdout.String(), stderr)
		}
	}
}

// TestRendezvousSwitchesDisagree: an RCCLX switch set differently in the processes' environments is refused
// by every process before anything runs, naming the variable and the processes; it used to hang or time out
// in a barrier.
func TestRendezvousSwitchesDisagree(t *testing.T) {
	port := freeTCPPort(t)
	var procs [3]*proc
	for rank := range procs {
		env := launcherEnv(rank, 3, port)
		if rank == 2 {
			env = append(env, "RCCL_DDA_ENABLE=1")
		}
		procs[rank] = startChild(t, "all_reduce", env, "--engine", "host", "-b", "8", "-e", "8", "-T", "10")
	}
	want := `RCCL_DDA_ENABLE differs between the processes (processes 0,1 unset, process 2 "1")`
	for rank, p := range procs {
		code, _ := p.exit(t, 20*time.Second)
		stderr := p.stderr.String()
		if code != exit.Usage || p.stdout.String() != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, want) {
			t.Errorf("rank %d: exit %d, stdout %q, stderr %q", rank, code, p.stdout.String(), stderr)
		}
	}
	// Two spellings of one setting agree.
	port = freeTCPPort(t)
	for rank := range 2 {
		env := append(launcherEnv(rank, 2, port), fmt.Sprintf("RCCL_DDA_ENABLE=%s", []string{"1", "true"}[rank]))
		procs[rank] = startChild(t, "all_reduce", env, "--engine", "host", "-b", "8", "-e", "8", "-T", "10")
	}
	for rank, p := range procs[:2] {
		if code, _ := p.exit(t, 20*time.Second); code != exit.OK {
			t.Errorf("rank %d: exit %d, stderr %q", rank, code, p.stderr.String())
		}
	}
}

// TestRendezvousSignalWithStoppedPeer: SIGINT to rank 0 while its peer is stopped (SIGSTOP) in the middle of
// the sweep, without -T, ends rank 0 promptly with 130 (0.6 s here: the waits on the World end then).
func TestRendezvousSignalWithStoppedPeer(t *testing.T) {
	port := freeTCPPort(t)
	var procs [2]*proc
	for rank := range procs {
		procs[rank] = startChild(t, "all_reduce", launcherEnv(rank, 2, port), "--engine", "host", "-b", "8",
			"-e", "1M", "-f", "2", "-n", "200", "-c", "1")
	}
	procs[0].waitOutput(t, firstRow, 30*time.Second)
	if err := procs[1].cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer procs[1].cmd.Process.Signal(syscall.SIGCONT)
	time.Sleep(200 * time.Millisecond)
	sent := time.Now()
	if err := procs[0].cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code, _ := procs[0].exit(t, 20*time.Second)
	took := time.Since(sent)
	if code != exit.Interrupted || took > 1500*time.Millisecond {
		t.Errorf("rank 0: exit %d %v after SIGINT, stderr %q", code, took, procs[0].stderr.String())
	}
	t.Logf("rank 0 ended %v after SIGINT: %q", took, procs[0].stderr.String())
}

// TestSplitCommunicators: NCCL_TESTS_SPLIT runs one communicator per colour, as nccl-tests does: rank 0
// prints one table whose bus bandwidth is of its communicator's size (all_reduce on 2 ranks: busbw = algbw,
// where 4 ranks would give 1.5 x algbw), validated, with every process's rank and colour in the device lines.
// Such a split used to be refused.
func TestSplitCommunicators(t *testing.T) {
	for _, c := range []struct {
		env    string
		groups []int
	}{{"NCCL_TESTS_SPLIT=MOD 2", []int{0, 1, 0, 1}}, {"NCCL_TESTS_SPLIT_MASK=0x2", []int{0, 0, 2, 2}}} {
		port := freeTCPPort(t)
		var procs [4]*proc
		for rank := range procs {
			procs[rank] = startChild(t, "all_reduce", append(launcherEnv(rank, 4, port), c.env), "--engine", "host",
				"-b", "1M", "-e", "1M", "-c", "1", "-n", "2", "-w", "1", "-T", "20")
		}
		for rank, p := range procs {
			if code, _ := p.exit(t, 60*time.Second); code != exit.OK {
				t.Fatalf("%s: rank %d: exit %d, stderr %q", c.env, rank, code, p.stderr.String())
			}
		}
		out := procs[0].stdout.String()
		for r, g := range c.groups {
			if !strings.Contains(out, fmt.Sprintf("#  Rank %2d Group %2d Pid %6d ", r, g, procs[r].cmd.Process.Pid)) {
				t.Errorf("%s: no device line for rank %d group %d:\n%s", c.env, r, g, out)
			}
		}
		rows := tableRows(out)
		if len(rows) != 1 {
			t.Fatalf("%s: %d rows:\n%s", c.env, len(rows), out)
		}
		f := rows[0]
		if len(f) != 13 || f[6] != f[7] || f[10] != f[11] || f[8] != "0" || f[12] != "0" || f[7] == "0.00" {
			t.Errorf("%s: row %q: want busbw = algbw (2 ranks) and no wrong element", c.env, f)
		}
		if !strings.Contains(out, "2 communicators of 2 processes") {
			t.Errorf("%s: no note of the split:\n%s", c.env, out)
		}
	}
}

// partsWorld is process 0 of a World whose AllGather returns fixed parts.
type partsWorld [][]byte

func (w partsWorld) Rank() int                          { return 0 }
func (w partsWorld) Size() int                          { return len(w) }
func (w partsWorld) AllGather([]byte) ([][]byte, error) { return w, nil }
func (w partsWorld) Barrier() error                     { return nil }

// TestPeerDevicesPrintable: another process's device text reaches the device lines and the JSON record with
// its control bytes escaped.
func TestPeerDevicesPrintable(t *testing.T) {
	w := partsWorld{[]byte(`[{"Rank":0,"Hostname":"a","Name":"host"}]`),
		[]byte(`[{"Rank":1,"Hostname":"b\u001b[2J","Name":"x\u0007","BusID":"\u001b]0;t"}]`)}
	ds, err := world.Devices(w, nil)
	if err != nil || len(ds) != 2 || ds[1].Hostname != `b\x1b[2J` || ds[1].Name != `x\a` || ds[1].BusID != `\x1b]0;t` {
		t.Errorf("devices %+v, %v", ds, err)
	}
}
