package collectives

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Engine creates communicators over some memory and transport: the host engine (goroutines over host memory),
// the GPU engine (our CUDA kernels) or the vendor backend (an NCCL-ABI library).
type Engine interface {
	// Name is the engine's name as --engine spells it: "host", "gpu", "vendor".
	Name() string
	// Open creates the communicator of this process's ranks. It reads the environment (cfg.Env layered over the
	// process environment) once, as RCCLX reads its switches at communicator creation.
	Open(cfg Config) (Comm, error)
}

// Config is what an engine needs to create a communicator.
type Config struct {
	NThreads int // harness threads in this process (-t); each drives one Group
	NGpus    int // ranks per thread (-g)
	// World is the process group (rank and size of this process among all processes, and an exchange for
	// unique ids, IPC handles and results). Single-process runs pass a world of size 1.
	World World
	// Env overrides environment variables for this communicator only (A/B arms); nil means none.
	Env map[string]string
	// Timeout bounds every wait (-T); 0 waits forever.
	Timeout time.Duration
	// StreamNull asks for the default stream (-y); Register asks for buffer registration (-R);
	// ParallelInit asks every thread to create its own communicators (-p).
	StreamNull, Register, ParallelInit bool
	// Oversubscribe lets more ranks than devices share devices (GPU engine correctness runs).
	Oversubscribe bool
	// Library names the vendor library (--lib): a path or a name to search for.
	Library string
	// Memory is where rank buffers live (rccl-tests' -Y); CTAPolicy is ncclConfig's CTA policy (-x), -1 unset.
	Memory    MemoryKind
	CTAPolicy int
	// PinDevices puts this process's first rank on device FirstDevice and the others on the devices after it
	// (nccl-tests' NCCL_TESTS_DEVICE); otherwise the devices follow the ranks.
	PinDevices  bool
	FirstDevice int
}

// Device is the device of local rank l among ndev, in a process of nlocal ranks with hostIndex processes of
// lower rank on its host: by rank (ranks beyond the devices wrap around onto them), or pinned.
func (c Config) Device(hostIndex, nlocal, l, ndev int) (int, error) {
	if !c.PinDevices {
		return (hostIndex*nlocal + l) % ndev, nil
	}
	if d := c.FirstDevice + l; d < ndev {
		return d, nil
	}
	return 0, fmt.Errorf("NCCL_TESTS_DEVICE=%d puts local rank %d on device %d; this process sees %d (CUDA_VISIBLE_DEVICES)",
		c.FirstDevice, l, c.FirstDevice+l, ndev)
}

// Getenv reads a variable with the config's overrides first.
func (c Config) Getenv(getenv func(string) string, key string) string {
	if v, ok := c.Env[key]; ok {
		return v
	}
	return getenv(key)
}

// World is the set of processes of one run. Rank 0 prints and writes files.
type World interface {
	Rank() int
	Size() int
	// AllGather sends data to every process and returns every process's data, in rank order.
	AllGather(data []byte) ([][]byte, error)
	Barrier() error
}

// Comm is one communicator over all ranks of the run, as seen from this process.
type Comm interface {
	// NRanks is the number of ranks in the whole run.
	NRanks() int
	// Groups returns one Group per harness thread, in thread order.
	Groups() []Group
	// Devices describes this process's ranks for the "# Using devices" lines, in rank order.
	Devices() []Device
	// Library is the header's version text after the suite's own ("nccl-library=22803", "rcclx-host=1").
	Library() string
	// Version is the library version number written to JSON (nccl_version); 0 if none.
	Version() int
	Close() error
}

// Device describes the device of one rank.
type Device struct {
	Rank, Group, Pid int
	Hostname         string
	Index            int    // device ordinal on the host
	BusID            string // "0000:00:06"
	Name             string // "NVIDIA H200", "host"
}

// Buffer is memory of one rank that an engine allocated: host memory, or device memory.
type Buffer interface {
	Len() int64
}

// View is a byte offset into a buffer.
type View struct {
	Buf Buffer
	Off int64
}

// Call is one collective on every rank of a group.
type Call struct {
	Coll   *Collective
	DType  DType
	Op     Op
	Root   int
	Counts []Counts // per local rank
	Send   []View   // per local rank; in-place calls point Send and Recv into the same buffer
	Recv   []View
}

// InPlace reports whether local rank l's call works in place.
func (c *Call) InPlace(l int) bool { return c.Send[l].Buf == c.Recv[l].Buf }

// Group drives the ranks of one harness thread (-g of them). All methods are called from one goroutine, which
// the harness has locked to its OS thread.
type Group interface {
	// Ranks lists the global ranks this group drives, in local order.
	Ranks() []int
	Alloc(local int, bytes int64) (Buffer, error)
	Free(b Buffer) error
	// Write copies host bytes into a buffer; Read copies a buffer out. Both complete before returning.
	Write(dst View, src []byte) error
	Read(dst []byte, src View) error
	// Algorithm names the algorithm the engine will use for c ("ring", "dda_flat", "dda_tree", "lp", "nccl").
	Algorithm(c *Call) string
	// Launch starts c on every local rank (one library group) and returns without waiting.
	Launch(c *Call) error
	// Wait blocks until everything launched has finished; past Config.Timeout it returns a *TimeoutError.
	Wait() error
}

// CacheFlusher is a Comm that can flush its devices' instruction caches as rccl-tests' -F does: in the warm-up
// and timed loops, before each local rank's call of every every-th operation (by its index in the loop, 0
// included).
// FlushICache readies that before the first measurement; an error says why it cannot, and the run goes on
// without.
type CacheFlusher interface {
	FlushICache(every int) error
}

// LoopLauncher is a Group that readies whole iterations before the clock starts and launches them at once:
// iters iterations of agg operations from the first-th operation on (the i-th operation is calls[i mod
// len(calls)]), an iteration's operations aggregated as its library allows (NCCL: one group, as nccl-tests
// does for -m). The vendor engine makes the loop's library calls in one crossing from Go, so its timed loop
// costs the host what the same loop costs in C. launch stays valid until the group's next PrepareLoop or Launch.
type LoopLauncher interface {
	PrepareLoop(calls []*Call, first, iters, agg int) (launch func() error, err error)
}

// Waker is a Group that launches through threads of its own which sleep when idle (the GPU engine's launcher
// threads). The harness calls Wake just before it starts a timed loop's clock, so that the loop does not
// include waking them: a loop that began with them asleep after a long warm-up measured up to 300 us longer.
type Waker interface {
	Wake()
}

// Paced is a Group whose queued operations take long to drain, since its ranks compute on the host's cores
// (the host engine): the harness waits for each timed iteration of a large size before launching the next, so
// that an interrupt stops a half between iterations. Device engines queue on streams, which drain in about the
// time the queued iterations take; a wait between their iterations would add a host round trip to each.
type Paced interface {
	Paced()
}

// LaunchEach launches n operations of a loop over calls from the first-th on (the i-th is calls[i mod
// len(calls)]), one Launch each: the loop of a Group that is no LoopLauncher, or that cannot list its calls.
func LaunchEach(g Group, calls []*Call, first, n int) error {
	for i := first; i < first+n; i++ {
		if err := g.Launch(calls[i%len(calls)]); err != nil {
			return err
		}
	}
	return nil
}

// Grapher is a Group that can capture launches into a graph and replay them (-G).
type Grapher interface {
	// Capture records the launches made by record and returns a graph that replays them.
	Capture(record func() error) (Graph, error)
}

// Graph is a captured sequence of launches.
type Graph interface {
	Launch() error
	Destroy() error
}

// EventTimer is a Group that can time work between device events without waiting (-I per-iteration timing,
// kernel timing).
type EventTimer interface {
	// Mark records an event on every local rank after the work launched so far; Elapsed is each local rank's
	// time between two marks, in local order, valid after Wait.
	Mark() (Event, error)
	Elapsed(from, to Event) ([]time.Duration, error)
}

// Event is an opaque mark of an EventTimer.
type Event any

// Dispatch is one kernel dispatch on one rank's device as rccl-tests' kernel timing records it: the device's
// start and end in CLOCK_BOOTTIME nanoseconds, the communicator's dispatch sequence number, and what ran (Func
// an RCCL ncclFunc_t, Datatype an ncclDataType_t, grid and block widths, collectives aggregated).
type Dispatch struct {
	Rank                                        int
	Seq, CommHash, Count                        uint64
	Func, Datatype, NChannels, NThreads, NColls uint32
	Start, End                                  uint64
}

// DispatchDrainer is a Group over a library that records its kernel dispatches itself (RCCL's kernel timing,
// RCCL_KERNEL_TIMING=1), for rccl-tests' RCCL_TESTS_KERNEL_TIMING.
type DispatchDrainer interface {
	// KernelTiming reports whether the library can record dispatches (it exports the drain).
	KernelTiming() bool
	// DrainDispatches moves every local rank's records since the last drain out of the library. dropped is
	// the library's running total of records it could not keep, result the library's last status (0
	// success; RCCL answers 5, invalid usage, where RCCL_KERNEL_TIMING is unset), drains how many calls it made.
	DrainDispatches() (recs []Dispatch, dropped uint64, result, drains int)
}

// MemoryReporter is a Group that can tell how much memory one of its ranks may still allocate, so the harness
// can shrink -e the way nccl-tests does instead of failing mid-sweep.
type MemoryReporter interface {
	FreeMemory(local int) (int64, error)
}

// OpenMemoryReporter is a Comm that measured the device memory opening it took (nccl-tests' -M
// "Initialization": free memory before the communicators were created less free memory after, the most
// over this process's devices). Without it the -M line prints N/A there.
type OpenMemoryReporter interface {
	OpenMemory() int64
}

// InPlaceLimiter is a Group whose library defines no in-place form of some collective (NCCL's alltoall): the
// harness times that in-place half but leaves it unchecked (#wrong N/A), as nccl-tests does.
type InPlaceLimiter interface {
	NoInPlace(c *Collective) bool
}

// CollectiveChecker is a Comm that can tell before a run that it cannot run a collective at all (an engine
// without it, a library that does not export its call): the harness then says so in one line instead of a
// row per type and operation. The error wraps ErrUnsupported.
type CollectiveChecker interface {
	CanRun(c *Collective) error
}

// Prober is an Engine that can tell, cheaply and without side effects, whether it can run on this machine
// (a driver and a device for the GPU engine, a loadable library for the vendor backend). --engine auto picks
// the first available engine.
type Prober interface {
	Available() error
}

// RuntimeNamer is an Engine that runs on a GPU runtime. After Open, Runtime names it: RuntimeCUDA or
// RuntimeHIP. The harness picks the output dialect (nccl-tests' on CUDA, rccl-tests' on HIP) and the header's
// runtime line from it.
type RuntimeNamer interface {
	Runtime() string
}

// LibraryPather is a Comm over a library loaded from a file (the vendor engine): LibraryPath names the file.
type LibraryPather interface {
	LibraryPath() string
}

// The GPU runtimes an engine can run on.
const (
	RuntimeCUDA = "cuda"
	RuntimeHIP  = "hip"
)

// Preparer is a Comm with first-use work per (type, operation) that it can do for a whole run at once (the
// GPU engine compiles its kernels). The harness calls Prepare before the first measurement with the types and
// operations the sweep will run of collective coll; note prints a line on stderr (the engine says what takes
// the time, and only when something does).
type Preparer interface {
	Prepare(coll *Collective, dtypes []DType, ops []Op, note func(line string)) error
}

// Canceler is a Comm that can be ended from outside its calls, from any goroutine: the harness cancels it
// once another process of the run is lost, so that a rank in the middle of a long call stops at its next
// chunk (host engine), its kernels give up their waits (gpu engine) or its communicators are aborted (vendor
// engine). Every call in progress and every later one then fails with err. Cancel returns without waiting for
// the calls; the Comm must still be closed.
type Canceler interface {
	Cancel(err error)
}

// Errors engines return, mapped by the harness to nccl-tests' exit codes.
var (
	// ErrUnsupported: the engine cannot run this call (dtype, op, collective); the harness reports it clearly.
	ErrUnsupported = errors.New("not supported by this engine")
)

// TimeoutError is a wait that ran past -T. Exit code 4. Rank is the rank that gave up waiting, in Phase;
// Missing, when the engine can tell, lists the ranks that never arrived at that call (see Arrivals).
type TimeoutError struct {
	Rank    int
	Phase   string // "ring reduce-scatter step 3", "barrier", "ncclAllReduce"
	After   time.Duration
	Missing []int
	// Processes, on a wait between processes (the World's, not a collective's), are the processes that did not
	// answer; Rank is then the process that waited.
	Processes []int
}

func (e *TimeoutError) Error() string {
	if len(e.Processes) > 0 {
		return fmt.Sprintf("timeout after %v: %s %s did not answer (process %d waited in %s)", e.After,
			ProcessesWord(e.Processes), JoinRanks(e.Processes), e.Rank, e.Phase)
	}
	msg := fmt.Sprintf("timeout after %v: rank %d stuck in %s", e.After, e.Rank, e.Phase)
	if len(e.Missing) > 0 {
		msg += fmt.Sprintf(" waiting for %s %s", RanksWord(e.Missing), JoinRanks(e.Missing))
	}
	return msg
}

// ProcessesWord is "process" or "processes" for a list of processes.
func ProcessesWord(procs []int) string {
	if len(procs) == 1 {
		return "process"
	}
	return "processes"
}

// Arrivals counts the calls each local rank of a communicator has entered (an engine calls Arrive as a rank
// starts its part of a call), so that a timeout names the ranks that never arrived, whatever the collective
// and algorithm, rather than a peer that waited for them.
type Arrivals struct {
	first int // global rank of the first counter: a process's local ranks are consecutive global ranks
	calls []*atomic.Uint64
}

// NewArrivals counts for the n local ranks whose global ranks start at first.
func NewArrivals(first, n int) *Arrivals {
	a := &Arrivals{first: first}
	for range n {
		a.calls = append(a.calls, new(atomic.Uint64))
	}
	return a
}

// ArrivalsOver counts in counters, one per global rank from 0, which every process of the run sees (shared
// memory): its Missing names ranks of other processes too.
func ArrivalsOver(counters []*atomic.Uint64) *Arrivals { return &Arrivals{calls: counters} }

// Arrive records that global rank r, one of the local ranks, entered one more call (nothing for a nil
// Arrivals).
func (a *Arrivals) Arrive(r int) {
	if a != nil {
		a.calls[r-a.first].Add(1)
	}
}

// Missing lists the global ranks among its counters that entered fewer calls than the furthest one: the ranks
// their peers wait for. Empty when every counted rank arrived (the missing rank is then in another process
// whose counters these are not), and for a nil Arrivals.
func (a *Arrivals) Missing() []int {
	if a == nil {
		return nil
	}
	var most uint64
	for i := range a.calls {
		most = max(most, a.calls[i].Load())
	}
	var out []int
	for i := range a.calls {
		if a.calls[i].Load() < most {
			out = append(out, a.first+i)
		}
	}
	return out
}

// RanksWord is "rank" or "ranks" for a list of ranks.
func RanksWord(ranks []int) string {
	if len(ranks) == 1 {
		return "rank"
	}
	return "ranks"
}

// JoinRanks spells ranks as "3" or "3,5".
func JoinRanks(ranks []int) string {
	s := make([]string, len(ranks))
	for i, r := range ranks {
		s[i] = strconv.Itoa(r)
	}
	return strings.Join(s, ",")
}

// RuntimeError is a device runtime failure (CUDA driver, NVRTC, memory). Exit code 2.
type RuntimeError struct{ Err error }

func (e *RuntimeError) Error() string { return e.Err.Error() }
func (e *RuntimeError) Unwrap() error { return e.Err }

// LibraryError is a collective library failure (NCCL result code, bad library). Exit code 3.
type LibraryError struct{ Err error }

func (e *LibraryError) Error() string { return e.Err.Error() }
func (e *LibraryError) Unwrap() error { return e.Err }

// AsGroups returns an engine's own group type as the interface, for Comm.Groups.
func AsGroups[G Group](gs []G) []Group {
	out := make([]Group, len(gs))
	for i, g := range gs {
		out[i] = g
	}
	return out
}
