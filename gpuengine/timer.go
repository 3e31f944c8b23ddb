package gpuengine

import (
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

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
		ev, err := r.events.Take(read, func() (gpurt.Event, error) { return gpurt.EventCreate(true) })
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
