package harness

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/world"
	"github.com/rcclx-tests/rcclx-tests/internal/syncbuf"
)

// lossyWorld is rank 0 of a 2-process run whose other process answers every call alike until it is lost
// (lose), as bootstrap's World reports a death: Lost closes, Err and every later call fail.
type lossyWorld struct {
	mu      sync.Mutex
	lost    chan struct{}
	err     error
	aborted []error
}

func newLossyWorld() *lossyWorld { return &lossyWorld{lost: make(chan struct{})} }

func (w *lossyWorld) Rank() int { return 0 }
func (w *lossyWorld) Size() int { return 2 }

func (w *lossyWorld) AllGather(data []byte) ([][]byte, error) {
	if err := w.Err(); err != nil {
		return nil, err
	}
	return [][]byte{data, data}, nil
}

func (w *lossyWorld) Barrier() error { _, err := w.AllGather(nil); return err }

func (w *lossyWorld) Lost() <-chan struct{} { return w.lost }

func (w *lossyWorld) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *lossyWorld) Abort(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.aborted = append(w.aborted, err)
}

// lose records the other process's death, once.
func (w *lossyWorld) lose(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
		close(w.lost)
	}
}

var errPeerDied = errors.New("bootstrap: rank 1 died or left the run (pid 4711; its connection to rank 0 closed: EOF)")

// TestLostProcessEndsRun: once the World says another process is lost, a run stuck in the engine ends at once
// with one line naming the loss and the size in progress and exit 2, writing its JSON marked incomplete:
// the engine is cancelled (collectives.Canceler), and a thread that does not come back (an engine that cannot
// be cancelled) is left behind after world.LostGrace. Not after abandonAfter (5 s), never with 130.
func TestLostProcessEndsRun(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		t.Run(fmt.Sprintf("ignoreCancel=%v", ignore), func(t *testing.T) {
			seed := rand.Uint64()
			e := newFake(seed)
			e.stuck, e.ignoreCancel, e.release = true, ignore, make(chan struct{})
			defer close(e.release)
			w := newLossyWorld()
			var lostAt time.Time
			e.onLaunch = func(*collectives.Call) { // the warm-up's first call: the other process dies now
				lostAt = time.Now()
				go w.lose(errPeerDied)
			}
			file := filepath.Join(t.TempDir(), "r.json")
			r := runWith(t, collectives.AllReduce, seedArgs(seed, "-b", "1M", "-e", "1M", "-g", "2", "-J", file),
				testSource(e), func(a *app) {
					a.world = func(time.Duration, <-chan struct{}) (collectives.World, error) { return w, nil }
				})
			took := time.Since(lostAt)
			want := "all_reduce_perf: " + errPeerDied.Error() + " at all_reduce size 1048576\n"
			if r.code != exit.Runtime || r.stderr != want || took > 2*time.Second {
				t.Errorf("exit %d %v after the loss, stderr %q: want exit 2 and %q", r.code, took, r.stderr, want)
			}
			if e.cancelErr != errPeerDied {
				t.Errorf("the engine was cancelled with %v, want the World's error", e.cancelErr)
			}
			if rec := loadRecord(t, file); !rec.Incomplete || len(rec.Errors) != 1 || rec.Errors[0] != errPeerDied.Error() {
				t.Errorf("JSON: incomplete %v, errors %q", rec.Incomplete, rec.Errors)
			}
		})
	}
}

// TestLostProcessLastResort: a process stuck where nothing looks for a loss (here the engine's Prepare, on the
// harness's own goroutine) is ended by the watch world.LostDeadline after the loss, with the same line and exit 2.
func TestLostProcessLastResort(t *testing.T) {
	defer func(d time.Duration) { world.LostDeadline = d }(world.LostDeadline)
	world.LostDeadline = 200 * time.Millisecond
	seed := rand.Uint64()
	e := newFake(seed)
	e.prepare, e.prepareBlock = true, make(chan struct{})
	w := newLossyWorld()
	var stderr syncbuf.Buffer
	type ended struct {
		code   int
		stderr string
	}
	exited := make(chan ended, 1)
	a := &app{coll: collectives.AllReduce, stdout: &syncbuf.Buffer{}, stderr: &stderr,
		getenv: func(string) string { return "" }, environ: func() []string { return nil },
		engines: testSource(e), interrupted: func() bool { return false }, now: time.Now,
		world: func(time.Duration, <-chan struct{}) (collectives.World, error) { return w, nil },
		exit:  func(code int) { exited <- ended{code, stderr.String()} }}
	go a.main(seedArgs(seed, "-b", "8", "-e", "8"))
	for start := time.Now(); ; time.Sleep(time.Millisecond) { // until the run is in Prepare
		e.mu.Lock()
		in := len(e.prepared) > 0
		e.mu.Unlock()
		if in {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("Prepare not reached; stderr %q", stderr.String())
		}
	}
	lostAt := time.Now()
	w.lose(errPeerDied)
	select {
	case x := <-exited:
		took := time.Since(lostAt)
		want := "all_reduce_perf: " + errPeerDied.Error() + "\n"
		if x.code != exit.Runtime || x.stderr != want || took > time.Second {
			t.Errorf("exit %d %v after the loss, stderr %q: want exit 2 and %q", x.code, took, x.stderr, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no exit 5 s after the loss; stderr %q", stderr.String())
	}
	close(e.prepareBlock) // the abandoned run ends on its own (its output is no longer looked at)
	if !strings.Contains(stderr.String(), errPeerDied.Error()) {
		t.Errorf("stderr %q", stderr.String())
	}
}
