package bootstrap

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
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
	peers  []*peer // rank 0: indexed by rank, nil at 0; other ranks: the one connection to rank 0
	ln     net.Listener
	done   chan struct{}
	closed sync.Once
	broken error // once a call failed, every later call fails the same way
}

type peer struct {
	rank int
	conn net.Conn
	in   <-chan frame
}

// FromEnv detects the launcher and meets the other processes at the rendezvous address; it returns once every
// process has arrived. timeout bounds connecting and every later call (a call waiting on a peer fails past it);
// 0 waits forever in calls and ConnectTimeout for connecting. Without a launcher the World has Size 1.
func FromEnv(timeout time.Duration) (*World, error) {
	l, err := Detect(os.Getenv)
	if err != nil {
		return nil, err
	}
	if l.Size == 1 {
		return Single(), nil
	}
	w := &World{launch: l, timeout: timeout, done: make(chan struct{})}
	if w.addr, err = Rendezvous(os.Getenv, l); err != nil {
		return nil, err
	}
	connectTimeout := timeout
	if connectTimeout <= 0 {
		connectTimeout = ConnectTimeout
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

// Single is the world of a run in one process.
func Single() *World {
	return &World{launch: Launch{Size: 1, LocalSize: 1}, done: make(chan struct{})}
}

func (w *World) Rank() int      { return w.launch.Rank }
func (w *World) Size() int      { return w.launch.Size }
func (w *World) LocalRank() int { return w.launch.LocalRank }
func (w *World) LocalSize() int { return w.launch.LocalSize }

// Launcher names the launcher that started this process ("torchrun", "mpirun", "pmi", "slurm"; "" if none).
func (w *World) Launcher() string { return w.launch.Launcher }

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

// Close ends this process's part; a process still waiting on this one fails.
func (w *World) Close() error {
	w.closed.Do(func() {
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

func (w *World) gatherAtRoot(data []byte) ([][]byte, error) {
	parts := make([][]byte, w.Size())
	parts[0] = append([]byte(nil), data...)
	for _, p := range w.peers[1:] {
		f, err := await(p.in, w.timeout)
		if err == nil && f.kind != kindData {
			err = fmt.Errorf("unexpected frame kind %d", f.kind)
		}
		if err != nil {
			return nil, w.breakAtRoot(p.rank, err)
		}
		parts[p.rank] = f.payload
	}
	result := encodeParts(parts)
	for _, p := range w.peers[1:] {
		if err := writeFrame(p.conn, kindResult, result, w.timeout); err != nil {
			return nil, w.breakAtRoot(p.rank, err)
		}
	}
	return parts, nil
}

// breakAtRoot records that rank failed and tells every other process why, so that none waits for its timeout.
// A process that stopped answering is a timeout (exit code 4) on every process; one that died is not.
func (w *World) breakAtRoot(rank int, err error) error {
	kind := kindFail
	if errors.Is(err, errTimeout) {
		kind = kindTimeout
		w.broken = w.timeoutError(fmt.Sprintf("the rendezvous (AllGather/Barrier): process %d did not answer", rank))
	} else {
		w.broken = fmt.Errorf("bootstrap: rank %d died or left the run (its connection to rank 0 failed: %v)", rank, err)
	}
	for _, p := range w.peers[1:] {
		if p.rank != rank {
			_ = writeFrame(p.conn, kind, []byte(w.broken.Error()), time.Second)
		}
	}
	return w.broken
}

// timeoutError is a wait on another process that ran past the timeout, as the harness reports every -T expiry.
func (w *World) timeoutError(phase string) error {
	return &collectives.TimeoutError{Rank: w.Rank(), Phase: phase, After: w.timeout}
}

func (w *World) gatherAtPeer(data []byte) ([][]byte, error) {
	p := w.peers[0]
	err := writeFrame(p.conn, kindData, data, w.timeout)
	var f frame
	if err == nil {
		f, err = await(p.in, w.timeout)
	}
	switch {
	case errors.Is(err, errTimeout):
		w.broken = w.timeoutError(fmt.Sprintf("the rendezvous (AllGather/Barrier): process 0 (%s) did not answer", w.addr))
	case err != nil:
		w.broken = fmt.Errorf("bootstrap: rank %d lost rank 0 (%s): %v", w.Rank(), w.addr, err)
	case f.kind == kindFail:
		w.broken = errors.New(string(f.payload))
	case f.kind == kindTimeout:
		w.broken = w.timeoutError("the rendezvous (AllGather/Barrier), after rank 0 reported: " + string(f.payload))
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
