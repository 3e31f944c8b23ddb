package gpuengine

import (
	"fmt"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
	"github.com/rcclx-tests/rcclx-tests/internal/memkind"
)

// group drives the ranks of one harness thread, from the OS thread the harness locked; every method makes
// the context of the rank it works on current first.
type group struct {
	c         *comm
	ranks     []*rank
	capturing bool        // inside Capture: the copy-engine transport's cross-stream events cannot be captured
	launchers []*launcher // launchers.go: one per local rank after the first, started on first use
	marksRead bool        // Elapsed read the marks since the last Mark (timer.go)
}

// buffer is memory of one rank: device memory, or what -Y asked for (memory.go).
type buffer struct {
	ptr  gpurt.DevicePtr
	n    int64
	r    *rank
	free func() error
}

func (b *buffer) Len() int64 { return b.n }

func (g *group) Ranks() []int {
	out := make([]int, len(g.ranks))
	for i, r := range g.ranks {
		out[i] = r.global
	}
	return out
}

func (g *group) Alloc(local int, bytes int64) (collectives.Buffer, error) {
	r := g.ranks[local]
	if err := r.ctx.SetCurrent(); err != nil {
		return nil, runtimeError(r, err)
	}
	p, free, err := gpurt.AllocKind(memkind.Of(g.c.memory), max(bytes, 16))
	if err != nil {
		return nil, runtimeError(r, err)
	}
	return &buffer{ptr: p, n: bytes, r: r, free: free}, nil
}

func (g *group) Free(b collectives.Buffer) error {
	buf := b.(*buffer)
	if err := buf.r.ctx.SetCurrent(); err != nil {
		return runtimeError(buf.r, err)
	}
	return runtimeError(buf.r, buf.free())
}

// Write and Read wait for the rank's stream first: its kernels may still use the buffer.
func (g *group) Write(dst collectives.View, src []byte) error {
	r, err := g.idle(dst, int64(len(src)))
	if err != nil || len(src) == 0 {
		return err
	}
	return runtimeError(r, gpurt.MemcpyHtoD(ptr(dst), src))
}

func (g *group) Read(dst []byte, src collectives.View) error {
	r, err := g.idle(src, int64(len(dst)))
	if err != nil || len(dst) == 0 {
		return err
	}
	return runtimeError(r, gpurt.MemcpyDtoH(dst, ptr(src)))
}

// idle checks that n bytes fit the view and waits for the view's rank to finish its work.
func (g *group) idle(v collectives.View, n int64) (*rank, error) {
	b := v.Buf.(*buffer)
	if v.Off < 0 || v.Off+n > b.n {
		return b.r, fmt.Errorf("gpu: %d bytes at offset %d do not fit a %d-byte buffer", n, v.Off, b.n)
	}
	if err := b.r.ctx.SetCurrent(); err != nil {
		return b.r, runtimeError(b.r, err)
	}
	return b.r, runtimeError(b.r, b.r.stream.Synchronize())
}

func (g *group) Algorithm(call *collectives.Call) string {
	return g.c.policy.Choose(call.Coll, call.DType, call.Op, g.c.nranks, call.Counts[0], call.Aligned())
}

// Launch enqueues call on every local rank's stream and returns.
func (g *group) Launch(call *collectives.Call) error {
	if err := g.c.usable(); err != nil {
		return err
	}
	g.c.hooks.Pause()
	algo := g.Algorithm(call)
	if algo != collectives.Ring && g.c.nranks > maxBarrierRanks {
		return fmt.Errorf("gpu: %s on %d ranks: at most %d: %w", algo, g.c.nranks, maxBarrierRanks, collectives.ErrUnsupported)
	}
	for _, r := range g.ranks {
		r.lastColl, r.lastAlgo = call.Coll.Name, algo // joined only for a message: no allocation per call
		if r.global != g.c.hooks.SkipRank {
			g.c.arrivals.Arrive(r.global)
		}
	}
	pl, err := g.useCopyEngines(call, algo)
	if err != nil {
		return err
	}
	if pl != nil {
		if err := g.ceLaunch(call, pl); err != nil {
			return err
		}
		return g.each(func(r *rank, l int) error { return g.c.corrupt(r, call, l) })
	}
	phases := g.c.callPhases(call, algo)
	for ph := range phases {
		f := phase{ph, phases}
		if g.c.tuning.Launchers && len(g.ranks) > 1 && !g.capturing {
			if err := g.launchParallel(call, algo, f); err != nil {
				return err
			}
			continue
		}
		for l, r := range g.ranks {
			if r.global == g.c.hooks.SkipRank {
				continue
			}
			if err := g.launchOn(l, call, algo, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// launchOn launches phase f of local rank l's part of call from this thread.
func (g *group) launchOn(l int, call *collectives.Call, algo string, f phase) error {
	r := g.ranks[l]
	if err := r.ctx.SetCurrent(); err != nil {
		return runtimeError(r, err)
	}
	return runtimeError(r, g.c.launch(r, call, l, algo, f))
}

// FreeMemory is what one of the ranks sharing local's GPU may still allocate.
func (g *group) FreeMemory(local int) (int64, error) {
	r := g.ranks[local]
	if err := r.ctx.SetCurrent(); err != nil {
		return 0, runtimeError(r, err)
	}
	free, _, err := gpurt.MemGetInfo()
	if err != nil {
		return 0, runtimeError(r, err)
	}
	sharing := 0
	for _, o := range g.c.ranks {
		if o.dev == r.dev {
			sharing++
		}
	}
	return free / int64(sharing), nil
}
