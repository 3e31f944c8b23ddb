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
	flushes := make([]gpurt.ICacheFlush, len(c.ranks))
	for l, r := range c.ranks {
		if !r.caps.ICacheFlush {
			return fmt.Errorf("%w on %s", gpurt.ErrNoICacheFlush, r.caps.Runtime.Title())
		}
		if err := r.ctx.SetCurrent(); err != nil {
			return err
		}
		var err error
		if flushes[l], err = gpurt.LoadICacheFlush(r.dev); err != nil {
			return fmt.Errorf("device %d: %w", r.dev, err)
		}
	}
	fn, _ := flushes[0].Call(0)
	c.flush = nccl.NewForeign("hipModuleLaunchKernel", fn, gpurt.LaunchError)
	for l, r := range c.ranks {
		r.flush = flushes[l]
	}
	c.flushEvery = every
	return nil
}

// queueFlush adds local rank r's flush to q when op, the operation's index in its loop, is one -F flushes
// before (rccl-tests: op % every == 0); op < 0 is a call outside a loop.
func (g *group) queueFlush(q *nccl.Calls, r *rank, op int) {
	if g.c.flushEvery > 0 && op >= 0 && op%g.c.flushEvery == 0 {
		_, args := r.flush.Call(r.stream)
		q.Call(g.c.flush, args...)
	}
}
