package vendorengine

import (
	"fmt"
	"runtime"

	"github.com/rcclx-tests/rcclx-tests/gpurt"
	"github.com/rcclx-tests/rcclx-tests/nccl"
)

// FlushICache readies rccl-tests' -F on every local rank's device (collectives.CacheFlusher): the flush
// kernel compiled and loaded where the runtime has one (HIP), else an error naming why not.
func (c *comm) FlushICache(every int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, r := range c.ranks {
		if !r.caps.ICacheFlush {
			return fmt.Errorf("%w on %s", gpurt.ErrNoICacheFlush, r.caps.Runtime.Title())
		}
	}
	flushes := make([]gpurt.ICacheFlush, 0, len(c.ranks))
	for _, r := range c.ranks {
		err := r.ctx.SetCurrent()
		var f gpurt.ICacheFlush
		if err == nil {
			f, err = gpurt.LoadICacheFlush(r.dev)
		}
		if err != nil {
			for l, f := range flushes {
				_ = c.ranks[l].ctx.SetCurrent()
				_ = f.Module.Unload()
			}
			return fmt.Errorf("device %d: %w", r.dev, err)
		}
		flushes = append(flushes, f)
	}
	for l, r := range c.ranks {
		var fn uintptr
		r.flush = flushes[l]
		fn, r.flushArgs = r.flush.Call(r.stream)
		c.flush = nccl.NewForeign("hipModuleLaunchKernel", fn, gpurt.LaunchError)
	}
	c.flushEvery = every
	return nil
}

// queueFlush adds local rank r's flush to q when op, the operation's index in its loop, is one -F flushes
// before (rccl-tests: op % every == 0); op < 0 is a call outside a loop.
func (g *group) queueFlush(q *nccl.Calls, r *rank, op int) {
	if g.c.flushEvery > 0 && op >= 0 && op%g.c.flushEvery == 0 {
		q.Call(g.c.flush, r.flushArgs...)
	}
}
