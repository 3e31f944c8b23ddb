package harness

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
)

// procs lets goroutines stand in for the processes of a multi-process run.
type procs struct {
	n       int
	mu      sync.Mutex
	cond    *sync.Cond
	gen     int
	arrived int
	slots   [][]byte
	result  [][]byte
}

func newProcs(n int) *procs {
	p := &procs{n: n, slots: make([][]byte, n)}
	p.cond = sync.NewCond(&p.mu)
	return p
}

func (p *procs) gather(rank int, data []byte) [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	gen := p.gen
	p.slots[rank] = data
	p.arrived++
	if p.arrived == p.n {
		p.result, p.slots = p.slots, make([][]byte, p.n)
		p.arrived = 0
		p.gen++
		p.cond.Broadcast()
	}
	for gen == p.gen {
		p.cond.Wait()
	}
	return p.result
}

type procWorld struct {
	p    *procs
	rank int
}

func (w procWorld) Rank() int                               { return w.rank }
func (w procWorld) Size() int                               { return w.p.n }
func (w procWorld) AllGather(data []byte) ([][]byte, error) { return w.p.gather(w.rank, data), nil }
func (w procWorld) Barrier() error                          { w.p.gather(w.rank, nil); return nil }

// multiRun runs the harness as n processes; engine makes each process's engine.
func multiRun(t *testing.T, n int, args []string, engine func(rank int) *fakeEngine) []run {
	t.Helper()
	p := newProcs(n)
	out := make([]run, n)
	var wg sync.WaitGroup
	for rank := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[rank] = runWith(t, collectives.AllReduce, args, testSource(engine(rank)), func(a *app) {
				a.world = func(time.Duration, <-chan struct{}) (collectives.World, error) { return procWorld{p, rank}, nil }
			})
		}()
	}
	wg.Wait()
	return out
}

// TestMultiProcess: two processes of two threads each; rank 0 prints everyone's devices and the combined rows,
// the other prints nothing; a wrong element on the other process fails both.
func TestMultiProcess(t *testing.T) {
	seed := rand.Uint64()
	file := filepath.Join(t.TempDir(), "r.json")
	args := seedArgs(seed, append(small, "-t", "2", "-a", "3", "-J", file)...)
	runs := multiRun(t, 2, args, func(int) *fakeEngine { return newFake(seed) })
	if runs[0].code != exit.OK || runs[1].code != exit.OK || runs[1].stdout != "" {
		t.Fatalf("exits %d %d\n%s%s%s", runs[0].code, runs[1].code, runs[0].stdout, runs[0].stderr, runs[1].stderr)
	}
	if n := strings.Count(runs[0].stdout, "#  Rank "); n != 4 {
		t.Errorf("%d device lines, want 4", n)
	}
	if rec := loadRecord(t, file); len(rec.Config.Devices) != 4 || len(rec.Results) != 7 {
		t.Errorf("JSON: %d devices, %d results", len(rec.Config.Devices), len(rec.Results))
	}

	runs = multiRun(t, 2, seedArgs(seed, small...), func(rank int) *fakeEngine {
		e := newFake(seed)
		e.corruptRank = 1
		return e
	})
	if runs[0].code != exit.TestFailed || runs[1].code != exit.TestFailed {
		t.Fatalf("exits %d %d", runs[0].code, runs[1].code)
	}
	for _, f := range tableRows(runs[0].stdout) {
		if f[8] != "1" || f[12] != "1" {
			t.Errorf("row %v: want the other process's wrong element", f)
		}
	}
}
