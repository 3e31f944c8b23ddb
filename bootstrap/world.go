// Package bootstrap is the process group of multi-process runs: it detects the launcher (mpirun, an MPICH-style
// PMI launcher, srun, torchrun) from the environment, meets the other processes over TCP at a rendezvous
// address, and offers AllGather and Barrier through rank 0 (a star: small messages, few processes). The
// connections stay open for the whole run: a process that dies is noticed at once, by rank 0 through its
// connection and by every other process through rank 0 (Err, Failed, Lost). A process that ended its run says
// so before it goes (Leave), so that its going is not taken for a death.
package bootstrap

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// ConnectTimeout bounds connecting when FromEnv is given no timeout.
const ConnectTimeout = 2 * time.Minute

// World is the processes of one run. Its methods may be called from any goroutine, one call at a time per
// process; every process must make the same sequence of calls.
type World struct {
	launch  Launch
	addr    string
	timeout time.Duration

	mu     sync.Mutex
	pmu    sync.Mutex // peers and pids while rank 0 still accepts (a reader may report a failure meanwhile)
	peers  []*peer    // rank 0: indexed by rank, nil at 0; other ranks: the one connection to rank 0
	pids   []int      // every process's pid, by rank, once connected
	ln     net.Listener
	done   chan struct{}
	closed sync.Once
	broken error // once a call failed, every later call fails the same way

	fmu    sync.Mutex            // fail, failed, lost
	fail   atomic.Pointer[error] // why calls fail, seen outside any call: the loss, else the first departure
	failed chan struct{}         // closed when fail is first set
	lost   chan struct{}         // closed when the run is lost: a process died, or one ended the run (Abort)
	isLost bool
	// rank 0: the rank whose connection failed, and the notice of it to the others
	failedRank int
	notifyOnce sync.Once

	strays    int    // rank 0: connections turned away as not of this run (under pmu)
	lastStray string // the last of them: where from, and why

	stop <-chan struct{} // StopOn's channel: also ends the MPI meeting, which runs before there are peers to tell
}

// Option is a choice of FromEnv's.
type Option func(*World)

// StopOn makes every wait on the other processes end once stop is closed (a signal arrived), connecting
// included: the wait fails with an error that is ErrInterrupted, and the other processes are told.
func StopOn(stop <-chan struct{}) Option {
	return func(w *World) {
		w.stop = stop
		if stop != nil {
			go func() {
				select {
				case <-stop:
					w.interrupt()
				case <-w.done:
				}
			}()
		}
	}
}

// ErrInterrupted is the error of a wait ended by StopOn (and the harness's of a run stopped by a signal).
var ErrInterrupted = errors.New("interrupted")

type interruptedError struct {
	rank int
	in   string // the call it waited in, where not the rendezvous itself (the MPI meeting)
}

func (e interruptedError) Error() string {
	if e.in != "" {
		return fmt.Sprintf("bootstrap: rank %d was interrupted while it waited for the other processes in %s", e.rank, e.in)
	}
	return fmt.Sprintf("bootstrap: rank %d was interrupted while it waited for the other processes", e.rank)
}

func (e interruptedError) Is(target error) bool { return target == ErrInterrupted }

// interrupt ends the run for this process and tells the others, as Abort does; a read of the rendezvous in
// progress returns at once.
func (w *World) interrupt() {
	w.Abort(interruptedError{rank: w.Rank()})
	w.pmu.Lock()
	defer w.pmu.Unlock()
	if w.Rank() != 0 && len(w.peers) > 0 && w.peers[0].in == nil { // dial still reads the ack
		w.peers[0].conn.SetReadDeadline(time.Now())
	}
}

type peer struct {
	rank int
	conn net.Conn
	in   <-chan frame
	wmu  sync.Mutex  // the caller's frames and failure notices may be written at once
	bye  atomic.Bool // it said it ended its run (Leave): its connection closing is a departure, not a death
}

func (p *peer) write(kind byte, payload []byte, timeout time.Duration) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	return writeFrame(p.conn, kind, payload, timeout)
}

// FromEnv detects the launcher and meets the other processes at the rendezvous address; it returns once every
// process has arrived. timeout bounds connecting and every later call (a call waiting on a peer fails past it);
// 0 waits forever in calls and ConnectTimeout for connecting. Without a launcher the World has Size 1.
func FromEnv(timeout time.Duration, opts ...Option) (*World, error) {
	l, err := Detect(os.Getenv)
	if err != nil {
		return nil, err
	}
	if l.Size == 1 {
		return Single(), nil
	}
	w := newWorld(l)
	w.timeout = timeout
	for _, o := range opts {
		o(w)
	}
	if w.addr, err = Rendezvous(os.Getenv, l); err != nil {
		return nil, err
	}
	connectTimeout := timeout
	if connectTimeout <= 0 {
		connectTimeout = ConnectTimeout
	}
	if w.addr == "" { // the MPI library carries rank 0's address (launch_mpi.go)
		if w.addr, w.ln, w.launch.RunID, err = mpiMeet(os.Getenv, l, connectTimeout, w.stop); err != nil {
			return nil, err
		}
	}
	if l.Rank == 0 {
		err = w.serve(connectTimeout)
	} else {
		err = w.dial(connectTimeout)
	}
	if err != nil {
		w.Close()
		return nil, err
	}
	if l.LocalRank < 0 || l.LocalSize < 0 {
		if err := w.deriveLocal(); err != nil {
			w.Close()
			return nil, err
		}
	}
	return w, nil
}

func newWorld(l Launch) *World {
	return &World{launch: l, done: make(chan struct{}), failed: make(chan struct{}), lost: make(chan struct{})}
}

// Single is the world of a run in one process.
func Single() *World {
	w := newWorld(Launch{Size: 1, LocalSize: 1})
	w.pids = []int{os.Getpid()}
	return w
}

func (w *World) Rank() int      { return w.launch.Rank }
func (w *World) Size() int      { return w.launch.Size }
func (w *World) LocalRank() int { return w.launch.LocalRank }
func (w *World) LocalSize() int { return w.launch.LocalSize }

// Launcher names the launcher that started this process ("torchrun", "mpirun", "pmi", "slurm"; "" if none).
func (w *World) Launcher() string { return w.launch.Launcher }

// Err is why the run is broken (a process died or left, naming its rank and pid), or nil while every process
// is connected. It is cheap: engines poll it while they wait on other processes.
func (w *World) Err() error {
	if e := w.fail.Load(); e != nil {
		return *e
	}
	return nil
}

// Failed is closed once Err is set: a process died or left, or the run was ended.
func (w *World) Failed() <-chan struct{} { return w.failed }

// Lost is closed once the run is lost: another process died (its connection closed without the goodbye of
// Leave: kill -9, a crash, the OOM killer) or ended the run on an error (Abort, here or anywhere), and Err
// says why. Every process should then stop what it does, whether or not it needs the others right now. A
// process that ended its run and left (Leave) makes Err fail the calls that still need it, but is no loss.
func (w *World) Lost() <-chan struct{} { return w.lost }

// setFailed records a failure: the first one fails every later call (Err, Failed); lost says it is a loss
// (Lost), which takes the place of a departure recorded before. Rank 0 passes a loss on to every other
// process. The notice waits for a call in progress, so that it never overtakes that call's result.
func (w *World) setFailed(err error, except int, lost bool) {
	w.fmu.Lock()
	first := w.fail.Load() == nil
	newLoss := lost && !w.isLost
	if first || newLoss {
		w.failedRank = except
		w.fail.Store(&err)
	}
	if first {
		close(w.failed)
	}
	if newLoss {
		w.isLost = true
		close(w.lost)
	}
	w.fmu.Unlock()
	if !newLoss || w.Rank() != 0 {
		return
	}
	if w.mu.TryLock() {
		w.notify()
		w.mu.Unlock()
		return
	}
	go func() { // the call in progress sees the failure, notifies and returns
		w.mu.Lock()
		defer w.mu.Unlock()
		w.notify()
	}()
}

// notify tells every other process, once, why the run broke (rank 0, after setFailed).
func (w *World) notify() {
	w.notifyOnce.Do(func() {
		w.fmu.Lock()
		err, except := *w.fail.Load(), w.failedRank
		w.fmu.Unlock()
		w.pmu.Lock()
		defer w.pmu.Unlock()
		kind, payload := errorFrame(err)
		for _, p := range w.peers {
			if p != nil && p.rank != except && p.in != nil {
				_ = p.write(kind, payload, time.Second) // best effort: that process may be gone too
			}
		}
	})
}

// Abort ends the run with err for every process, as a process that died does: an engine that stops on an
// error (a -T timeout) tells the processes that wait elsewhere, so that every process reports the same error.
func (w *World) Abort(err error) {
	w.fmu.Lock()
	lost := w.isLost
	w.fmu.Unlock()
	if w.Size() == 1 || lost {
		return
	}
	w.setFailed(err, -1, true)
	w.pmu.Lock()
	var root *peer
	if w.Rank() != 0 && len(w.peers) > 0 && w.peers[0].in != nil {
		root = w.peers[0]
	}
	w.pmu.Unlock()
	if root != nil {
		kind, payload := errorFrame(err)
		_ = root.write(kind, payload, time.Second) // best effort: rank 0 may be gone
	}
}

// errorFrame encodes a failure notice: a timeout keeps its rank, duration, the ranks (or processes) that never
// arrived and its phase, so that every process reports it alike (exit code 4).
func errorFrame(err error) (byte, []byte) {
	var te *collectives.TimeoutError
	if errors.As(err, &te) {
		return kindTimeout, fmt.Appendf(nil, "%d\x00%d\x00%s\x00%s\x00%s", te.Rank, te.After,
			collectives.JoinRanks(te.Missing), collectives.JoinRanks(te.Processes), te.Phase)
	}
	return kindFail, []byte(err.Error())
}

// frameError is the error of a failure notice another process sent; its text is made printable.
func frameError(kind byte, payload []byte) error {
	if kind == kindTimeout {
		te := &collectives.TimeoutError{}
		f := strings.SplitN(string(payload), "\x00", 5)
		if len(f) == 5 {
			te.Rank, _ = strconv.Atoi(f[0])
			after, _ := strconv.ParseInt(f[1], 10, 64)
			te.After, te.Phase = time.Duration(after), Printable(f[4])
			te.Missing, te.Processes = numbers(f[2]), numbers(f[3])
			return te
		}
	}
	return errors.New(Printable(string(payload)))
}

// numbers reads a list that collectives.JoinRanks wrote.
func numbers(s string) []int {
	var out []int
	for r := range strings.SplitSeq(s, ",") {
		if n, err := strconv.Atoi(r); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// lostPeer is a connection that failed, a failure notice or a goodbye, seen by the connection's reader.
func (w *World) lostPeer(p *peer, f frame) {
	if f.err == nil && f.kind == kindBye {
		p.bye.Store(true)
		return
	}
	if f.err == nil { // a failure notice: rank 0 says why, or another rank aborts
		w.setFailed(frameError(f.kind, f.payload), p.rank, true)
		return
	}
	w.pmu.Lock()
	pid := 0
	if p.rank < len(w.pids) {
		pid = w.pids[p.rank]
	}
	w.pmu.Unlock()
	if p.bye.Load() { // it ended its run: only a call that still needs it fails
		w.setFailed(fmt.Errorf("bootstrap: rank %d ended its run and left (pid %d) while rank %d still needed it",
			p.rank, pid, w.Rank()), p.rank, false)
		return
	}
	if w.Rank() != 0 { // p is rank 0
		w.setFailed(fmt.Errorf("bootstrap: rank %d lost rank 0 (%s, pid %d): it died or left the run (%v)",
			w.Rank(), w.addr, pid, f.err), 0, true)
		return
	}
	w.setFailed(fmt.Errorf("bootstrap: rank %d died or left the run (pid %d; its connection to rank 0 closed: %v)",
		p.rank, pid, f.err), p.rank, true)
}

// Pid is the process id of rank's process.
func (w *World) Pid(rank int) int { return w.pids[rank] }

// AllGather sends data to every process and returns every process's data, in rank order.
func (w *World) AllGather(data []byte) ([][]byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken != nil {
		return nil, w.broken
	}
	if w.Size() == 1 {
		return [][]byte{append([]byte(nil), data...)}, nil
	}
	if err := w.Err(); err != nil {
		w.broken = err
		if w.Rank() == 0 {
			w.notify()
		}
		return nil, err
	}
	if w.Rank() == 0 {
		return w.gatherAtRoot(data)
	}
	return w.gatherAtPeer(data)
}

// Barrier returns once every process has called it.
func (w *World) Barrier() error {
	_, err := w.AllGather(nil)
	return err
}

// Leave says that this process has ended its run, then closes its connections (Close): the other processes
// take its going for a departure, which fails only a call that still needs it, not for a loss (Lost).
func (w *World) Leave() {
	if w.Size() > 1 {
		w.pmu.Lock()
		for _, p := range w.peers {
			if p != nil && p.in != nil {
				_ = p.write(kindBye, nil, time.Second) // best effort: that process may be gone
			}
		}
		w.pmu.Unlock()
	}
	w.Close()
}

// Close ends this process's part without a goodbye; a process still waiting on this one fails, and the others
// take it for a death (Lost).
func (w *World) Close() error {
	w.closed.Do(func() {
		if w.Rank() == 0 && w.Err() != nil {
			w.notify() // a notice still waiting for a call must not be lost as this process exits
		}
		close(w.done)
		if w.ln != nil {
			w.ln.Close()
		}
		for _, p := range w.peers {
			if p != nil {
				p.conn.Close()
			}
		}
	})
	return nil
}

// await returns the next frame of ch, or errTimeout past timeout (none: wait forever), or the world's failure.
func (w *World) await(ch <-chan frame, timeout time.Duration) (frame, error) {
	var tc <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		tc = t.C
	}
	select {
	case f := <-ch:
		return f, f.err
	case <-w.failed:
		select {
		case f := <-ch: // what came before the failure still counts
			return f, f.err
		default:
		}
		return frame{}, w.Err()
	case <-tc:
		return frame{}, errTimeout
	}
}

func (w *World) gatherAtRoot(data []byte) ([][]byte, error) {
	parts := make([][]byte, w.Size())
	parts[0] = append([]byte(nil), data...)
	end := deadline(w.timeout)
	for _, p := range w.peers[1:] {
		wait := time.Duration(0)
		if !end.IsZero() {
			wait = max(time.Until(end), time.Nanosecond)
		}
		f, err := w.await(p.in, wait)
		if err == nil && f.kind != kindData {
			err = fmt.Errorf("unexpected frame kind %d", f.kind)
		}
		if errors.Is(err, errTimeout) {
			return nil, w.breakAtRoot(p.rank, err, w.silent(p.rank))
		}
		if err != nil {
			return nil, w.breakAtRoot(p.rank, err, nil)
		}
		parts[p.rank] = f.payload
	}
	result := encodeParts(parts)
	for _, p := range w.peers[1:] {
		if err := p.write(kindResult, result, w.timeout); err != nil {
			return nil, w.breakAtRoot(p.rank, err, nil)
		}
	}
	return parts, nil
}

// silent lists the processes from rank on whose part of a gather has not arrived (rank's has not): those a
// timeout names.
func (w *World) silent(rank int) []int {
	out := []int{rank}
	for _, p := range w.peers[rank+1:] {
		select {
		case f := <-p.in:
			if f.err == nil && f.kind == kindData {
				continue // the call fails: what it sent is of no more use
			}
		default:
		}
		out = append(out, p.rank)
	}
	return out
}

// breakAtRoot records that rank failed and tells every other process why, so that none waits for its timeout.
// A process that stopped answering is a timeout (exit code 4) on every process, naming the silent ones; one
// that died is not.
func (w *World) breakAtRoot(rank int, err error, silent []int) error {
	if failure := w.Err(); failure != nil {
		w.broken = failure
		w.notify()
		return failure
	}
	if errors.Is(err, errTimeout) {
		w.broken = w.timeoutError(silent)
	} else {
		w.broken = fmt.Errorf("bootstrap: rank %d died or left the run (pid %d; its connection to rank 0 failed: %v)",
			rank, w.pids[rank], err)
	}
	kind, payload := errorFrame(w.broken)
	for _, p := range w.peers[1:] {
		if p.rank != rank {
			_ = p.write(kind, payload, time.Second)
		}
	}
	return w.broken
}

// timeoutError is a wait on other processes that ran past the timeout, as the harness reports every -T expiry:
// it names the processes that did not answer, not this one, which waited.
func (w *World) timeoutError(silent []int) error {
	return &collectives.TimeoutError{Rank: w.Rank(), Phase: "the rendezvous (AllGather/Barrier)", After: w.timeout,
		Processes: silent}
}

func (w *World) gatherAtPeer(data []byte) ([][]byte, error) {
	p := w.peers[0]
	err := p.write(kindData, data, w.timeout)
	var f frame
	if err == nil {
		// Rank 0 names the process that did not answer when its own wait ends: wait a little longer for that
		// verdict, so that a process stopped elsewhere is not taken for rank 0.
		wait := w.timeout
		if wait > 0 {
			wait += verdictGrace
		}
		f, err = w.await(p.in, wait)
	}
	switch {
	case errors.Is(err, errTimeout):
		w.broken = w.timeoutError([]int{0})
	case err != nil && w.Err() != nil:
		w.broken = w.Err()
	case err != nil:
		w.broken = fmt.Errorf("bootstrap: rank %d lost rank 0 (%s): %v", w.Rank(), w.addr, err)
	case f.kind == kindFail || f.kind == kindTimeout:
		w.broken = w.Err() // the reader recorded this notice before it delivered it: the same error value
		if w.broken == nil {
			w.broken = frameError(f.kind, f.payload)
		}
	case f.kind != kindResult:
		w.broken = fmt.Errorf("bootstrap: rank %d got frame kind %d from rank 0, want a result", w.Rank(), f.kind)
	}
	if w.broken != nil {
		return nil, w.broken
	}
	parts, err := decodeParts(f.payload, w.Size())
	if err != nil {
		w.broken = fmt.Errorf("bootstrap: rank %d: %v", w.Rank(), err)
	}
	return parts, w.broken
}

// deriveLocal counts the processes on this host, for launchers that do not say.
func (w *World) deriveLocal() error {
	host, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("bootstrap: hostname: %v", err)
	}
	hosts, err := w.AllGather([]byte(host))
	if err != nil {
		return err
	}
	w.launch.LocalRank, w.launch.LocalSize = 0, 0
	for r, h := range hosts {
		if string(h) == host {
			if r < w.Rank() {
				w.launch.LocalRank++
			}
			w.launch.LocalSize++
		}
	}
	return nil
}
