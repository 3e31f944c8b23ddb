package vendorengine

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
	"github.com/rcclx-tests/rcclx-tests/nccl"
)

// comm is the communicators of this process's ranks.
type comm struct {
	lib            *nccl.Library
	nranks         int
	opened         int64 // device memory creating the communicators took, the most on any device (OpenMemory)
	timeout        time.Duration
	register       bool
	nativeAlltoAll bool
	// The library exports ncclGather / ncclScatter (NCCL 2.28+); otherwise grouped sends and receives.
	nativeGather, nativeScatter bool
	withBias                    bool                   // the library exports ncclAllReduceWithBias (RCCL)
	nonBlocking                 bool                   // communicators made with blocking = 0: calls may return ncclInProgress (see finish)
	memory                      collectives.MemoryKind // -Y: where rank buffers live (memory.go)
	fp8                         collectives.FP8Flavour // of the devices (FP8Flavour)
	ctaPolicy                   int                    // -x as applied: -1 none (memory.go)
	ctaNote                     string                 // the header line about -x
	hooks                       collectives.Hooks
	arrivals                    *collectives.Arrivals // calls each local rank entered, for timeouts
	ranks                       []*rank               // local ranks, in local order
	groups                      []*group
	devices                     []collectives.Device
	flushEvery                  int           // -F: flush the instruction cache before every flushEvery-th operation of a timed loop
	flush                       *nccl.Foreign // the flush kernel's launch function (icache.go)

	abortMu  sync.Mutex
	abortErr error // why the communicators were aborted; after ncclCommAbort they are gone
}

// rank is one local rank: its device, context, stream and communicator.
type rank struct {
	global int
	dev    gpurt.Device
	ctx    *gpurt.Context
	stream gpurt.Stream // 0 with -y: the legacy default stream
	comm   nccl.Comm
	caps   gpurt.Caps
	// FP8: nccl-tests and rccl-tests run the FP8 types on compute capability 9.0 and later (AMD gfx90a reports
	// 9.0, gfx942 9.4).
	fp8       bool
	flush     gpurt.ICacheFlush // -F's kernel on this device, once FlushICache loaded it
	flushArgs []uintptr         // its launch's arguments on the rank's stream, made once (the timed loop makes no slice)
}

func (r *rank) open(streamNull bool) error {
	var err error
	if r.ctx, err = r.dev.RetainPrimaryContext(); err != nil {
		return err
	}
	if err := r.ctx.SetCurrent(); err != nil {
		return err
	}
	major, _, err := r.dev.ComputeCapability()
	if err != nil {
		return err
	}
	r.fp8 = major >= 9
	if r.caps, err = r.dev.Caps(); err != nil {
		return err
	}
	if !streamNull {
		r.stream, err = gpurt.StreamCreate(true)
	}
	return err
}

// FP8Flavour is the flavour the library computes the FP8 types in on these devices (collectives.FP8Reporter).
func (c *comm) FP8Flavour() collectives.FP8Flavour { return c.fp8 }

func (c *comm) NRanks() int                   { return c.nranks }
func (c *comm) Devices() []collectives.Device { return c.devices }
func (c *comm) OpenMemory() int64             { return c.opened }
func (c *comm) Library() string               { return fmt.Sprintf("nccl-library=%d", c.lib.Version()) }
func (c *comm) Version() int                  { return c.lib.Version() }
func (c *comm) LibraryPath() string           { return c.lib.File }
func (c *comm) Groups() []collectives.Group   { return collectives.AsGroups(c.groups) }

// abort ends every communicator of the process without waiting for their work (after a timeout or an
// asynchronous error), once, and returns the first cause, which every later call reports.
func (c *comm) abort(cause error) error {
	c.abortMu.Lock()
	defer c.abortMu.Unlock()
	if c.abortErr != nil {
		return c.abortErr
	}
	c.abortErr = cause
	for _, r := range c.ranks {
		if r.comm != 0 {
			c.lib.CommAbort(r.comm)
		}
	}
	return cause
}

// Cancel ends every call from outside (collectives.Canceler: another process of the run was lost): on
// non-blocking communicators (-T) every one is aborted, which stops the library's kernels and threads that wait
// for the lost process, and Wait returns err. A blocking communicator may be inside a call on another thread,
// where aborting it is not safe: it is left to the harness's last resort (the process exits).
func (c *comm) Cancel(err error) {
	if c.nonBlocking {
		_ = c.abort(err)
	}
}

// usable fails once the communicators are aborted (another thread may have timed out).
func (c *comm) usable() error {
	c.abortMu.Lock()
	defer c.abortMu.Unlock()
	return c.abortErr
}

// Close destroys what Open made. After an abort only the GPU runtime's resources remain to free, and their errors
// (the device may be in a bad state) are not reported.
func (c *comm) Close() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	aborted := c.usable() != nil
	var errs []error
	keep := func(err error) {
		if err != nil && !aborted {
			errs = append(errs, err)
		}
	}
	for _, g := range c.groups {
		keep(g.close(aborted))
	}
	for _, r := range c.ranks {
		if r.comm != 0 && !aborted {
			keep(libraryError(c.lib.CommDestroy(r.comm)))
		}
		if r.ctx == nil {
			continue
		}
		keep(runtimeError(r.ctx.SetCurrent()))
		if r.flush.Module != nil {
			keep(runtimeError(r.flush.Module.Unload()))
		}
		if r.stream != 0 {
			keep(runtimeError(r.stream.Destroy()))
		}
		keep(runtimeError(r.ctx.Release()))
	}
	c.ranks, c.groups = nil, nil
	return errors.Join(errs...)
}

// CanRun refuses all_reduce_bias where the library does not export ncclAllReduceWithBias (RCCL's own call).
func (c *comm) CanRun(coll *collectives.Collective) error {
	if coll.Base() == collectives.AllReduceBias && !c.withBias {
		return fmt.Errorf("%s does not export ncclAllReduceWithBias: %w", c.lib.Path, collectives.ErrUnsupported)
	}
	return nil
}
