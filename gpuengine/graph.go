package gpuengine

import (
	"errors"
	"unsafe"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

// Capture records the launches of record on every local rank's stream (one graph per rank) and returns a
// graph that replays them all. The kernels keep their counters in device memory, so replays stay in step; the
// graph owns its ranks' alltoallv tables (vTable).
func (g *group) Capture(record func() error) (collectives.Graph, error) {
	out := &graph{g: g}
	// Every rank's alltoallv stage is allocated here, whether or not record launches an alltoallv: no capture
	// has begun yet, and a thread capturing in thread-local mode may not make allocation calls.
	for _, r := range g.ranks {
		err := r.ctx.SetCurrent()
		var stage unsafe.Pointer
		if err == nil {
			stage, _, err = gpurt.HostAllocMapped(vTableBytes(g.c.nranks))
		}
		if err != nil {
			out.Destroy()
			return nil, runtimeError(r, err)
		}
		out.stages = append(out.stages, stage)
	}
	for i, r := range g.ranks {
		err := r.ctx.SetCurrent()
		if err == nil {
			err = r.stream.BeginCapture()
		}
		if err != nil {
			// End the captures already begun, so those streams can launch again; their graphs are of no use.
			graphs, _ := g.endCaptures(i)
			for _, x := range graphs {
				_ = x.Destroy()
			}
			out.Destroy()
			return nil, runtimeError(r, err)
		}
	}
	for i, r := range g.ranks {
		r.vtable.beginCapture(out.stages[i])
	}
	g.capturing = true
	recErr := record()
	g.capturing = false
	for _, r := range g.ranks {
		r.vtable.endCapture()
	}
	graphs, endErr := g.endCaptures(len(g.ranks))
	if err := errors.Join(recErr, endErr); err != nil {
		for _, x := range graphs {
			x.Destroy()
		}
		out.Destroy()
		return nil, err
	}
	for i, r := range g.ranks {
		err := r.ctx.SetCurrent()
		var x gpurt.GraphExec
		if err == nil {
			x, err = graphs[i].Instantiate()
		}
		graphs[i].Destroy()
		if err != nil {
			out.Destroy()
			return nil, runtimeError(r, err)
		}
		out.execs = append(out.execs, x)
	}
	return out, nil
}

// endCaptures ends the captures of the first n ranks and returns their graphs.
func (g *group) endCaptures(n int) ([]gpurt.Graph, error) {
	var graphs []gpurt.Graph
	var errs []error
	for _, r := range g.ranks[:n] {
		if err := r.ctx.SetCurrent(); err != nil {
			errs = append(errs, runtimeError(r, err))
		}
		x, err := r.stream.EndCapture()
		if err != nil {
			errs = append(errs, runtimeError(r, err))
			continue
		}
		graphs = append(graphs, x)
	}
	return graphs, errors.Join(errs...)
}

type graph struct {
	g      *group
	execs  []gpurt.GraphExec
	stages []unsafe.Pointer // per local rank: the host copy of its alltoallv table its copy node reads
}

func (x *graph) Launch() error {
	if err := x.g.c.usable(); err != nil {
		return err
	}
	for i, r := range x.g.ranks {
		if err := r.ctx.SetCurrent(); err != nil {
			return runtimeError(r, err)
		}
		if err := x.execs[i].Launch(r.stream); err != nil {
			return runtimeError(r, err)
		}
	}
	return nil
}

func (x *graph) Destroy() error {
	var errs []error
	for i, e := range x.execs {
		errs = append(errs, x.g.ranks[i].ctx.SetCurrent(), e.Destroy())
	}
	for _, p := range x.stages {
		errs = append(errs, gpurt.HostFree(p))
	}
	x.execs, x.stages = nil, nil
	return errors.Join(errs...)
}
