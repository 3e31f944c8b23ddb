// Package world is the harness's policy over the processes of one run, any collectives.World: what they must
// agree on before the first measurement (the command line, the RCCLX switches, the seed, the free memory), the
// devices each shows in the header, and the watch that stops a run once another process is lost. Its input is a
// World and this process's values; its output is the values every process uses, or the error that ends the run.
// It imports exit and no other package of the harness: it prints nothing, and leaves the error line and the exit
// to its caller.
package world

import (
	"time"

	"github.com/rcclx-tests/rcclx-tests/bootstrap"
	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// grace is how long after a signal the waits on the other processes still run once the run has started:
// long enough for every process to end its iteration and report together, short enough to end within a
// second when one of them is stopped. Before the run has started, a signal ends the waits at once.
var grace = 600 * time.Millisecond

// Stop is the stop channel of openWorld: closed once a signal arrived (signalled is closed), at once while the
// processes meet, grace later once started says so. The watch ends when the run does (end).
func Stop(signalled <-chan struct{}, started func() bool) (stop <-chan struct{}, end func()) {
	ch, done := make(chan struct{}), make(chan struct{})
	go func() {
		select {
		case <-signalled:
		case <-done:
			return
		}
		if started() {
			select {
			case <-time.After(grace):
			case <-done:
				return
			}
		}
		close(ch)
	}()
	return ch, func() { close(done) }
}

// Seed makes every process use rank 0's seed.
func Seed(w collectives.World, local uint64) (uint64, error) {
	all, err := collectives.Exchange(w, "the seed", local)
	if err != nil {
		return 0, err
	}
	return all[0], nil
}

// Min is the smallest v over the processes.
func Min(w collectives.World, v int64) (int64, error) {
	all, err := collectives.Exchange(w, "free memory", v)
	for _, x := range all {
		v = min(v, x)
	}
	return v, err
}

// Devices collects every process's devices in rank order for the "# Using devices" lines; another
// process's text is made printable before it is shown or recorded.
func Devices(w collectives.World, local []collectives.Device) ([]collectives.Device, error) {
	all, err := collectives.Exchange(w, "devices", local)
	var out []collectives.Device
	for _, ds := range all {
		for _, d := range ds {
			d.Hostname, d.BusID, d.Name = bootstrap.Printable(d.Hostname), bootstrap.Printable(d.BusID),
				bootstrap.Printable(d.Name)
			out = append(out, d)
		}
	}
	return out, err
}
