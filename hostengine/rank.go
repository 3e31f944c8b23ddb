package hostengine

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// task is one rank's part of one launched call.
type task struct {
	g          *group
	coll       *collectives.Collective
	dt         collectives.DType
	op         collectives.Op
	k          collectives.Counts
	send, recv []byte
	inPlace    bool
	algo       string
	root       int
	red        reducer // zero for collectives that do not reduce
}

// exposed is what a rank lets peers read during one call. The owner sets it before the signal that starts the
// call for its readers (a progress store or a barrier); the memory it points to changes only as the
// algorithm's flags announce, and is not reused before every reader has said it is done.
type exposed struct {
	in, partial, out []byte
	scales           []float32
}

// rank is one rank's goroutine and the state its peers may read.
type rank struct {
	_ [64]byte
	// progress is epoch<<32 | steps done in the current call (see ring.go); also "started" for direct.
	progress atomic.Uint64
	_        [56]byte

	c       *comm
	id      int
	queue   chan *task
	exposed exposed

	// Owned by the rank's goroutine.
	epoch        uint64 // calls started
	barrierEpoch uint64
	dda          []byte    // DDA's peer-visible buffer, policy.SendBuf bytes once a DDA call has run
	scratch      []byte    // ring reduce_scatter partial sums and in-place direct alltoall staging
	lpq          []byte    // FP8 codes (low precision)
	lps          []float32 // FP8 block scales
}

func (r *rank) loop() {
	defer r.c.running.Done()
	for {
		select {
		case t := <-r.queue:
			t.g.finished(r.execute(t))
		case <-r.c.done:
			for {
				select {
				case t := <-r.queue:
					t.g.finished(errClosed)
				default:
					return
				}
			}
		}
	}
}

// run is one rank executing one call.
type run struct {
	*task
	waiter
	r     *rank
	n     int
	epoch uint64
}

var algorithms = map[string]func(*run) error{
	collectives.Ring:         (*run).ring,
	collectives.Direct:       (*run).direct,
	collectives.DDAFlat:      (*run).ddaFlat,
	collectives.DDATree:      (*run).ddaTree,
	collectives.DDA:          (*run).dda,
	collectives.LowPrecision: (*run).lowPrecision,
}

func (r *rank) execute(t *task) error {
	c := r.c
	if err := c.err(); err != nil {
		return err
	}
	if c.hooks.SkipRank == r.id {
		return nil
	}
	algo, ok := byCollective[t.coll.Base()]
	if !ok {
		algo, ok = algorithms[t.algo]
	}
	if !ok {
		return fmt.Errorf("host engine: no algorithm %q", t.algo)
	}
	r.epoch++
	x := &run{task: t, waiter: waiter{c: c, rank: r.id}, r: r, n: c.nranks, epoch: r.epoch}
	if c.timeout > 0 {
		x.deadline = time.Now().Add(c.timeout)
	}
	if err := algo(x); err != nil {
		c.abort(err)
		return c.err()
	}
	if c.hooks.CorruptRank == r.id {
		corrupt(t.recv[:t.coll.Checked(r.id, t.root, c.nranks, t.k)*int64(t.dt.Size())], t.dt.Size())
	}
	return nil
}

// peer returns rank p's state (p taken modulo the rank count).
func (x *run) peer(p int) *rank {
	return x.c.ranks[mod(p, x.n)]
}

// barrier passes the communicator's barrier; i numbers the call's barriers for timeout messages.
func (x *run) barrier(i int) error {
	x.r.barrierEpoch++
	return x.c.barrier.wait(&x.waiter, x.r.id, 0, x.r.barrierEpoch, newPhase(x.algo+" barrier %d", i))
}

// pre is the mulsum premultiplier of rank p's input (ignored by other ops).
func pre(p int) int { return collectives.PreMulScalar(p) }

// grow returns buf resized to n bytes, reallocating (aligned) when its capacity is short.
func grow(buf []byte, n int64) []byte {
	if int64(cap(buf)) >= n {
		return buf[:n]
	}
	return alignedBytes(n)
}
