package hostengine

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// hub joins the fake processes of one run inside the test process: each opens its own communicator through a
// World of its own, so that the ranks meet only through the shared-memory transport, as processes would.
type hub struct {
	n       int
	mu      sync.Mutex
	cond    *sync.Cond
	round   int
	parts   [][]byte
	arrived int
	result  [][]byte
	fail    atomic.Pointer[error]
	hosts   []string // per process; nil: all alike
	// dieAt, when not 0, is the AllGather round at which process dies stops answering, as a process killed
	// there: the others' AllGather then fails, as a World's does when a process is gone.
	dieAt, dies int
}

type hubWorld struct {
	h    *hub
	rank int
}

func newHub(n int) *hub {
	h := &hub{n: n, parts: make([][]byte, n)}
	h.cond = sync.NewCond(&h.mu)
	return h
}

func (w hubWorld) Rank() int { return w.rank }
func (w hubWorld) Size() int { return w.h.n }
func (w hubWorld) Barrier() error {
	_, err := w.AllGather(nil)
	return err
}

func (w hubWorld) AllGather(data []byte) ([][]byte, error) {
	h := w.h
	if h.hosts != nil { // the setup exchange names the host first
		if i := bytes.IndexByte(data, 0); i > 0 {
			host, _ := os.Hostname()
			if string(data[:i]) == host {
				data = append([]byte(h.hosts[w.rank]), data[i:]...)
			}
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	round := h.round
	if h.dieAt > 0 && round+1 == h.dieAt && w.rank == h.dies {
		dead := fmt.Errorf("process %d died", w.rank)
		h.fail.Store(&dead)
		h.cond.Broadcast()
		h.mu.Unlock()
		select {} // killed: it answers nothing and cleans nothing up
	}
	h.parts[w.rank] = append([]byte(nil), data...)
	if h.arrived++; h.arrived == h.n {
		h.result, h.parts, h.arrived = h.parts, make([][]byte, h.n), 0
		h.round++
		h.cond.Broadcast()
	}
	for h.round == round {
		if e := h.fail.Load(); e != nil {
			return nil, *e
		}
		h.cond.Wait()
	}
	return h.result, nil
}

func (w hubWorld) Err() error {
	if e := w.h.fail.Load(); e != nil {
		return *e
	}
	return nil
}

// openProcs opens one communicator per fake process, threads x gpus ranks each.
func openProcs(t testing.TB, h *hub, threads, gpus int, env map[string]string, timeouts []time.Duration, chunk int64) ([]*comm, []error) {
	t.Helper()
	comms, errs := make([]*comm, h.n), make([]error, h.n)
	var wg sync.WaitGroup
	for p := range h.n {
		wg.Go(func() {
			var timeout time.Duration
			if timeouts != nil {
				timeout = timeouts[p]
			}
			c, err := New().Open(collectives.Config{NThreads: threads, NGpus: gpus, World: hubWorld{h, p}, Env: env, Timeout: timeout})
			if errs[p] = err; err == nil {
				comms[p] = c.(*comm)
				if chunk > 0 {
					comms[p].chunkBytes = chunk
				}
				t.Cleanup(func() { c.Close() })
			}
		})
	}
	wg.Wait()
	return comms, errs
}

func mustOpenProcs(t testing.TB, procs, threads, gpus int, env map[string]string, chunk int64) []*comm {
	t.Helper()
	comms, errs := openProcs(t, newHub(procs), threads, gpus, env, nil, chunk)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return comms
}

// useShmDir points the arenas at a fresh directory, so that a test can see what is left behind.
func useShmDir(t *testing.T) string {
	dir := t.TempDir()
	old := shmDir
	shmDir = dir
	t.Cleanup(func() { shmDir = old })
	return dir
}

// Every algorithm gives the same bits with its ranks spread over processes as with all ranks in one process,
// and every element is right.
func TestAcrossProcessesSameBits(t *testing.T) {
	useShmDir(t)
	dts := []collectives.DType{collectives.Float, collectives.BFloat16, collectives.Int32, collectives.Half}
	arms := []struct {
		name string
		env  map[string]string
	}{
		{"ring and direct", nil},
		{"dda", map[string]string{"RCCL_DDA_ENABLE": "1", "RCCL_DDA_SENDBUF_BYTES": "64K", "RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES": "256"}},
		{"lp scaled", map[string]string{"RCCL_LOW_PRECISION_ENABLE": "1", "RCCLX_TESTS_LP_MIN_BYTES": "0",
			"RCCLX_TESTS_LP_MODE": collectives.LPModeScaled, "RCCLX_TESTS_LP_BLOCK": "16"}},
	}
	layouts := [][3]int{{2, 1, 1}, {3, 1, 1}, {2, 2, 2}} // processes, threads, gpus
	if testing.Short() {
		layouts = layouts[1:2]
	}
	for _, lay := range layouts {
		for _, arm := range arms {
			procs, threads, gpus := lay[0], lay[1], lay[2]
			n := procs * threads * gpus
			t.Run(fmt.Sprintf("%s/%dx%dx%d", arm.name, procs, threads, gpus), func(t *testing.T) {
				multi := mustOpenProcs(t, procs, threads, gpus, arm.env, 256)
				one := openGroups(t, procs*threads, gpus, arm.env, 0, 256)
				ran := map[string]bool{}
				forEachCase(n, dts, func(tc testCase) {
					if tc.op > collectives.Max {
						return
					}
					seed := rand.Uint64()
					a, b := runCase(t, one, tc, seed), runCaseOn(t, multi, tc, seed)
					if a.err != nil || b.err != nil || a.algo != b.algo {
						t.Fatalf("%v: one process %s %v, several %s %v", tc, a.algo, a.err, b.algo, b.err)
					}
					ran[b.algo] = true
					for r := range n {
						if b.wrong[r] != 0 || !bytes.Equal(a.out[r], b.out[r]) {
							t.Errorf("%v seed %#x (%s): rank %d: %d wrong elements, same bits as one process: %v",
								tc, seed, b.algo, r, b.wrong[r], bytes.Equal(a.out[r], b.out[r]))
						}
					}
				})
				t.Logf("algorithms: %v", ran)
				want := map[string][]string{"ring and direct": {collectives.Ring, collectives.Direct},
					"dda": {collectives.DDA, collectives.DDAFlat, collectives.DDATree}, "lp scaled": {collectives.LowPrecision}}
				for _, algo := range want[arm.name] {
					if !ran[algo] {
						t.Errorf("no case ran %s", algo)
					}
				}
			})
		}
	}
}

// The arenas are unlinked once every process has mapped them: a run leaves nothing in the directory, even if
// it is killed.
func TestAcrossProcessesLeavesNoFiles(t *testing.T) {
	dir := useShmDir(t)
	comms := mustOpenProcs(t, 3, 1, 1, nil, 0)
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(left) != 0 {
		t.Errorf("files left after Open: %v", left)
	}
	out := runCaseOn(t, comms, testCase{coll: collectives.AllReduce, dt: collectives.Float, op: collectives.Sum, bytes: 1 << 20}, 7)
	if out.err != nil || out.wrong[2] != 0 {
		t.Errorf("all_reduce after unlinking: %v, %v wrong", out.err, out.wrong)
	}
}

// A process killed during the set-up, after its arena's file exists, leaves no file behind: the others remove
// every file of the run when the set-up fails.
func TestAcrossProcessesKilledDuringSetUpLeavesNoFiles(t *testing.T) {
	dir := useShmDir(t)
	h := newHub(3)
	h.dieAt, h.dies = 2, 2 // round 1 names the run; process 2 dies at round 2, after creating its file
	comms, errs := make([]*comm, 2), make([]error, 2)
	var wg sync.WaitGroup
	for p := range 2 {
		wg.Go(func() {
			c, err := New().Open(collectives.Config{NThreads: 1, NGpus: 1, World: hubWorld{h, p}})
			if errs[p] = err; err == nil {
				comms[p] = c.(*comm)
			}
		})
	}
	go func() { _, _ = New().Open(collectives.Config{NThreads: 1, NGpus: 1, World: hubWorld{h, 2}}) }()
	wg.Wait()
	for p, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "process 2 died") {
			t.Errorf("process %d: Open = %v, want the death of process 2", p, err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("files left: %v", left)
	}
}

// A timeout in one process ends the calls of every other, with the same timeout error (exit code 4), even in a
// process that has no timeout of its own.
func TestAcrossProcessesTimeoutReachesEveryProcess(t *testing.T) {
	useShmDir(t)
	env := map[string]string{collectives.EnvSkipRank: "3"} // process 1's second rank; its first waits forever
	comms, errs := openProcs(t, newHub(2), 1, 2, env, []time.Duration{300 * time.Millisecond, 0}, 0)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out := runCaseOn(t, comms, testCase{coll: collectives.AllReduce, dt: collectives.Float, op: collectives.Sum, bytes: 4096}, 1)
	var te *collectives.TimeoutError
	if !errors.As(out.err, &te) || te.Rank > 1 || te.After != 300*time.Millisecond {
		t.Errorf("error %v, want process 0's timeout", out.err)
	}
	for p, c := range comms {
		if !errors.As(c.err(), &te) {
			t.Errorf("process %d ended with %v, want the timeout", p, c.err())
		}
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("took %v", el)
	}
}

// The skipping rank's call does not return before the run fails: were its process to run on (into the harness's
// next rendezvous, with a timer of its own), it could report a silent rank 0 before its peers report the rank
// that never arrived. Its process has no timeout; it ends with the peer's timeout naming it.
func TestAcrossProcessesSkippedRankWaitsForTheRunToFail(t *testing.T) {
	useShmDir(t)
	const timeout = 300 * time.Millisecond
	comms, errs := openProcs(t, newHub(2), 1, 1, map[string]string{collectives.EnvSkipRank: "1"}, []time.Duration{timeout, 0}, 0)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ended := make([]time.Duration, 2)
	waited := make([]error, 2)
	var wg sync.WaitGroup
	for p, c := range comms {
		wg.Go(func() {
			g := c.Groups()[0]
			b, err := g.Alloc(0, 4096)
			if err != nil {
				t.Error(err)
				return
			}
			r := g.Ranks()[0]
			call := &collectives.Call{
				Coll: collectives.AllReduce, DType: collectives.Float, Op: collectives.Sum,
				Counts: []collectives.Counts{collectives.AllReduce.Counts(4096, 2, r, collectives.Float)},
				Send:   []collectives.View{{Buf: b}},
				Recv:   []collectives.View{{Buf: b}},
			}
			if waited[p] = g.Launch(call); waited[p] == nil {
				waited[p] = g.Wait()
			}
			ended[p] = time.Since(start)
		})
	}
	wg.Wait()
	for p := range comms {
		var te *collectives.TimeoutError
		if !errors.As(waited[p], &te) || te.Rank != 0 || !slices.Equal(te.Missing, []int{1}) {
			t.Errorf("process %d: Wait = %v after %v, want rank 0's timeout naming rank 1", p, waited[p], ended[p])
		}
	}
	if ended[1] < timeout {
		t.Errorf("the skipping rank's call returned after %v, before its peer's %v timeout", ended[1], timeout)
	}
}

// A process that died (the World says so) ends every wait on it within the poll interval, naming it.
func TestAcrossProcessesDeadProcessEndsWaits(t *testing.T) {
	useShmDir(t)
	h := newHub(2)
	comms, errs := openProcs(t, h, 1, 2, nil, nil, 0)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	g := comms[0].Groups()[0] // process 1 never calls: it died
	var calls []*collectives.Call
	call := &collectives.Call{Coll: collectives.AllReduce, DType: collectives.Float, Op: collectives.Sum}
	for l := range 2 {
		b, err := g.Alloc(l, 4096)
		if err != nil {
			t.Fatal(err)
		}
		call.Counts = append(call.Counts, collectives.AllReduce.Counts(4096, 4, 2*0+l, collectives.Float))
		call.Send = append(call.Send, collectives.View{Buf: b})
		call.Recv = append(call.Recv, collectives.View{Buf: b})
	}
	calls = append(calls, call)
	if err := g.Launch(calls[0]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	dead := errors.New("bootstrap: rank 1 died or left the run (pid 4242; its connection to rank 0 closed: EOF)")
	h.fail.Store(&dead)
	start := time.Now()
	err := g.Wait()
	if err == nil || !strings.Contains(err.Error(), "rank 1 died or left the run (pid 4242;") {
		t.Errorf("Wait = %v, want the World's failure", err)
	}
	if el := time.Since(start); el > 500*time.Millisecond {
		t.Errorf("the waits ended %v after the World failed", el)
	}
}

func TestAcrossProcessesRejects(t *testing.T) {
	useShmDir(t)
	h := newHub(3)
	h.hosts = []string{"node-a", "node-a", "node-b"}
	_, errs := openProcs(t, h, 1, 1, nil, nil, 0)
	for p, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "all processes must run on one machine") || strings.Contains(err.Error(), "\n") {
			t.Errorf("process %d: %v, want one line saying the host engine needs one machine", p, err)
		}
	}
}

// The arena allocator reuses and merges what was released, and a full file system is an error, not a crash.
func TestArenaAllocator(t *testing.T) {
	dir := useShmDir(t)
	s := &shared{arenas: make([]*arena, 1)}
	if err := s.create(filepath.Join(dir, "a"), 8<<20, pageBytes); err != nil {
		t.Fatal(err)
	}
	defer s.close()
	a := s.arenas[0]
	x, _ := a.alloc(100)
	y, _ := a.alloc(1000)
	z, _ := a.alloc(64)
	for _, b := range [][]byte{x, y, z} {
		if off, ok := a.offset(b); !ok || off%bufferAlign != 0 {
			t.Fatalf("allocation at %d (in arena %v)", off, ok)
		}
	}
	top := a.top
	a.release(x)
	a.release(y)
	w, _ := a.alloc(1100) // fits where x and y were, merged
	if off, _ := a.offset(w); off != pageBytes || a.top != top {
		t.Errorf("merged space not reused: offset %d, top %d -> %d", off, top, a.top)
	}
	if _, err := a.alloc(16 << 20); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("allocating past the file system: %v, want an error naming %s", err, dir)
	}
}
