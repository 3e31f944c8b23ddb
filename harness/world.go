package harness

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/rcclx-tests/rcclx-tests/bootstrap"
	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// openWorld returns the processes of this run: one, or those an mpirun, srun or torchrun launch started
// (the bootstrap package detects the launcher and meets the others at a rendezvous). Once stop is closed,
// every wait on the others ends (bootstrap.ErrInterrupted).
var openWorld = func(timeout time.Duration, stop <-chan struct{}) (collectives.World, error) {
	return bootstrap.FromEnv(timeout, bootstrap.StopOn(stop))
}

// worldGrace is how long after a signal the waits on the other processes still run once the run has started:
// long enough for every process to end its iteration and report together, short enough to end within a
// second when one of them is stopped. Before the run has started, a signal ends the waits at once.
var worldGrace = 600 * time.Millisecond

// worldStop is the stop channel of openWorld: closed once a signal arrived (interrupted), at once while the
// processes meet, worldGrace later once started says so. The watch ends when the run does (end).
func worldStop(interrupted func() bool, started func() bool) (stop <-chan struct{}, end func()) {
	ch, done := make(chan struct{}), make(chan struct{})
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for !interrupted() {
			select {
			case <-tick.C:
			case <-done:
				return
			}
		}
		if started() {
			select {
			case <-time.After(worldGrace):
			case <-done:
				return
			}
		}
		close(ch)
	}()
	return ch, func() { close(done) }
}

// gatherJSON gives every process the values of all processes, in rank order; what names them in errors.
func gatherJSON[T any](w collectives.World, what string, local T) ([]T, error) {
	if w.Size() == 1 {
		return []T{local}, nil
	}
	data, err := json.Marshal(local)
	if err != nil {
		return nil, fmt.Errorf("gathering %s: %w", what, err)
	}
	all, err := w.AllGather(data)
	if err != nil {
		return nil, fmt.Errorf("gathering %s: %w", what, err)
	}
	out := make([]T, len(all))
	for i, d := range all {
		if err := json.Unmarshal(d, &out[i]); err != nil {
			return nil, fmt.Errorf("gathering %s from process %d: %w", what, i, err)
		}
	}
	return out, nil
}
