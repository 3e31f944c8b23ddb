package hostengine

import (
	"fmt"
	"sync"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// queueDepth is how many calls a rank holds before Launch blocks (nccl-tests launches every iteration of a
// size, times -m, before it waits).
const queueDepth = 4096

// group drives the ranks of one harness thread.
type group struct {
	c       *comm
	ranks   []*rank
	pending sync.WaitGroup
	mu      sync.Mutex
	first   error // first error of a call since the last Wait
}

func (g *group) Ranks() []int {
	out := make([]int, len(g.ranks))
	for i, r := range g.ranks {
		out[i] = r.id
	}
	return out
}

func (g *group) Alloc(local int, bytes int64) (collectives.Buffer, error) {
	if local < 0 || local >= len(g.ranks) || bytes < 0 {
		return nil, fmt.Errorf("host engine: Alloc(local %d, %d bytes) out of range", local, bytes)
	}
	b, err := g.c.alloc(bytes)
	if err != nil {
		return nil, err
	}
	return &buffer{b: b}, nil
}

func (g *group) Free(b collectives.Buffer) error {
	if buf, ok := b.(*buffer); ok {
		g.c.release(buf.b)
		buf.b = nil
	}
	return nil
}

func (g *group) Write(dst collectives.View, src []byte) error {
	d, err := slice(dst, int64(len(src)))
	if err != nil {
		return err
	}
	return g.c.copyStoppable(d, src)
}

func (g *group) Read(dst []byte, src collectives.View) error {
	s, err := slice(src, int64(len(dst)))
	if err != nil {
		return err
	}
	return g.c.copyStoppable(dst, s)
}

// Algorithm applies the communicator's policy. Every group must pass equally aligned views, so that all ranks
// choose alike.
func (g *group) Algorithm(c *collectives.Call) string {
	return g.c.policy.Choose(c.Coll, c.DType, c.Op, g.c.nranks, c.Counts[0], c.Aligned())
}

// Launch queues c on every local rank; the ranks run it as soon as they are free.
func (g *group) Launch(c *collectives.Call) error {
	if err := g.c.err(); err != nil {
		return err
	}
	n := len(g.ranks)
	if len(c.Counts) != n || len(c.Send) != n || len(c.Recv) != n {
		return fmt.Errorf("host engine: call has %d/%d/%d counts/send/recv views for %d ranks", len(c.Counts), len(c.Send), len(c.Recv), n)
	}
	algo := g.Algorithm(c)
	red := reducer{}
	if c.Coll.Reduces {
		red = g.c.stoppable(newReducer(c.DType, c.Op, g.c.fp8))
	}
	size := int64(c.DType.Size())
	tasks := make([]*task, n)
	for l := range n {
		k := c.Counts[l]
		send, err := slice(c.Send[l], k.Send*size)
		if err != nil {
			return err
		}
		recv, err := slice(c.Recv[l], k.Recv*size)
		if err != nil {
			return err
		}
		tasks[l] = &task{g: g, coll: c.Coll, dt: c.DType, op: c.Op, k: k, send: send, recv: recv,
			inPlace: c.InPlace(l), algo: algo, root: c.Root, red: red}
	}
	g.pending.Add(n)
	for l, t := range tasks {
		g.ranks[l].queue <- t
	}
	return nil
}

// Paced marks the group as one whose large iterations the harness awaits one by one (collectives.Paced).
func (g *group) Paced() {}

// Wait blocks until every call launched so far has finished on every local rank and returns the first error.
func (g *group) Wait() error {
	g.pending.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	err := g.first
	g.first = nil
	return err
}

// finished records the end of one rank's call.
func (g *group) finished(err error) {
	if err != nil {
		g.mu.Lock()
		if g.first == nil {
			g.first = err
		}
		g.mu.Unlock()
	}
	g.pending.Done()
}
