package bootstrap

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// The multi-process tests re-execute the test binary as N processes; TestMain turns a child into one rank.
const (
	childScenario = "BOOTSTRAP_TEST_SCENARIO"
	childNonce    = "BOOTSTRAP_TEST_NONCE"
	childVictim   = "BOOTSTRAP_TEST_VICTIM"
	childTimeout  = "BOOTSTRAP_TEST_TIMEOUT"
)

func TestMain(m *testing.M) {
	if s := os.Getenv(childScenario); s != "" {
		if err := runChild(s); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func itoa(i int) string { return strconv.Itoa(i) }

// payload is rank's data for one AllGather: distinct per rank, round and run, and of varying length.
func payload(nonce string, rank, round int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("%s/%d/%d;", nonce, rank, round)), 1+rank*round*997)
}

func runChild(scenario string) error {
	timeout := 10 * time.Second
	if d, err := time.ParseDuration(os.Getenv(childTimeout)); err == nil {
		timeout = d
	}
	w, err := FromEnv(timeout)
	if err != nil {
		return err
	}
	defer w.Close()
	nonce := os.Getenv(childNonce)
	switch scenario {
	case "gather":
		for round := 0; round < 4; round++ {
			parts, err := w.AllGather(payload(nonce, w.Rank(), round))
			if err != nil {
				return err
			}
			for r, p := range parts {
				if !bytes.Equal(p, payload(nonce, r, round)) {
					return fmt.Errorf("rank %d round %d: part of rank %d is wrong (%d bytes)", w.Rank(), round, r, len(p))
				}
			}
			if err := w.Barrier(); err != nil {
				return err
			}
		}
		fmt.Printf("rank %d of %d local %d of %d\n", w.Rank(), w.Size(), w.LocalRank(), w.LocalSize())
		return nil
	case "idle":
		victim, _ := strconv.Atoi(os.Getenv(childVictim))
		if w.Rank() == victim {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		start := time.Now()
		select {
		case <-w.Lost(): // a death is a loss, not a mere departure
			fmt.Printf("noticed after %v: %v\n", time.Since(start).Round(time.Millisecond), w.Err())
		case <-time.After(8 * time.Second):
			return fmt.Errorf("rank %d: rank %d's death went unnoticed for 8 s", w.Rank(), victim)
		}
		return nil
	case "subworlds":
		// Two worlds of children beside this one: each child is a "gather" rank of its own sub-world.
		envs, err := SubWorlds(w, 2)
		if err != nil {
			return err
		}
		outs := make([]bytes.Buffer, len(envs))
		var cmds []*exec.Cmd
		for i, env := range envs {
			c := exec.Command(os.Args[0])
			c.Env = Isolate(os.Environ(), append(env, childScenario+"=gather")...)
			c.Stdout, c.Stderr = &outs[i], &outs[i]
			if err := c.Start(); err != nil {
				return err
			}
			cmds = append(cmds, c)
		}
		for i, c := range cmds {
			if err := c.Wait(); err != nil {
				return fmt.Errorf("sub-world %d: %v: %s", i, err, outs[i].String())
			}
			fmt.Printf("sub %d: %s", i, outs[i].String())
		}
		return w.Barrier()
	case "leave":
		if _, err := w.AllGather([]byte(nonce)); err != nil {
			return err
		}
		leaver, _ := strconv.Atoi(os.Getenv(childVictim))
		if w.Rank() == leaver {
			w.Leave()
			return nil
		}
		// Rank 0 calls last: its failed call tells the others that the run is lost (the call needed the leaver).
		wait := 300 * time.Millisecond
		if w.Rank() == 0 {
			wait = 600 * time.Millisecond
		}
		select {
		case <-w.Lost():
			return fmt.Errorf("rank %d took rank %d's departure for a loss: %v", w.Rank(), leaver, w.Err())
		case <-time.After(wait):
		}
		if w.Rank() == 0 || leaver == 0 { // those that heard it go
			select {
			case <-w.Failed():
			default:
				return fmt.Errorf("rank %d: rank %d's departure went unnoticed", w.Rank(), leaver)
			}
		}
		return barrierFails(w, leaver, "gone")
	case "stop":
		if err := w.Barrier(); err != nil {
			return err
		}
		if victim, _ := strconv.Atoi(os.Getenv(childVictim)); w.Rank() == victim {
			syscall.Kill(os.Getpid(), syscall.SIGSTOP)
			time.Sleep(time.Minute) // the stop may take effect after Kill returns; the test kills this process
			return nil
		}
		fmt.Println(w.Barrier())
		return nil
	case "die":
		if _, err := w.AllGather([]byte(nonce)); err != nil {
			return err
		}
		victim, _ := strconv.Atoi(os.Getenv(childVictim))
		if w.Rank() == victim {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		return barrierFails(w, victim, "dead")
	}
	return fmt.Errorf("unknown scenario %q", scenario)
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

type child struct {
	cmd         *exec.Cmd
	out, stderr bytes.Buffer
}

// launch starts n ranks torchrun-style; extra adds variables for every rank.
func launch(t *testing.T, n int, scenario string, extra ...string) []*child {
	t.Helper()
	return launchAt(t, n, scenario, freePort(t), extra...)
}

func launchAt(t *testing.T, n int, scenario string, port int, extra ...string) []*child {
	t.Helper()
	nonce := make([]byte, 8)
	rand.Read(nonce)
	kids := make([]*child, n)
	for r := range kids {
		c := &child{cmd: exec.Command(os.Args[0])}
		c.cmd.Env = append(os.Environ(), childScenario+"="+scenario, childNonce+"="+hex.EncodeToString(nonce),
			"RANK="+itoa(r), "WORLD_SIZE="+itoa(n), "MASTER_ADDR=127.0.0.1", "MASTER_PORT="+itoa(port))
		c.cmd.Env = append(c.cmd.Env, extra...)
		c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.stderr
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		kids[r] = c
	}
	return kids
}

func TestAllGatherAcrossProcesses(t *testing.T) {
	for _, n := range []int{1, 2, 4} {
		kids := launch(t, n, "gather")
		for r, c := range kids {
			err := c.cmd.Wait()
			want := fmt.Sprintf("rank %d of %d local %d of %d\n", r, n, r, n)
			if err != nil || c.out.String() != want {
				t.Errorf("n=%d rank %d: %v, stdout %q (want %q), stderr %q", n, r, err, c.out.String(), want, c.stderr.String())
			}
		}
	}
}

// TestSubWorlds: every process of a world starts one child per sub-world; the children of each sub-world meet
// each other only, with their parents' ranks, and the parents' world still works afterwards.
func TestSubWorlds(t *testing.T) {
	kids := launch(t, 2, "subworlds")
	for r, c := range kids {
		err := c.cmd.Wait()
		line := fmt.Sprintf("rank %d of 2 local %d of 2\n", r, r)
		if want := "sub 0: " + line + "sub 1: " + line; err != nil || c.out.String() != want {
			t.Errorf("rank %d: %v, stdout %q (want %q), stderr %q", r, err, c.out.String(), want, c.stderr.String())
		}
	}
	envs, err := SubWorlds(Single(), 2)
	if err != nil || len(envs) != 2 || len(envs[0]) != 0 {
		t.Errorf("single process: %q, %v", envs, err)
	}
	env := Isolate([]string{"RANK=1", "OMPI_COMM_WORLD_SIZE=2", "MASTER_PORT=1", "RCCLX_TESTS_BOOTSTRAP=h:1",
		"HOME=/root", "SLURM_LOCALID=0", "TORCHELASTIC_RUN_ID=x", "PMIX_NAMESPACE=7", "SLURM_JOB_ID=3"}, "X=1")
	if strings.Join(env, " ") != "HOME=/root X=1" {
		t.Errorf("Isolate kept %q", env)
	}
}

func TestDeadProcessFailsOthersFast(t *testing.T) {
	for _, victim := range []int{2, 0} {
		start := time.Now()
		kids := launch(t, 4, "die", childVictim+"="+itoa(victim))
		for r, c := range kids {
			err := c.cmd.Wait()
			if r == victim {
				if err == nil {
					t.Errorf("victim rank %d exited cleanly", r)
				}
				continue
			}
			out := c.out.String()
			if err != nil || !strings.Contains(out, "rank "+itoa(victim)) || strings.Count(out, "\n") != 1 {
				t.Errorf("victim %d, rank %d: %v, stdout %q, stderr %q: want one line naming rank %d",
					victim, r, err, out, c.stderr.String(), victim)
			}
		}
		// Every process fails on the closed connection, well before its 10 s timeout.
		if el := time.Since(start); el > 5*time.Second {
			t.Errorf("victim %d: the run took %v to fail", victim, el)
		}
	}
}

func TestConnectTimeoutNamesAddress(t *testing.T) {
	port := freePort(t)
	t.Setenv("RANK", "1")
	t.Setenv("WORLD_SIZE", "2")
	t.Setenv("MASTER_ADDR", "127.0.0.1")
	t.Setenv("MASTER_PORT", itoa(port))
	_, err := FromEnv(300 * time.Millisecond)
	want := fmt.Sprintf("bootstrap: rank 1 could not reach 127.0.0.1:%d within 300ms", port)
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("FromEnv error = %v, want prefix %q", err, want)
	}
}

func TestRootTimeoutNamesMissingRanks(t *testing.T) {
	t.Setenv("RANK", "0")
	t.Setenv("WORLD_SIZE", "3")
	t.Setenv("MASTER_ADDR", "127.0.0.1")
	t.Setenv("MASTER_PORT", itoa(freePort(t)))
	_, err := FromEnv(200 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "for ranks [1 2] to connect") {
		t.Errorf("FromEnv error = %v, want it to name ranks [1 2]", err)
	}
}

// meet connects worlds of size processes in goroutines, one per entry of ranks (the rank it says it is), each
// 200 ms after the one before, and returns each one's connecting error.
func meet(t *testing.T, size int, ranks []int, timeout time.Duration) []error {
	addr := "127.0.0.1:" + itoa(freePort(t))
	errs := make([]error, len(ranks))
	var wg sync.WaitGroup
	for i, rank := range ranks {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * 200 * time.Millisecond)
			w := newWorld(Launch{Rank: rank, Size: size, LocalRank: -1, LocalSize: -1})
			w.addr = addr
			if rank == 0 {
				errs[i] = w.serve(timeout)
			} else {
				errs[i] = w.dial(timeout)
			}
			w.Close()
		})
	}
	wg.Wait()
	return errs
}

// A rank that came hears rank 0 name the ranks that never did, rather than leaving first (rank 0 would take
// it for dead) or saying only that not everyone came.
func TestConnectedRankHearsWhoIsMissing(t *testing.T) {
	errs := meet(t, 3, []int{0, 1}, 500*time.Millisecond)
	for rank, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "bootstrap: rank 0 waited 500ms on 127.0.0.1:") ||
			!strings.Contains(err.Error(), "for ranks [2] to connect") {
			t.Errorf("rank %d: %v, want rank 0's verdict naming rank 2", rank, err)
		}
	}
}

// Two processes that say they are rank 1: both hear why the run cannot start, the one that came first too.
func TestDuplicateRankTold(t *testing.T) {
	errs := meet(t, 3, []int{0, 1, 1}, 5*time.Second) // the second claimant comes after the first was acked
	for i, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "bootstrap: two processes say they are rank 1") {
			t.Errorf("process %d: %v", i, err)
		}
	}
}

func TestSingleProcess(t *testing.T) {
	for _, k := range []string{"RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"} {
		t.Setenv(k, "")
	}
	w, err := FromEnv(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	data := []byte{1, 2, 3}
	parts, err := w.AllGather(data)
	data[0] = 9
	if err != nil || len(parts) != 1 || !bytes.Equal(parts[0], []byte{1, 2, 3}) || w.Barrier() != nil {
		t.Errorf("single-process AllGather = %v, %v", parts, err)
	}
	if w.Size() != 1 || w.Rank() != 0 || w.LocalSize() != 1 || w.Close() != nil {
		t.Errorf("single-process world: rank %d size %d local size %d", w.Rank(), w.Size(), w.LocalSize())
	}
}

func TestDecodePartsRejectsCorruptResults(t *testing.T) {
	good := encodeParts([][]byte{[]byte("ab"), nil, []byte("c")})
	if parts, err := decodeParts(good, 3); err != nil || string(parts[0]) != "ab" || len(parts[1]) != 0 || string(parts[2]) != "c" {
		t.Fatalf("decodeParts(good) = %q, %v", parts, err)
	}
	for _, bad := range [][]byte{good[:len(good)-1], append(good, 0), good[:3]} {
		if _, err := decodeParts(bad, 3); err == nil {
			t.Errorf("decodeParts(%v) accepted a corrupt result", bad)
		}
	}
}

// A process that dies while the others make no call is noticed by every process at once, naming its rank and
// pid, whether it is rank 0 or another.
func TestDeathNoticedOutsideCalls(t *testing.T) {
	for _, victim := range []int{1, 0} {
		kids := launch(t, 3, "idle", childVictim+"="+itoa(victim))
		victimPid := kids[victim].cmd.Process.Pid
		for r, c := range kids {
			err := c.cmd.Wait()
			if r == victim {
				continue
			}
			out := c.out.String()
			want := fmt.Sprintf("bootstrap: rank %d died or left the run (pid %d;", victim, victimPid)
			if victim == 0 {
				want = fmt.Sprintf("bootstrap: rank %d lost rank 0 (127.0.0.1:", r)
				if !strings.Contains(out, fmt.Sprintf(", pid %d): it died or left the run", victimPid)) {
					t.Errorf("rank %d: %q does not name rank 0's pid %d", r, out, victimPid)
				}
			}
			if err != nil || !strings.Contains(out, want) {
				t.Errorf("victim %d, rank %d: %v, stdout %q, stderr %q: want %q", victim, r, err, out, c.stderr.String(), want)
				continue
			}
			took, _, _ := strings.Cut(strings.TrimPrefix(out, "noticed after "), ":")
			if d, err := time.ParseDuration(took); err != nil || d > 2*time.Second {
				t.Errorf("victim %d, rank %d noticed it after %q, want within 2 s", victim, r, took)
			}
		}
	}
}

// A process that ended its run and said so (Leave) is a departure, not a loss: the others' Lost stays open,
// and only a call that still needs it fails, naming it.
func TestLeaveIsNoLoss(t *testing.T) {
	for _, leaver := range []int{2, 0} {
		kids := launch(t, 3, "leave", childVictim+"="+itoa(leaver))
		for r, c := range kids {
			err := c.cmd.Wait()
			out := c.out.String()
			if r == leaver {
				if err != nil {
					t.Errorf("leaver %d: %v, stderr %q", r, err, c.stderr.String())
				}
				continue
			}
			if err != nil || !strings.Contains(out, fmt.Sprintf("rank %d ended its run and left (pid %d)", leaver,
				kids[leaver].cmd.Process.Pid)) {
				t.Errorf("leaver %d, rank %d: %v, stdout %q, stderr %q: want a failed call naming the departure",
					leaver, r, err, out, c.stderr.String())
			}
		}
	}
}

// A rank that connected and died while rank 0 still waits for others fails the connect at once, naming it.
func TestDeadAfterConnectFailsRendezvous(t *testing.T) {
	port := freePort(t)
	t.Setenv("RANK", "0")
	t.Setenv("WORLD_SIZE", "4") // rank 3 never comes
	t.Setenv("MASTER_ADDR", "127.0.0.1")
	t.Setenv("MASTER_PORT", itoa(port))
	errc := make(chan error, 1)
	go func() {
		w, err := FromEnv(20 * time.Second)
		if w != nil {
			w.Close()
		}
		errc <- err
	}()
	other := make(chan error, 1)
	go func() { // rank 2, connected and waiting for the welcome, learns of it too
		w := newWorld(Launch{Launcher: "torchrun", Rank: 2, Size: 4})
		w.addr, w.timeout = "127.0.0.1:"+itoa(port), 20*time.Second
		other <- w.dial(20 * time.Second)
		w.Close()
	}()
	var c net.Conn
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		var err error
		if c, err = net.Dial("tcp", "127.0.0.1:"+itoa(port)); err == nil {
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal(err)
		}
	}
	if err := writeFrame(c, kindHello, hello{rank: 1, size: 4, pid: 4242}.encode(), time.Second); err != nil {
		t.Fatal(err)
	}
	if f, err := readFrame(c); err != nil || f.kind != kindAck || !bytes.HasPrefix(f.payload, magic) {
		t.Fatalf("rank 0 answered the hello with %+v, %v; want an ack", f, err)
	}
	time.Sleep(300 * time.Millisecond) // rank 2 has been acked
	c.Close()
	start := time.Now()
	select {
	case err := <-errc:
		want := "bootstrap: rank 1 died or left the run (pid 4242;"
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("FromEnv error = %v, want prefix %q", err, want)
		}
		if el := time.Since(start); el > 2*time.Second {
			t.Errorf("rank 0 noticed the dead rank after %v, want within 2 s", el)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("rank 0 did not notice that rank 1 died")
	}
	select {
	case err := <-other:
		if err == nil || !strings.HasPrefix(err.Error(), "bootstrap: rank 1 died or left the run (pid 4242;") {
			t.Errorf("rank 2: %v, want rank 1's death", err)
		}
		if el := time.Since(start); el > 2*time.Second {
			t.Errorf("rank 2 learned of it after %v, want within 2 s", el)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("rank 2 did not learn that rank 1 died")
	}
}

// A port held by another program: rank 0 fails at once naming the address, and the other ranks, which reach
// the other program, say within 10 s that it is not rank 0.
func TestPortHeldByAnotherProgram(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // accept and say nothing, as a stuck server would
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	start := time.Now()
	kids := launchAt(t, 3, "gather", port)
	for r, c := range kids {
		err := c.cmd.Wait()
		line := strings.TrimSpace(c.stderr.String())
		want := fmt.Sprintf("bootstrap: rank %d: the program at 127.0.0.1:%d is not rank 0 of this run", r, port)
		if r == 0 {
			want = fmt.Sprintf("bootstrap: rank 0 cannot listen on 127.0.0.1:%d: another program, or another process that says it is rank 0, holds the port", port)
		}
		if err == nil || !strings.HasPrefix(line, want) || strings.Contains(line, "\n") {
			t.Errorf("rank %d: %v, stderr %q: want one line starting %q", r, err, line, want)
		}
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("the run took %v to fail, want within 10 s", el)
	}
}

// A timeout another process reports arrives whole: its rank, duration, phase and the ranks that never arrived.
func TestTimeoutFrameRoundTrip(t *testing.T) {
	for _, te := range []*collectives.TimeoutError{
		{Rank: 2, Phase: "ring start, waiting for rank 3", After: 3 * time.Second, Missing: []int{3}},
		{Rank: 0, Phase: "direct step 1", After: time.Second, Missing: []int{1, 5}},
		{Rank: 1, Phase: "barrier", After: time.Second},
	} {
		kind, payload := errorFrame(te)
		got, ok := frameError(kind, payload).(*collectives.TimeoutError)
		if !ok || got.Rank != te.Rank || got.Phase != te.Phase || got.After != te.After ||
			fmt.Sprint(got.Missing) != fmt.Sprint(te.Missing) {
			t.Errorf("%+v came back as %+v", te, got)
		}
	}
}

// barrierFails checks that a Barrier fails with rank gone (what says how), and prints how long it took.
func barrierFails(w *World, gone int, what string) error {
	start := time.Now()
	err := w.Barrier()
	fmt.Printf("failed after %v: %v\n", time.Since(start).Round(time.Millisecond), err)
	if err == nil {
		return fmt.Errorf("rank %d: Barrier succeeded with rank %d %s", w.Rank(), gone, what)
	}
	return nil
}
