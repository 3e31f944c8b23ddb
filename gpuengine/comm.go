package gpuengine

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

// comm is the communicator of this process's ranks.
type comm struct {
	nranks   int
	policy   collectives.Policy
	hooks    collectives.Hooks
	arrivals *collectives.Arrivals // calls each local rank entered, for timeouts
	tuning   collectives.GPUTuning
	fp8      collectives.FP8Flavour // of every device (gpurt.CommonFP8)
	timeout  time.Duration
	half     int64 // bytes of one data half of every rank's buffer
	blockCap int   // most blocks per kernel: kernels of ranks that share a GPU must all fit at once
	earlyCap int   // most blocks per kernel launched early (setCaps); 0: none is
	ownGPUs  bool  // every rank has a GPU to itself (setCaps)
	gatedOff gates // features some rank's GPU lacks (or that are off by default there), the same on every rank
	ranks    []*rank
	groups   []*group
	devices  []collectives.Device
	opened   int64 // device memory opening took, the most on any device (OpenMemory)
	modules  modules
	memory   collectives.MemoryKind // -Y: where rank buffers live (memory.go)

	// Host-mapped words: [0] the abort flag every kernel wait polls, [1+l] local rank l's stuck phase.
	flagsHost unsafe.Pointer
	flagsDev  gpurt.DevicePtr

	abortMu  sync.Mutex
	abortErr error // set once a wait timed out: the kernels gave up and the counters are out of step
}

// rank is one local rank: its device, context, stream and peer-visible buffer.
type rank struct {
	global, local int
	dev           gpurt.Device
	ctx           *gpurt.Context
	stream        gpurt.Stream // 0 with -y: the legacy default stream
	caps          gpurt.Caps
	sms           int
	sharedOptin   int               // the most dynamic shared memory a block may opt in to
	buf           gpurt.DevicePtr   // this rank's peer-visible buffer
	peers         gpurt.DevicePtr   // device table: every rank's buffer as this rank addresses it
	mapped        []gpurt.DevicePtr // IPC mappings of other processes' buffers, closed with the comm
	lastColl      string            // collective and algorithm of the last launch, for timeout messages
	lastAlgo      string
	events        gpurt.EventPool // timing marks (timer.go)
	ce            ceRank          // the copy-engine transport's events and scratch
	args          *gpurt.ArgBlock // kernel parameters of this rank's launches (one launching thread at a time)
	vtable        vTable          // alltoallv's counts and displacements
}

func (r *rank) lastCall() string { return r.lastColl + " " + r.lastAlgo }

func (c *comm) NRanks() int                   { return c.nranks }
func (c *comm) Devices() []collectives.Device { return c.devices }
func (c *comm) OpenMemory() int64             { return c.opened }
func (c *comm) Library() string               { return fmt.Sprintf("rcclx-gpu=%d", version) }
func (c *comm) Version() int                  { return 0 }
func (c *comm) Groups() []collectives.Group   { return collectives.AsGroups(c.groups) }

// abortFlag is the host side of the word every kernel wait polls.
func (c *comm) abortFlag() *uint32 { return (*uint32)(c.flagsHost) }

// phaseWord is the host side of local rank l's stuck-phase word.
func (c *comm) phaseWord(l int) *uint32 { return (*uint32)(unsafe.Add(c.flagsHost, 4*(1+l))) }

// statusDev is the device address of local rank l's stuck-phase word.
func (c *comm) statusDev(l int) gpurt.DevicePtr { return c.flagsDev + gpurt.DevicePtr(4*(1+l)) }

// abort makes every kernel of this process give up its waits, once, and records why; later calls fail with
// the same error.
func (c *comm) abort(cause error) error {
	c.abortMu.Lock()
	defer c.abortMu.Unlock()
	if c.abortErr == nil {
		c.abortErr = cause
		atomic.StoreUint32(c.abortFlag(), 1)
	}
	return c.abortErr
}

// Cancel ends every call from outside (collectives.Canceler: another process of the run was lost): the kernels
// give up their waits on peers, which a dead process would never satisfy, and Wait returns err.
func (c *comm) Cancel(err error) {
	c.abortMu.Lock()
	defer c.abortMu.Unlock()
	if c.abortErr == nil {
		c.abortErr = err
		if c.flagsHost != nil {
			atomic.StoreUint32(c.abortFlag(), 1)
		}
	}
}

func (c *comm) usable() error {
	c.abortMu.Lock()
	defer c.abortMu.Unlock()
	return c.abortErr
}

// Close frees what Open made; after an abort the kernels have returned, so this still works.
func (c *comm) Close() error {
	for _, g := range c.groups {
		g.stopLaunchers()
	}
	c.modules.unload()
	var errs []error
	// The flags were allocated in rank 0's context: free them while it is still alive, after every kernel that
	// polls them has ended.
	if c.flagsHost != nil && len(c.ranks) > 0 && c.ranks[0].ctx != nil {
		for _, r := range c.ranks {
			if r.ctx != nil {
				errs = append(errs, runtimeError(r, r.ctx.SetCurrent()), runtimeError(r, r.stream.Synchronize()))
			}
		}
		errs = append(errs, runtimeError(c.ranks[0], c.ranks[0].ctx.SetCurrent()), gpurt.HostFree(c.flagsHost))
		c.flagsHost = nil
	}
	for _, r := range c.ranks {
		errs = append(errs, r.close())
	}
	return errors.Join(errs...)
}

func (r *rank) close() error {
	if r.ctx == nil {
		return nil
	}
	var errs []error
	keep := func(err error) {
		if err != nil {
			errs = append(errs, runtimeError(r, err))
		}
	}
	keep(r.ctx.SetCurrent())
	keep(r.stream.Synchronize())
	_ = r.events.Destroy()
	for _, err := range r.ce.close() {
		keep(err)
	}
	for _, p := range r.mapped {
		keep(gpurt.IpcCloseMemHandle(p))
	}
	for _, p := range []gpurt.DevicePtr{r.peers, r.buf, r.vtable.dev} {
		if p != 0 {
			keep(gpurt.MemFree(p))
		}
	}
	if r.stream != 0 {
		keep(r.stream.Destroy())
	}
	keep(r.args.Free())
	keep(r.ctx.Release())
	r.ctx = nil
	return errors.Join(errs...)
}
