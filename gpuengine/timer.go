package gpuengine

import (
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

// eventPool is a rank's timing events. The marks of a series stay valid until the harness reads the series
// (Elapsed); the next Mark after a read starts a new series, reusing every event, so that an endless run (-N 0)
// allocates no more than its longest series needs.
type eventPool struct {
	free, used []gpurt.Event
}

func (e *eventPool) take(read bool) (gpurt.Event, error) {
	if read {
		e.free, e.used = append(e.free, e.used...), e.used[:0]
	}
	var ev gpurt.Event
	if n := len(e.free); n > 0 {
		ev, e.free = e.free[n-1], e.free[:n-1]
	} else {
		var err error
		if ev, err = gpurt.EventCreate(true); err != nil {
			return 0, err
		}
	}
	e.used = append(e.used, ev)
	return ev, nil
}

func (e *eventPool) destroy() {
	for _, ev := range append(e.free, e.used...) {
		ev.Destroy()
	}
	e.free, e.used = nil, nil
}

// mark is one event per local rank.
type mark []gpurt.Event

// Mark records an event on every local rank's stream after the work launched so far.
func (g *group) Mark() (collectives.Event, error) {
	read := g.marksRead
	g.marksRead = false
	m := make(mark, len(g.ranks))
	for i, r := range g.ranks {
		if err := r.ctx.SetCurrent(); err != nil {
			return nil, runtimeError(r, err)
		}
		ev, err := r.events.take(read)
		if err == nil {
			err = ev.Record(r.stream)
		}
		if err != nil {
			return nil, runtimeError(r, err)
		}
		m[i] = ev
	}
	return m, nil
}

// Elapsed is each local rank's time between the two marks.
func (g *group) Elapsed(from, to collectives.Event) ([]time.Duration, error) {
	g.marksRead = true
	a, b := from.(mark), to.(mark)
	out := make([]time.Duration, len(g.ranks))
	for i, r := range g.ranks {
		if err := r.ctx.SetCurrent(); err != nil {
			return nil, runtimeError(r, err)
		}
		d, err := gpurt.EventElapsed(a[i], b[i])
		if err != nil {
			return nil, runtimeError(r, err)
		}
		out[i] = d
	}
	return out, nil
}
