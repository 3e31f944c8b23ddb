package vendorengine

import (
	"errors"
	"fmt"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
	"github.com/rcclx-tests/rcclx-tests/nccl"
)

// mark is one Mark: an event recorded on each local rank's stream.
type mark []gpurt.Event

// markPool keeps each local rank's timing events (created in its context). A series of marks ends when the
// harness reads it (Elapsed); the next Mark starts a new series and reuses the earlier events.
type markPool struct {
	ranks []gpurt.EventPool // per local rank
	read  bool
}

func (p *markPool) init(nlocal int) { p.ranks = make([]gpurt.EventPool, nlocal) }

func (p *markPool) destroy(g *group) error {
	var errs []error
	for l := range p.ranks {
		if p.ranks[l].Len() > 0 {
			errs = append(errs, g.on(l), runtimeError(p.ranks[l].Destroy()))
		}
	}
	return errors.Join(errs...)
}

// Mark records an event after the work launched so far on every local rank.
func (g *group) Mark() (collectives.Event, error) {
	p := &g.marks
	read := p.read
	p.read = false
	m := make(mark, len(g.ranks))
	for l, r := range g.ranks {
		e, err := p.ranks[l].Take(read, func() (gpurt.Event, error) {
			if err := g.on(l); err != nil {
				return 0, err
			}
			e, err := gpurt.EventCreate(true)
			return e, runtimeError(err)
		})
		if err != nil {
			return nil, err
		}
		if err := e.Record(r.stream); err != nil {
			return nil, runtimeError(err)
		}
		m[l] = e
	}
	return m, nil
}

// Elapsed is each local rank's time between two marks.
func (g *group) Elapsed(from, to collectives.Event) ([]time.Duration, error) {
	g.marks.read = true
	a, b := from.(mark), to.(mark)
	out := make([]time.Duration, len(a))
	for l := range a {
		d, err := gpurt.EventElapsed(a[l], b[l])
		if err != nil {
			return nil, runtimeError(err)
		}
		out[l] = d
	}
	return out, nil
}

// graph is one captured graph per local rank, replayed on its stream.
type graph struct {
	g     *group
	execs []gpurt.GraphExec
}

// Capture records the library calls that record makes into one graph per local rank. Every capture ends
// before any graph is instantiated: CUDA refuses to instantiate while this thread still captures a stream.
func (g *group) Capture(record func() error) (collectives.Graph, error) {
	if g.ranks[0].stream == 0 {
		return nil, fmt.Errorf("vendor: -G with -y: the legacy default stream cannot be captured: %w", collectives.ErrUnsupported)
	}
	begun := 0
	var first error
	for _, r := range g.ranks {
		if first = r.stream.BeginCapture(); first != nil {
			break
		}
		begun++
	}
	if first == nil {
		g.capturing = true
		first = record()
		g.capturing = false
	}
	captured := make([]gpurt.Graph, 0, begun)
	for _, r := range g.ranks[:begun] {
		cg, err := r.stream.EndCapture()
		if err == nil {
			captured = append(captured, cg)
		} else if first == nil {
			first = err
		}
	}
	gr := &graph{g: g}
	for _, cg := range captured {
		if first == nil {
			var exec gpurt.GraphExec
			if exec, first = cg.Instantiate(); first == nil {
				gr.execs = append(gr.execs, exec)
			}
		}
		cg.Destroy()
	}
	if first != nil {
		gr.Destroy()
		return nil, runtimeError(fmt.Errorf("vendor: -G capture: %w", first))
	}
	return gr, nil
}

func (gr *graph) Launch() error {
	for l, x := range gr.execs {
		if err := x.Launch(gr.g.ranks[l].stream); err != nil {
			return runtimeError(err)
		}
	}
	return nil
}

func (gr *graph) Destroy() error {
	var errs []error
	for _, x := range gr.execs {
		errs = append(errs, runtimeError(x.Destroy()))
	}
	gr.execs = nil
	return errors.Join(errs...)
}

// drainChunk is how many records one ncclKernelTimingDrain call may return (rccl-tests drains 1024 at a time).
const drainChunk = 1024

// KernelTiming reports whether the library records its dispatches (it exports ncclKernelTimingDrain).
func (g *group) KernelTiming() bool { return g.c.lib.HasKernelTiming() }

// DrainDispatches drains each local rank's communicator until the library has nothing more or fails.
func (g *group) DrainDispatches() (out []collectives.Dispatch, dropped uint64, result, drains int) {
	buf := make([]nccl.KernelTimingRecord, drainChunk)
	for _, r := range g.ranks {
		for {
			got, d, res := g.c.lib.KernelTimingDrain(r.comm, buf)
			drains++
			dropped, result = d, int(res)
			for _, k := range buf[:got] {
				out = append(out, collectives.Dispatch{Rank: int(k.Rank), Seq: k.Seq, CommHash: k.CommHash, Count: k.Count,
					Func: k.Func, Datatype: k.Datatype, NChannels: k.NChannels, NThreads: k.NThreads, NColls: k.NColls,
					Start: k.StartNs, End: k.EndNs})
			}
			if res != nccl.Success || got < drainChunk {
				break
			}
		}
	}
	return out, dropped, result, drains
}
