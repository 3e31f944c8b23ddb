package bootstrap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// member is one process of a world met in a goroutine (see meetAt).
type member struct {
	rank  int
	runID string
	delay time.Duration
}

// meetAt connects worlds at addr in goroutines, each after its delay, and returns them (nil where connecting
// failed) with their errors.
func meetAt(addr string, size int, ms []member, timeout time.Duration, opts ...Option) ([]*World, []error) {
	ws, errs := make([]*World, len(ms)), make([]error, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() {
			time.Sleep(m.delay)
			w := newWorld(Launch{Rank: m.rank, Size: size, LocalRank: -1, LocalSize: -1, RunID: m.runID})
			w.addr, w.timeout = addr, timeout
			for _, o := range opts {
				o(w)
			}
			connect := timeout
			if connect == 0 {
				connect = 10 * time.Second
			}
			if m.rank == 0 {
				errs[i] = w.serve(connect)
			} else {
				errs[i] = w.dial(connect)
			}
			if errs[i] != nil {
				w.Close()
				return
			}
			ws[i] = w
		})
	}
	wg.Wait()
	return ws, errs
}

func localAddr(t *testing.T) string { return "127.0.0.1:" + itoa(freePort(t)) }

func closeAll(ws []*World) {
	for _, w := range ws {
		if w != nil {
			w.Close()
		}
	}
}

// dialUntil connects to addr, retrying while nothing listens yet.
func dialUntil(t *testing.T, addr string) net.Conn {
	t.Helper()
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			return c
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal(err)
		}
	}
}

// Stray and hostile connections (garbage, silence, a bare frame header, a 1 GiB length) are dropped: the run
// still starts, rank 0 is not held up by them, and none makes rank 0 allocate more than a hello.
func TestStrayConnectionsDropped(t *testing.T) {
	addr := localAddr(t)
	gib := make([]byte, 5)
	gib[0] = kindHello
	binary.LittleEndian.PutUint32(gib[1:], 1<<30)
	header := []byte{kindHello, 100, 0, 0, 0}
	strays := [][]byte{[]byte("GET / HTTP/1.0\r\n\r\n\x1b[2J"), nil, header, gib}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var conns []net.Conn
	go func() {
		for _, b := range strays {
			c := dialUntil(t, addr)
			conns = append(conns, c)
			c.Write(b)
		}
	}()
	start := time.Now()
	ws, errs := meetAt(addr, 2, []member{{rank: 0}, {rank: 1, delay: 300 * time.Millisecond}}, 10*time.Second)
	took := time.Since(start)
	defer closeAll(ws)
	runtime.ReadMemStats(&after)
	for i, err := range errs {
		if err != nil {
			t.Errorf("process %d: %v", i, err)
		}
	}
	if took > 3*time.Second { // a silent connection held rank 0 for 5 s
		t.Errorf("the run took %v to start, want it not held by the silent connections", took)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("meeting allocated %d MiB", grew>>20)
	}
	if ws[0] != nil && ws[1] != nil {
		go ws[1].Barrier()
		if err := ws[0].Barrier(); err != nil {
			t.Errorf("rank 0 Barrier: %v", err)
		}
	}
}

// A rank that never comes, while strangers call: the timeout names the missing rank and what was turned
// away, and never reads "(<nil>)".
func TestTimeoutNamesStrays(t *testing.T) {
	addr := localAddr(t)
	go func() {
		c := dialUntil(t, addr)
		defer c.Close()
		writeFrame(c, kindData, []byte("hi"), time.Second) // a whole frame, but no hello
		time.Sleep(time.Second)
	}()
	_, errs := meetAt(addr, 2, []member{{rank: 0}}, 500*time.Millisecond)
	err := errs[0]
	if err == nil || !strings.Contains(err.Error(), "for ranks [1] to connect; it turned away 1 connection(s)") ||
		strings.Contains(err.Error(), "<nil>") {
		t.Errorf("rank 0: %v", err)
	}
}

// A process of another run (another run id, or another world size) that reaches this run's rank 0 first is
// told so and turned away; this run starts with its own rank 1.
func TestAnotherRunTurnedAway(t *testing.T) {
	for _, stranger := range []member{{rank: 1, runID: "B"}, {rank: 1, runID: "A"}} {
		addr := localAddr(t)
		size := 2
		strangerErr := make(chan error, 1)
		go func() {
			time.Sleep(100 * time.Millisecond)
			strangerSize := size
			if stranger.runID == "A" {
				strangerSize = 3
			}
			_, errs := meetAt(addr, strangerSize, []member{stranger}, 5*time.Second)
			strangerErr <- errs[0]
		}()
		ws, errs := meetAt(addr, size, []member{{rank: 0, runID: "A"}, {rank: 1, runID: "A", delay: 400 * time.Millisecond}},
			5*time.Second)
		if errs[0] != nil || errs[1] != nil {
			t.Errorf("stranger %+v: the run failed: %v", stranger, errs)
		}
		if err := <-strangerErr; err == nil || !strings.Contains(err.Error(), "is the rendezvous of another run") {
			t.Errorf("stranger %+v: %v", stranger, err)
		}
		closeAll(ws)
	}
}

// Without a run id, the processes of two runs sharing an address cannot be told apart: a second claim to a
// rank ends the run, before the start and after it, rather than mixing them.
func TestSecondClaimEndsRun(t *testing.T) {
	addr := localAddr(t)
	ws, errs := meetAt(addr, 2, []member{{rank: 0}, {rank: 1}}, 5*time.Second)
	defer closeAll(ws)
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	_, late := meetAt(addr, 2, []member{{rank: 1}}, 5*time.Second)
	select {
	case <-ws[0].Lost():
	case <-time.After(3 * time.Second):
		t.Fatal("a second rank 1 went unnoticed")
	}
	for _, err := range []error{late[0], ws[0].Err()} {
		if err == nil || !strings.Contains(err.Error(), "two processes say they are rank 1") {
			t.Errorf("%v", err)
		}
	}
	// A second rank 0 (of a run that cannot listen) asks the holder, and says what holds the port.
	addr = localAddr(t)
	ws, _ = meetAt(addr, 2, []member{{rank: 0, runID: "A"}, {rank: 1, runID: "A"}}, 5*time.Second)
	defer closeAll(ws)
	_, second := meetAt(addr, 2, []member{{rank: 0, runID: "B"}}, 5*time.Second)
	if err := second[0]; err == nil || !strings.Contains(err.Error(), "cannot listen on 127.0.0.1:") ||
		!strings.Contains(err.Error(), `is the rendezvous of another run (2 processes, run id "A"`) {
		t.Errorf("second rank 0: %v", err)
	}
	if err := ws[0].Err(); err != nil {
		t.Errorf("a second rank 0 of another run ended this one: %v", err)
	}
}

// Rank 0 that dies after acking a rank, while the others are still on their way, is named with its pid, not
// a bare EOF.
func TestRootDeathAtStartNamed(t *testing.T) {
	addr := fakeRoot(t, func(c net.Conn) {
		readHello(c)
		writeFrame(c, kindAck, binary.LittleEndian.AppendUint32(append([]byte(nil), magic...), 4242), time.Second)
		time.Sleep(100 * time.Millisecond)
	})
	_, errs := meetAt(addr, 3, []member{{rank: 1}}, 5*time.Second)
	if err := errs[0]; err == nil || !strings.Contains(err.Error(), "lost rank 0 ("+addr+", pid 4242)") {
		t.Errorf("rank 1: %v", err)
	}
}

// A peer's words reach the terminal and the JSON record printable: its control bytes are escaped.
func TestPeerTextMadePrintable(t *testing.T) {
	addr := fakeRoot(t, func(c net.Conn) {
		readHello(c)
		writeFrame(c, kindFail, []byte("\x1b]0;owned\x07\x1b[31mred\xff"), time.Second)
	})
	_, errs := meetAt(addr, 2, []member{{rank: 1}}, 5*time.Second)
	if err := errs[0]; err == nil || err.Error() != `\x1b]0;owned\a\x1b[31mred\xff` {
		t.Errorf("rank 1: %q", err)
	}
	te := frameError(kindTimeout, []byte("1\x002\x003\x00\x00phase\x1b[2J"))
	if !strings.Contains(te.Error(), `phase\x1b[2J`) {
		t.Errorf("timeout notice: %q", te)
	}
}

// A wait on a process that stopped answering (SIGSTOP) names it, on rank 0 and on the others, never the
// process that waited.
func TestTimeoutNamesSilentProcess(t *testing.T) {
	ws, errs := meetAt(localAddr(t), 3, []member{{rank: 0}, {rank: 1}, {rank: 2}}, 500*time.Millisecond)
	defer closeAll(ws)
	if errs[0] != nil || errs[1] != nil || errs[2] != nil {
		t.Fatal(errs)
	}
	var wg sync.WaitGroup
	got := make([]error, 2)
	for r := range 2 { // process 2 makes no call
		wg.Go(func() { got[r] = ws[r].Barrier() })
	}
	wg.Wait()
	for r, err := range got {
		var te *collectives.TimeoutError
		if !errors.As(err, &te) || fmt.Sprint(te.Processes) != "[2]" || te.Rank != 0 ||
			!strings.Contains(err.Error(), "process 2 did not answer (process 0 waited") {
			t.Errorf("process %d: %v", r, err)
		}
	}
}

// Every wait ends within a second of the stop (a signal), connecting and a gather with a stopped process
// included, with an error that is ErrInterrupted; the other processes are told.
func TestStopEndsWaits(t *testing.T) {
	cases := []struct {
		name string
		ms   []member
	}{
		{"rank 0 waits for a rank that never comes", []member{{rank: 0}}},
		{"a rank waits for rank 0 to listen", []member{{rank: 1}}},
		{"a rank waits for the welcome", []member{{rank: 0}, {rank: 1}}},
	}
	for _, c := range cases {
		stop := make(chan struct{})
		time.AfterFunc(300*time.Millisecond, func() { close(stop) })
		start := time.Now()
		_, errs := meetAt(localAddr(t), 3, c.ms, 0, StopOn(stop))
		took := time.Since(start) - 300*time.Millisecond
		for i, err := range errs {
			if !errors.Is(err, ErrInterrupted) && (i == 0 || err == nil || !strings.Contains(err.Error(), "was interrupted")) {
				t.Errorf("%s: process %d: %v", c.name, i, err)
			}
		}
		if took > time.Second {
			t.Errorf("%s: ended %v after the stop", c.name, took)
		}
	}
	// In a gather, with a peer that makes no call (stopped) and no timeout.
	stop := make(chan struct{})
	ws, errs := meetAt(localAddr(t), 2, []member{{rank: 0}, {rank: 1}}, 0, StopOn(stop))
	defer closeAll(ws)
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	time.AfterFunc(200*time.Millisecond, func() { close(stop) })
	start := time.Now()
	_, err := ws[0].AllGather(nil)
	if took := time.Since(start); !errors.Is(err, ErrInterrupted) || took > 1200*time.Millisecond {
		t.Errorf("gather: %v after %v", err, took)
	}
}

// A second run on the same port, each run with its own id: every process of each run meets its own run's
// processes only; the second run's processes fail, told why, and the first run completes with its own.
func TestTwoRunsOnOnePort(t *testing.T) {
	port := freePort(t)
	a0 := launchAt(t, 1, "gather", port, "RANK=0", "WORLD_SIZE=2", EnvRunID+"=A", childNonce+"=a")
	dialUntil(t, "127.0.0.1:"+itoa(port)).Close() // run A's rank 0 listens (and drops this connection)
	b := launchAt(t, 2, "gather", port, EnvRunID+"=B", childNonce+"=b")
	for r, c := range b {
		err := c.cmd.Wait()
		if line := c.stderr.String(); err == nil || !strings.Contains(line, "is the rendezvous of another run") {
			t.Errorf("run B rank %d: %v, stdout %q, stderr %q", r, err, c.out.String(), line)
		}
	}
	a1 := launchAt(t, 1, "gather", port, "RANK=1", "WORLD_SIZE=2", EnvRunID+"=A", childNonce+"=a")
	for r, c := range append(a0, a1...) {
		err := c.cmd.Wait()
		want := fmt.Sprintf("rank %d of 2 local %d of 2\n", r, r)
		if err != nil || c.out.String() != want {
			t.Errorf("run A rank %d: %v, stdout %q, stderr %q", r, err, c.out.String(), c.stderr.String())
		}
	}
}

// A process stopped by SIGSTOP in the middle of a run is named by every other process's timeout.
func TestStoppedProcessNamed(t *testing.T) {
	kids := launch(t, 3, "stop", childVictim+"=2", childTimeout+"=2s")
	for r, c := range kids[:2] {
		err := c.cmd.Wait()
		if out := c.out.String(); err != nil || !strings.Contains(out, "process 2 did not answer (process 0 waited") {
			t.Errorf("rank %d: %v, stdout %q, stderr %q", r, err, out, c.stderr.String())
		}
	}
	kids[2].cmd.Process.Kill()
	kids[2].cmd.Wait()
}

// fakeRoot listens on 127.0.0.1 as a rank 0 that serves its first connection with serve, then closes it; it
// returns the address the ranks meet at.
func fakeRoot(t *testing.T, serve func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		serve(c)
	}()
	return ln.Addr().String()
}
