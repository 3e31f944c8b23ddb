package gpuengine

import (
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

// eventRing is a rank's timing events, reused round-robin so that an endless run (-N 0) allocates a bounded
// number; a mark stays valid until ringEvents later marks.
type eventRing struct {
	events []gpurt.Event
	next   int
}

const ringEvents = 4096

func (e *eventRing) take() (gpurt.Event, error) {
	if len(e.events) < ringEvents {
		ev, err := gpurt.EventCreate(true)
		if err != nil {
			return 0, err
		}
		e.events = append(e.events, ev)
		return ev, nil
	}
	ev := e.events[e.next]
	e.next = (e.next + 1) % ringEvents
	return ev, nil
}

func (e *eventRing) destroy() {
	for _, ev := range e.events {
		ev.Destroy()
	}
	e.events = nil
}

// mark is one event per local rank.
type mark []gpurt.Event

// Mark records an event on every local rank's stream after the work launched so far.
func (g *group) Mark() (collectives.Event, error) {
	m := make(mark, len(g.ranks))
	for i, r := range g.ranks {
		if err := r.ctx.SetCurrent(); err != nil {
			return nil, runtimeError(r, err)
		}
		ev, err := r.events.take()
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
