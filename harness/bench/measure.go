package bench

import (
	"slices"
	"sync"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
)

// timing is one thread's measurement of one half, per operation.
type timing struct {
	sec    float64   // completion time: launch of the first operation to the end of the last
	cpuSec float64   // host time spent launching (-C)
	iters  []float64 // -I: seconds per operation in each iteration
}

// pacedBytes is the size from which a Paced group (the host engine) gets its timed iterations one at a time,
// each awaited before the next, so that SIGINT stops a long half between iterations instead of after every
// queued one. An iteration is then milliseconds long, and the wait between iterations a negligible part of it.
const pacedBytes = 16 << 20

// measure runs the warmup and the timed iterations of one half on this thread and returns its timing. Threads
// (and processes) start the clock together after a barrier. gate (nil: never) stops the half between
// iterations when the run is interrupted: measure then returns exit.ErrInterrupted.
func (t *thread) measure(p plan.Point, inPlace bool, bar *barrier, gate *iterGate) (timing, error) {
	o := t.opts
	ops := o.Iters * o.AggIters
	calls := t.timedCalls(p, inPlace, max(ops, o.Warmup))
	var tag string // kernel timing's and rocTX's name of this half
	if t.kt != nil || t.ranges != nil {
		tag = t.tag(p, inPlace)
	}
	if t.kt != nil {
		if err := t.group.Wait(); err != nil { // the window's anchor is recorded on idle streams
			return timing{}, err
		}
		if err := t.kt.open(); err != nil {
			return timing{}, err
		}
	}
	if err := t.launchTimed(calls, 0, o.Warmup, 1); err != nil { // the timed loop's path, not aggregated
		return timing{}, err
	}
	if err := t.group.Wait(); err != nil {
		return timing{}, err
	}
	if err := t.kt.close(tag + " phase=setup"); err != nil {
		return timing{}, err
	}
	if err := t.kt.open(); err != nil {
		return timing{}, err
	}
	graph, graphs := t.group.(collectives.Grapher)
	graphs = graphs && o.Graph > 0
	_, pacedGroup := t.group.(collectives.Paced)
	paced := gate != nil && pacedGroup && p.Size >= pacedBytes
	var loop func() error // the whole timed loop, readied before the barrier so that clocks start together
	if !graphs && o.Blocking == 0 && o.PerIter != 1 && !paced && !t.kt.timesEvents() {
		var err error
		if loop, err = t.prepareIters(calls, 0, o.Iters, o.AggIters); err != nil {
			return timing{}, err
		}
	}
	if err := bar.wait(); err != nil {
		return timing{}, err
	}
	if graphs {
		tm, err := t.measureGraph(graph, calls, bar, tag)
		if err == nil {
			err = t.kt.close(tag)
		}
		return tm, err
	}
	if w, ok := t.group.(collectives.Waker); ok {
		w.Wake()
	}
	t.rangePush(tag)
	clock := stopwatch{start: time.Now()}
	iters := iterClock{t: t, perOp: o.AggIters}
	if err := iters.start(o.PerIter == 1); err != nil {
		return timing{}, err
	}
	var err error
	if loop != nil {
		err = loop()
	} else {
		err = t.eachIteration(calls, bar, &clock, &iters, gate, paced)
	}
	if err != nil {
		return timing{}, err
	}
	cpu := clock.elapsed()
	if err := t.group.Wait(); err != nil {
		return timing{}, err
	}
	t.rangePop()
	total := clock.elapsed()
	times, err := iters.times()
	if err != nil {
		return timing{}, err
	}
	if err := t.kt.close(tag); err != nil {
		return timing{}, err
	}
	return timing{sec: total.Seconds() / float64(ops), cpuSec: cpu.Seconds() / float64(ops), iters: times}, nil
}

// launchTimed is launchIters where kernel timing records events around each iteration's dispatch.
func (t *thread) launchTimed(calls []*collectives.Call, first, iters, agg int) error {
	if !t.kt.timesEvents() {
		return t.launchIters(calls, first, iters, agg)
	}
	for it := first; it < first+iters; it++ {
		err := t.kt.around(calls[(it*agg)%len(calls)], agg, func() error { return t.launchIters(calls, it, 1, agg) })
		if err != nil {
			return err
		}
	}
	return nil
}

// launchIters launches iters iterations of agg operations from the first-th iteration on.
func (t *thread) launchIters(calls []*collectives.Call, first, iters, agg int) error {
	launch, err := t.prepareIters(calls, first, iters, agg)
	if err != nil {
		return err
	}
	return launch()
}

// prepareIters readies launchIters' work: in one go where the group is a LoopLauncher (which aggregates each
// iteration's operations), else operation by operation.
func (t *thread) prepareIters(calls []*collectives.Call, first, iters, agg int) (func() error, error) {
	if ll, ok := t.group.(collectives.LoopLauncher); ok {
		return ll.PrepareLoop(calls, first*agg, iters, agg)
	}
	return func() error { return collectives.LaunchEach(t.group, calls, first*agg, iters*agg) }, nil
}

// eachIteration launches the timed iterations one by one, for -z, -I and paced halves: -z 1 and 2 wait after
// each operation, -z 3 and paced halves after each iteration (-z 3's barrier off the clock), and -I marks the
// end of each iteration. Before each iteration it asks gate whether to go on; when not, it waits for what it
// launched and returns exit.ErrInterrupted.
func (t *thread) eachIteration(calls []*collectives.Call, bar *barrier, clock *stopwatch, iters *iterClock,
	gate *iterGate, paced bool) error {
	o := t.opts
	for it := range o.Iters {
		if !gate.next(it) {
			if err := t.group.Wait(); err != nil {
				return err
			}
			return exit.ErrInterrupted
		}
		if o.Blocking == 1 || o.Blocking == 2 {
			for a := range o.AggIters {
				c := calls[(it*o.AggIters+a)%len(calls)]
				var err error
				if t.kt.timesEvents() {
					err = t.kt.around(c, 1, func() error { return t.group.Launch(c) })
				} else {
					err = t.group.Launch(c)
				}
				if err != nil {
					return err
				}
				if err := t.block(o.Blocking, bar); err != nil {
					return err
				}
			}
		} else if err := t.launchTimed(calls, it, 1, o.AggIters); err != nil {
			return err
		}
		if paced && o.Blocking == 0 {
			if err := t.group.Wait(); err != nil {
				return err
			}
		}
		if o.Blocking == 3 {
			if err := t.group.Wait(); err != nil {
				return err
			}
			pause := time.Now()
			if err := bar.wait(); err != nil {
				return err
			}
			clock.exclude(time.Since(pause))
		}
		if err := iters.lap(); err != nil {
			return err
		}
	}
	return nil
}

// iterGate lets the threads of one process agree where an interrupted half stops: once the run is
// interrupted, no thread starts an iteration that no thread has started yet, and every thread runs those that
// one has, so that no rank waits for a peer that stopped earlier. Processes cannot agree this cheaply: a
// multi-process run has no gate and stops after the half.
type iterGate struct {
	interrupted func() bool
	mu          sync.Mutex
	granted     int // iterations started by the furthest thread
	limit       int // iterations that run once interrupted; -1 before
}

func newIterGate(interrupted func() bool) *iterGate {
	return &iterGate{interrupted: interrupted, limit: -1}
}

// next reports whether a thread may start iteration it (each thread asks for 0, 1, 2 ... in order). A nil
// gate always says yes.
func (g *iterGate) next(it int) bool {
	if g == nil {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.limit < 0 && g.interrupted() {
		g.limit = g.granted
	}
	if g.limit >= 0 && it >= g.limit {
		return false
	}
	g.granted = max(g.granted, it+1)
	return true
}

// block applies -z 1 (wait and barrier after each operation) and -z 2 (wait only).
func (t *thread) block(mode int, bar *barrier) error {
	if err := t.group.Wait(); err != nil {
		return err
	}
	if mode == 1 {
		return bar.wait()
	}
	return nil
}

// measureGraph captures the timed iterations' launches once, then times -G replays of the graph (in a rocTX
// range named tag where they are on).
func (t *thread) measureGraph(g collectives.Grapher, calls []*collectives.Call, bar *barrier, tag string) (timing, error) {
	graph, err := g.Capture(func() error { return t.launchIters(calls, 0, t.opts.Iters, t.opts.AggIters) })
	if err != nil {
		return timing{}, err
	}
	defer graph.Destroy()
	if err := bar.wait(); err != nil {
		return timing{}, err
	}
	replay := graph.Launch // made once, outside the timed loop
	t.rangePush(tag)
	clock := stopwatch{start: time.Now()}
	for range t.opts.Graph {
		if err := t.kt.around(calls[0], t.opts.Iters*t.opts.AggIters, replay); err != nil {
			return timing{}, err
		}
	}
	cpu := clock.elapsed()
	if err := t.group.Wait(); err != nil {
		return timing{}, err
	}
	t.rangePop()
	n := float64(t.opts.Iters * t.opts.AggIters * t.opts.Graph)
	return timing{sec: clock.elapsed().Seconds() / n, cpuSec: cpu.Seconds() / n}, nil
}

// stopwatch measures wall time less the excluded pauses (-z 3 barriers).
type stopwatch struct {
	start  time.Time
	paused time.Duration
}

func (s *stopwatch) exclude(d time.Duration) { s.paused += d }
func (s *stopwatch) elapsed() time.Duration  { return time.Since(s.start) - s.paused }

// iterClock times each iteration for -I: with device events when the group is an EventTimer, else on the host
// clock with a wait after each iteration.
type iterClock struct {
	t      *thread
	perOp  int
	on     bool
	events []collectives.Event
	host   []float64
	last   time.Time
}

func (c *iterClock) start(on bool) error {
	c.on = on
	if !on {
		return nil
	}
	if et, ok := c.t.group.(collectives.EventTimer); ok {
		ev, err := et.Mark()
		c.events = append(c.events, ev)
		return err
	}
	c.last = time.Now()
	return nil
}

func (c *iterClock) lap() error {
	if !c.on {
		return nil
	}
	if et, ok := c.t.group.(collectives.EventTimer); ok {
		ev, err := et.Mark()
		c.events = append(c.events, ev)
		return err
	}
	if err := c.t.group.Wait(); err != nil {
		return err
	}
	now := time.Now()
	c.host = append(c.host, now.Sub(c.last).Seconds()/float64(c.perOp))
	c.last = now
	return nil
}

// times returns the per-operation time of each iteration; call it after Wait.
func (c *iterClock) times() ([]float64, error) {
	if !c.on || c.host != nil {
		return c.host, nil
	}
	et := c.t.group.(collectives.EventTimer)
	out := make([]float64, 0, len(c.events)-1)
	for i := 1; i < len(c.events); i++ {
		d, err := et.Elapsed(c.events[i-1], c.events[i])
		if err != nil {
			return nil, err
		}
		out = append(out, slices.Max(d).Seconds()/float64(c.perOp)) // the slowest local rank
	}
	return out, nil
}
