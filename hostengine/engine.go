// Package hostengine is the pure-Go RCCLX engine: every rank is a long-lived goroutine of this process and
// buffers are host memory. It runs the algorithms of SPEC section 5 for real (ring, direct alltoall, DDA flat
// and tree, FP8 low precision) with the flag and barrier protocols a GPU implementation uses, and is the
// bit-level reference for the GPU kernels: each algorithm's file states the order in which it reduces.
package hostengine

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// Version is the engine's version, reported as "rcclx-host=<Version>" in the output header.
const Version = 1

// defaultChunkBytes is how much of a segment moves per ring step. Ranks outnumber cores, so every step
// costs goroutine switches; at 1 MiB they are amortized and Go's copy switches to non-temporal stores.
// Measured on the 2-core CI box (docs/HOSTENGINE-PERF.md): 64 KiB chunks ran 8-rank 128 MiB all_reduce in
// ~120 ms, 256 KiB in ~105 ms, 1 MiB and 2 MiB in ~71 ms.
const defaultChunkBytes = 1 << 20

type engine struct{}

// New returns the host engine, named "host".
func New() collectives.Engine { return engine{} }

func (engine) Name() string { return "host" }

// Open starts cfg.NThreads*cfg.NGpus rank goroutines. The host engine is single-process.
func (engine) Open(cfg collectives.Config) (collectives.Comm, error) {
	if cfg.World != nil && cfg.World.Size() != 1 {
		return nil, fmt.Errorf("host engine: runs in one process, but the run has %d processes (use the gpu or vendor engine across processes)", cfg.World.Size())
	}
	if cfg.NThreads < 1 || cfg.NGpus < 1 {
		return nil, fmt.Errorf("host engine: need at least one thread and one rank per thread (got -t %d -g %d)", cfg.NThreads, cfg.NGpus)
	}
	getenv := func(key string) string { return cfg.Getenv(os.Getenv, key) }
	policy, err := collectives.PolicyFromEnv(getenv)
	if err != nil {
		return nil, fmt.Errorf("host engine: %w", err)
	}
	n := cfg.NThreads * cfg.NGpus
	hk, err := collectives.HooksFromEnv(getenv, n)
	if err != nil {
		return nil, fmt.Errorf("host engine: %w", err)
	}
	c := &comm{
		nranks:     n,
		policy:     policy,
		timeout:    cfg.Timeout,
		hooks:      hk,
		chunkBytes: defaultChunkBytes,
		barrier:    newBarrier(n, 1),
		parkers:    newParkers(n),
		done:       make(chan struct{}),
	}
	c.devices = devices(cfg.NThreads, cfg.NGpus)
	for r := range n {
		rk := &rank{c: c, id: r, queue: make(chan *task, queueDepth)}
		c.ranks = append(c.ranks, rk)
		c.running.Add(1)
		go rk.loop()
	}
	for t := range cfg.NThreads {
		c.groups = append(c.groups, &group{c: c, ranks: c.ranks[t*cfg.NGpus : (t+1)*cfg.NGpus]})
	}
	return c, nil
}

func devices(nthreads, ngpus int) []collectives.Device {
	host, _ := os.Hostname()
	var out []collectives.Device
	for r := range nthreads * ngpus {
		out = append(out, collectives.Device{
			Rank: r, Group: r / ngpus, Pid: os.Getpid(), Hostname: host, Index: r, BusID: "host", Name: "host",
		})
	}
	return out
}

// comm is the communicator of all ranks.
type comm struct {
	nranks     int
	policy     collectives.Policy
	timeout    time.Duration
	hooks      collectives.Hooks
	chunkBytes int64 // ring chunk size; tests shrink it
	barrier    *barrier
	parkers    []parker // one per rank (wait.go)
	ranks      []*rank
	groups     []*group
	devices    []collectives.Device

	aborted   atomic.Bool
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
// the flag and return it.
func (c *comm) abort(err error) {
	c.abortOnce.Do(func() {
		c.abortErr = err
		c.aborted.Store(true)
		c.wakeAll(nil)
	})
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
	})
	return nil
}
