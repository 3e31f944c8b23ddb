// Package hostengine is the pure-Go RCCLX engine: every rank is a long-lived goroutine and buffers are host
// memory. The ranks of one run may live in one process or in several processes of one machine (shm.go): the
// algorithms see peers only through their flags (progress, barrier mailboxes), their exposed memory (expose,
// view) and buffers from grow or alloc, so they do not care whether a peer is a goroutine or a process. It runs the algorithms of SPEC section 5 for real (ring, direct alltoall, DDA flat
// and tree, FP8 low precision) with the flag and barrier protocols a GPU implementation uses, and is the
// bit-level reference for the GPU kernels: each algorithm's file states the order in which it reduces.
package hostengine

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// Version is the engine's version, reported as "rcclx-host=<Version>" in the output header.
const Version = 1

// defaultChunkBytes is how much of a segment moves per ring step. Ranks outnumber cores, so every step
// costs goroutine switches; at 1 MiB they are amortized and Go's copy switches to non-temporal stores.
// Measured on the 2-core CI box (docs/DESIGN.md): 64 KiB chunks ran 8-rank 128 MiB all_reduce in
// ~120 ms, 256 KiB in ~105 ms, 1 MiB and 2 MiB in ~71 ms.
const defaultChunkBytes = 1 << 20

type engine struct{}

// New returns the host engine, named "host".
func New() collectives.Engine { return engine{} }

func (engine) Name() string { return "host" }

// Open starts this process's cfg.NThreads*cfg.NGpus rank goroutines. With several processes in the World,
// process p holds ranks p*nlocal to (p+1)*nlocal-1 and the processes meet in shared memory (one machine).
func (engine) Open(cfg collectives.Config) (collectives.Comm, error) {
	if cfg.NThreads < 1 || cfg.NGpus < 1 {
		return nil, fmt.Errorf("host engine: need at least one thread and one rank per thread (got -t %d -g %d)", cfg.NThreads, cfg.NGpus)
	}
	getenv := func(key string) string { return cfg.Getenv(os.Getenv, key) }
	policy, err := collectives.PolicyFromEnv(getenv)
	if err != nil {
		return nil, fmt.Errorf("host engine: %w", err)
	}
	fp8, err := collectives.ParseFP8Flavour(getenv(collectives.EnvFP8))
	if err != nil {
		return nil, fmt.Errorf("host engine: %w", err)
	}
	nlocal, procs := cfg.NThreads*cfg.NGpus, 1
	if cfg.World != nil {
		procs = cfg.World.Size()
	}
	n := nlocal * procs
	hk, err := collectives.HooksFromEnv(getenv, n)
	if err != nil {
		return nil, fmt.Errorf("host engine: %w", err)
	}
	c := &comm{
		nranks:     n,
		policy:     policy,
		fp8:        fp8,
		timeout:    cfg.Timeout,
		hooks:      hk,
		chunkBytes: defaultChunkBytes,
		parkers:    newParkers(n),
		done:       make(chan struct{}),
	}
	if procs > 1 {
		if c.sh, err = openShared(cfg.World, n, nlocal); err != nil {
			return nil, err
		}
		c.first = cfg.World.Rank() * nlocal
	}
	c.barrier = &barrier{n: n, blocks: 1}
	for r := range n {
		rk := &rank{c: c, id: r}
		if c.sh != nil {
			c.barrier.boxes = append(c.barrier.boxes, c.sh.attachRank(rk, n))
		} else {
			rk.progress = &rk.cell
		}
		c.ranks = append(c.ranks, rk)
	}
	if c.sh == nil {
		c.barrier = newBarrier(n, 1)
	}
	for _, rk := range c.ranks[c.first : c.first+nlocal] {
		rk.local, rk.queue = true, make(chan *task, queueDepth)
		c.running.Add(1)
		go rk.loop()
	}
	for t := range cfg.NThreads {
		at := c.first + t*cfg.NGpus
		c.groups = append(c.groups, &group{c: c, ranks: c.ranks[at : at+cfg.NGpus]})
	}
	c.devices = devices(c.first, cfg.NThreads, cfg.NGpus)
	if c.sh == nil {
		c.arrivals = collectives.NewArrivals(c.first, nlocal)
	} else { // every process counts every rank's calls, so a timeout names a rank of another process
		var counters []*atomic.Uint64
		for _, rk := range c.ranks {
			counters = append(counters, rk.arrived)
		}
		c.arrivals = collectives.ArrivalsOver(counters)
		c.sh.arrivals = c.arrivals
	}
	return c, nil
}

// FP8Flavour is the flavour RCCLX_TESTS_FP8 chose (collectives.FP8Reporter): the host engine has no device to
// ask, so a CPU-only run stands in for an MI300 (gfx942) with fnuz.
func (c *comm) FP8Flavour() collectives.FP8Flavour { return c.fp8 }

// devices describes this process's ranks, the first of which is global rank first.
func devices(first, nthreads, ngpus int) []collectives.Device {
	host, _ := os.Hostname()
	var out []collectives.Device
	for l := range nthreads * ngpus {
		out = append(out, collectives.Device{
			Rank: first + l, Group: l / ngpus, Pid: os.Getpid(), Hostname: host, Index: first + l, BusID: "host", Name: "host",
		})
	}
	return out
}

// comm is the communicator of all ranks.
type comm struct {
	nranks     int
	policy     collectives.Policy
	fp8        collectives.FP8Flavour // RCCLX_TESTS_FP8: what the FP8 types and the LP paths compute in
	timeout    time.Duration
	hooks      collectives.Hooks
	arrivals   *collectives.Arrivals // calls each rank entered, for timeouts
	chunkBytes int64                 // ring chunk size; tests shrink it
	barrier    *barrier
	parkers    []parker // one per rank (wait.go)
	ranks      []*rank  // every rank of the run; this process runs ranks[first:first+local ranks]
	first      int
	sh         *shared // the other processes' ranks; nil when all ranks are in this process
	groups     []*group
	devices    []collectives.Device

	aborted   atomic.Bool
	cancelled atomic.Bool // aborted by Cancel: Write and Read fail too
	abortOnce sync.Once
	abortErr  error // set once, before aborted becomes true
	closeOnce sync.Once
	done      chan struct{} // closed by Close
	running   sync.WaitGroup
}

var errClosed = errors.New("host engine: communicator closed")

func (c *comm) NRanks() int                   { return c.nranks }
func (c *comm) Devices() []collectives.Device { return c.devices }
func (c *comm) Library() string               { return fmt.Sprintf("rcclx-host=%d", Version) }
func (c *comm) Version() int                  { return 0 }
func (c *comm) Groups() []collectives.Group   { return collectives.AsGroups(c.groups) }

// CanRun refuses all_reduce_bias, a library call (RCCL's ncclAllReduceWithBias) with no algorithm here.
func (c *comm) CanRun(coll *collectives.Collective) error {
	if coll.Base() == collectives.AllReduceBias {
		return fmt.Errorf("engine host has no all_reduce_bias (RCCL's ncclAllReduceWithBias): %w", collectives.ErrUnsupported)
	}
	return nil
}

// abort stops every rank's current and future calls with err (the first error wins): waiting ranks wake, see
// the flag and return it. An error of this process's own is posted for the other processes too.
func (c *comm) abort(err error) { c.stop(err, err != errClosed) }

// stop is abort; post says whether the other processes must learn of err from this one. A failure that came
// from outside (the World, another process's post) is not posted again: every process learns of a lost
// process from its own World, which names it alike everywhere (the error value the harness recognizes).
func (c *comm) stop(err error, post bool) {
	c.abortOnce.Do(func() {
		c.abortErr = err
		c.aborted.Store(true)
		if c.sh != nil && post {
			c.sh.post(err) // the other processes' ranks stop too
		}
		c.wakeAll(nil)
	})
}

// Cancel ends every call from outside (collectives.Canceler: another process of the run was lost): each rank
// stops at its next chunk of work or wait, and every call fails with err.
func (c *comm) Cancel(err error) {
	c.stop(err, false)
	c.cancelled.Store(true) // after the abort: copyStoppable, seeing it, finds the error set
}

// cancelPiece is how much of a buffer a rank reduces or copies between two looks at the abort flag: a 1 GiB
// reduction on a loaded 2-core machine takes seconds, a piece of it a few milliseconds, and one atomic load
// per piece costs nothing next to the piece.
const cancelPiece = 1 << 20

// stoppable is r working through its buffers cancelPiece bytes at a time (element-wise, so the bits are the
// same), stopping early once the communicator is aborted: the call then fails at its next wait (execute).
func (c *comm) stoppable(r reducer) reducer {
	combine, finish := r.combine, r.finish
	r.combine = func(dst, a, b []byte, preA, preB int) {
		for lo := 0; lo < len(dst); lo += cancelPiece {
			if c.aborted.Load() {
				return
			}
			hi := min(lo+cancelPiece, len(dst))
			combine(dst[lo:hi], a[lo:hi], b[lo:hi], preA, preB)
		}
	}
	if finish != nil {
		r.finish = func(buf []byte, nranks int) {
			for lo := 0; lo < len(buf); lo += cancelPiece {
				if c.aborted.Load() {
					return
				}
				finish(buf[lo:min(lo+cancelPiece, len(buf))], nranks)
			}
		}
	}
	return r
}

// copyStoppable copies src into dst (of equal length) cancelPiece bytes at a time and fails once the
// communicator is cancelled (Cancel; buffers stay readable and writable after other aborts): the harness's
// writes and reads of large buffers, which fault their pages in the first time, take seconds at 1 GiB. It
// yields after every piece: one long copy gives the scheduler no point to stop it at, and a garbage collection
// that starts meanwhile holds up every goroutine of the process, the harness's watch for a lost process too.
func (c *comm) copyStoppable(dst, src []byte) error {
	for lo := 0; lo < len(src); lo += cancelPiece {
		if c.cancelled.Load() {
			return c.err()
		}
		hi := min(lo+cancelPiece, len(src))
		copy(dst[lo:hi], src[lo:hi])
		if hi < len(src) {
			runtime.Gosched()
		}
	}
	return nil
}

// err is the error that aborted the communicator, nil if it runs.
func (c *comm) err() error {
	if c.aborted.Load() {
		return c.abortErr
	}
	return nil
}

// Close aborts anything still running, stops the rank goroutines and waits for them.
func (c *comm) Close() error {
	c.closeOnce.Do(func() {
		c.abort(errClosed)
		close(c.done)
		c.running.Wait()
		if c.sh != nil {
			c.sh.close()
		}
	})
	return nil
}
