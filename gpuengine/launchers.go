package gpuengine

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// Launcher threads. A kernel launch costs the host ~4 us, so one thread driving n GPUs pays n launches per
// call, and small calls are bound by that. With several local ranks (and RCCLX_TESTS_GPU_LAUNCHERS on), every
// rank after the first gets an OS thread of its own, its context current, that launches the rank's part of
// each phase of a call (callPhases) while the harness thread launches the first rank's. A phase is enqueued on
// every rank before the next one starts, and Launch returns only once every part is enqueued, so the
// harness's timing and Wait see no difference. The copy-engine transport and graph capture stay on the harness
// thread: their events and capture span the ranks in one order.

// launcherSpin is how long a launcher spins for its next job before it parks: the calls of a timed loop come
// microseconds apart, the pauses between sizes milliseconds.
const launcherSpin = 200 * time.Microsecond

// job is one phase of a call on one rank.
type job struct {
	call *collectives.Call
	algo string
	f    phase
}

// launcher runs do for each posted job, one at a time, on its own locked thread, after setup there.
type launcher struct {
	setup  func() error
	do     func(job) error
	posted atomic.Uint64 // jobs posted; job is written before
	done   atomic.Uint64 // jobs finished; err is written before
	wake   chan struct{} // a parked launcher waits here; every post leaves a token
	exited chan struct{}
	stop   bool // read with the post that follows it
	job    job
	err    error
}

func startLauncher(setup func() error, do func(job) error) *launcher {
	w := &launcher{setup: setup, do: do, wake: make(chan struct{}, 1), exited: make(chan struct{})}
	go w.run()
	return w
}

func (w *launcher) run() {
	runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
	defer close(w.exited)
	failed := w.setup()
	for seen := uint64(0); ; {
		seen = w.next(seen)
		if w.stop {
			return
		}
		w.err = failed
		if failed == nil && w.job.call != nil { // no call: a wake-up
			w.err = w.do(w.job)
		}
		w.done.Store(seen)
	}
}

// next waits for a post after seen: spinning at first, then parked until a post wakes it.
func (w *launcher) next(seen uint64) uint64 {
	start := time.Now()
	for i := 1; ; i++ {
		if p := w.posted.Load(); p != seen {
			return p
		}
		if i%256 == 0 && time.Since(start) > launcherSpin {
			<-w.wake // a token left by an earlier post only brings another spell of spinning
			start = time.Now()
		}
	}
}

// post hands the launcher j; wait returns its outcome.
func (w *launcher) post(j job) {
	w.job = j
	w.posted.Add(1)
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *launcher) wait() error {
	p := w.posted.Load()
	for i := 0; w.done.Load() != p; i++ {
		if i > 1000 {
			runtime.Gosched() // a launch blocked behind a full queue: let others run
		}
	}
	return w.err
}

// close ends the launcher and waits for its thread to end.
func (w *launcher) close() {
	w.stop = true
	w.post(job{})
	<-w.exited
}

// launchParallel is Launch's kernel path with launchers for phase f: rank l > 0 on launcher l, rank 0 here.
func (g *group) launchParallel(call *collectives.Call, algo string, f phase) error {
	if g.launchers == nil {
		g.launchers = make([]*launcher, len(g.ranks))
		for l := 1; l < len(g.ranks); l++ {
			r := g.ranks[l]
			g.launchers[l] = startLauncher(func() error { return runtimeError(r, r.ctx.SetCurrent()) },
				func(j job) error { return runtimeError(r, g.c.launch(r, j.call, l, j.algo, j.f)) })
		}
	}
	skip := func(l int) bool { return g.ranks[l].global == g.c.hooks.SkipRank }
	for l := 1; l < len(g.ranks); l++ {
		if !skip(l) {
			g.launchers[l].post(job{call, algo, f})
		}
	}
	var first error
	if !skip(0) {
		first = g.launchOn(0, call, algo, f)
	}
	for l := 1; l < len(g.ranks); l++ {
		if skip(l) {
			continue
		}
		if err := g.launchers[l].wait(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Wake has every launcher spinning again (collectives.Waker), so that the next call's launches start at once.
func (g *group) Wake() {
	for _, w := range g.launchers {
		if w != nil {
			w.post(job{})
		}
	}
	for _, w := range g.launchers {
		if w != nil {
			_ = w.wait() // a launcher whose setup failed says so at the next launch
		}
	}
}

func (g *group) stopLaunchers() {
	for _, w := range g.launchers {
		if w != nil {
			w.close()
		}
	}
	g.launchers = nil
}
