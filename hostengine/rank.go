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

// exposed is what a rank lets peers read during one call. The owner sets it (x.expose) before the signal that
// starts the call for its readers (a progress store or a barrier), and readers take it (x.view) after that
// signal; the memory it points to changes only as the algorithm's flags announce, and is not reused before
// every reader has said it is done.
type exposed struct {
	in, partial, out []byte
	scales           []float32
}

// rank is one rank's goroutine and the state its peers may read; in a run of several processes, the ranks of
// other processes appear here too (not local: no goroutine, their state in shared memory).
type rank struct {
	_    [64]byte
	cell atomic.Uint64 // progress when every rank is in this process
	_    [56]byte
	// progress is epoch<<32 | steps done in the current call (see ring.go); also "started" for direct.
	progress *atomic.Uint64

	c        *comm
	id       int
	local    bool
	queue    chan *task
	exposed  exposed         // set by expose; read by view for ranks of this process
	desc     []atomic.Uint64 // several processes: exposed as offsets into the owner's arena (shm.go)
	bell     *atomic.Uint32  // several processes: incremented by every wake; the rank sleeps on it (futex)
	sleepers *atomic.Uint32  // several processes: non-zero while the rank may sleep on bell
	arrived  *atomic.Uint64  // several processes: the calls the rank entered, for timeouts (Arrivals)
	arena    *arena          // several processes: the owner's arena as this process maps it

	// Owned by the rank's goroutine.
	epoch        uint64 // calls started
	barrierEpoch uint64
	dda          []byte // DDA's peer-visible buffer, policy.SendBuf bytes once a DDA call has run
	scratch      []byte // ring reduce_scatter partial sums and in-place direct alltoall staging
	lpq          []byte // FP8 codes (low precision)
	lps          []byte // FP8 block scales (float32)
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
		return c.stayAway(r.id)
	}
	c.hooks.Pause()
	algo, ok := byCollective[t.coll.Base()]
	if !ok {
		algo, ok = algorithms[t.algo]
	}
	if !ok {
		return fmt.Errorf("host engine: no algorithm %q", t.algo)
	}
	c.arrivals.Arrive(r.id)
	r.epoch++
	x := &run{task: t, waiter: waiter{c: c, rank: r.id}, r: r, n: c.nranks, epoch: r.epoch}
	if c.timeout > 0 {
		x.deadline = time.Now().Add(c.timeout)
	}
	if err := algo(x); err != nil {
		c.abort(err)
		return c.err()
	}
	if err := c.err(); err != nil { // aborted meanwhile: a reduction may have stopped half-way (stoppable)
		return err
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

// expose makes e the memory peers may read during this call. Every slice must come from x.grow, x.c.alloc or
// the call's own buffers (peers in other processes reach only shared memory). Set it before the flag or
// barrier that lets readers start.
func (x *run) expose(e exposed) {
	x.r.exposed = e
	if x.c.sh != nil {
		x.r.arena.encode(x.r.desc, e)
	}
}

// view is what rank p exposed, as this process reaches it; call it after the flag or barrier that announces
// it, and not after p may have moved on.
func (x *run) view(p *rank) exposed {
	if p.local && x.c.sh == nil { // across processes every rank decodes: the flags that order it live off the Go heap
		return p.exposed
	}
	return p.arena.decode(p.desc)
}

// grow sets *buf to n bytes of memory peers may read, reallocating (aligned, zeroed) when its capacity is
// short; the old memory must no longer be exposed.
func (x *run) grow(buf *[]byte, n int64) error {
	if int64(cap(*buf)) >= n {
		*buf = (*buf)[:n]
		return nil
	}
	b, err := x.c.alloc(n)
	if err != nil {
		return err
	}
	x.c.release(*buf)
	*buf = b
	return nil
}

// barrier passes the communicator's barrier; i numbers the call's barriers for timeout messages.
func (x *run) barrier(i int) error {
	x.r.barrierEpoch++
	return x.c.barrier.wait(&x.waiter, x.r.id, 0, x.r.barrierEpoch, newPhase(x.algo+" barrier %d", i))
}

// pre is the mulsum premultiplier of rank p's input (ignored by other ops).
func pre(p int) int { return collectives.PreMulScalar(p) }

// alloc returns n zeroed, aligned bytes that every rank can read: shared memory when ranks live in several
// processes.
func (c *comm) alloc(n int64) ([]byte, error) {
	if c.sh == nil {
		return alignedBytes(n), nil
	}
	b, err := c.sh.arenas[c.sh.proc].alloc(n)
	if err != nil {
		c.abort(err) // every process reports why, not only that this one left
	}
	return b, err
}

// release gives back memory from alloc.
func (c *comm) release(b []byte) {
	if c.sh != nil && cap(b) > 0 {
		c.sh.arenas[c.sh.proc].release(b)
	}
}
