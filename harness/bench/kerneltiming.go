package bench

import (
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/internal/roctx"
	"github.com/rcclx-tests/rcclx-tests/results"
)

// Kernel timing is rccl-tests' RCCL_TESTS_KERNEL_TIMING=PREFIX: the start and end of every kernel dispatch on
// its device, tagged with the point it belongs to, written when the run ends to PREFIX_pidPID.csv in
// rccl-tests' columns, one file per process. Where the library records its dispatches itself (RCCL's
// ncclKernelTimingDrain, under RCCL_KERNEL_TIMING=1) they are drained as rccl-tests drains them: after each
// half's warm-up (tagged phase=setup) and after its timed loop. On this suite's GPU engines and on a library
// without that drain, the harness records a device event before and after each dispatch (an iteration's -m
// operations, one -z operation, one -G graph launch) and places them on CLOCK_BOOTTIME through an event
// recorded on the idle stream when each window opens; such records have no channel or thread counts (0).

// ktWindow bounds the dispatches timed by events in one window (a half's warm-up, or its timed loop) per
// thread; later ones are counted as dropped, as the library drops what overflows its buffer.
const ktWindow = 1024

// ktKeep bounds the records a process keeps for its file (about 100 MB): an endless run (-N 0) counts the
// rest as dropped instead of growing without end.
var ktKeep = 1 << 20

// ktFuncs are RCCL's ncclFunc_t numbers for the dispatches of each collective, for records taken by events.
var ktFuncs = map[string]uint32{"broadcast": 0, "reduce": 1, "all_gather": 2, "reduce_scatter": 3,
	"all_reduce": 4, "all_reduce_bias": 4, "sendrecv": 5, "hypercube": 5, "alltoall": 8, "alltoallv": 8,
	"scatter": 9, "gather": 10}

// ktFile is one process's records for one prefix: every session of the process adds to it, and each writes it
// whole when it ends (rccl-tests writes one file per process).
type ktFile struct {
	mu      sync.Mutex
	path    string
	rows    []ktRow
	library bool   // drained from the library (else timed by events)
	dropped uint64 // the library's running total; or the dispatches past ktWindow
	lost    uint64 // records past ktKeep
	drains  int
	result  int // the library's last drain status
}

// keep adds rows up to ktKeep in all, counting the rest as dropped.
func (f *ktFile) keep(rows []ktRow) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := min(len(rows), max(ktKeep-len(f.rows), 0))
	f.rows = append(f.rows, rows[:n]...)
	f.lost += uint64(len(rows) - n)
}

type ktRow struct {
	collectives.Dispatch
	tag string
}

var ktFiles sync.Map // path -> *ktFile

// ktThread is one thread's part of kernel timing: where its records come from and its open window.
type ktThread struct {
	file     *ktFile
	drainer  collectives.DispatchDrainer // the library's records; else
	timer    collectives.EventTimer      // events around each dispatch
	ranks    []int
	hash     uint64   // the communicator's, the same in every process
	seq      []uint64 // per local rank: dispatches so far, timed or not
	anchorNs uint64
	anchor   collectives.Event
	units    []ktUnit
}

type ktUnit struct {
	pre, post collectives.Event
	call      *collectives.Call
	colls     uint32
	seq       []uint64
}

// startTracing readies rccl-tests' two ways of tracing on every thread: rocTX ranges around each timed loop
// where RCCL_TESTS_ROCTX is set and not 0 (and the rocTX library is found), and kernel timing.
func (s *Session) startTracing() {
	proc := s.commProcesses().Rank()
	var ranges *roctx.Ranges
	if v := s.Getenv(plan.EnvROCTX); v != "" && v != "0" {
		ranges = roctx.Load()
	}
	for _, t := range s.threads {
		t.proc, t.graph, t.ranges = proc, s.graph, ranges
	}
	s.startKernelTiming()
}

// startKernelTiming readies kernel timing on every thread when RCCL_TESTS_KERNEL_TIMING names a prefix. An
// engine that can time no dispatch (the host engine) gets one line on stderr, and the run goes on.
func (s *Session) startKernelTiming() {
	prefix := s.Getenv(plan.EnvKernelTiming)
	if prefix == "" {
		return
	}
	path := fmt.Sprintf("%s_pid%d.csv", prefix, os.Getpid())
	f, _ := ktFiles.LoadOrStore(path, &ktFile{path: path})
	h := fnv.New64a()
	fmt.Fprintf(h, "%d %s %d", s.nranks, s.devices[0].Hostname, s.devices[0].Pid)
	for _, t := range s.threads {
		k := &ktThread{file: f.(*ktFile), ranks: t.ranks, hash: h.Sum64(), seq: make([]uint64, len(t.ranks))}
		if d, ok := t.group.(collectives.DispatchDrainer); ok && d.KernelTiming() {
			k.drainer = d
			k.file.library = true
		} else if et, ok := t.group.(collectives.EventTimer); ok {
			k.timer = et
		} else {
			fmt.Fprintf(s.Stderr, "%s: %s set but engine %s launches no kernels to time: no kernel timing records\n",
				s.Binary, plan.EnvKernelTiming, s.eng.Name())
			return
		}
		t.kt = k
	}
}

// timesEvents reports whether dispatches are timed by events (not drained from the library, nor off).
func (k *ktThread) timesEvents() bool { return k != nil && k.timer != nil }

// open starts a window of dispatches timed by events; the group's streams must be idle (after Wait), so that
// the anchor event completes as soon as it is recorded.
func (k *ktThread) open() error {
	if k == nil || k.timer == nil {
		return nil
	}
	k.units = k.units[:0]
	k.anchorNs = bootNanos()
	var err error
	k.anchor, err = k.timer.Mark()
	return err
}

// around launches one dispatch, with events before and after it when they time it.
func (k *ktThread) around(c *collectives.Call, colls int, launch func() error) error {
	if k == nil || k.timer == nil { // off, or the library numbers its dispatches itself
		return launch()
	}
	seq := append([]uint64(nil), k.seq...)
	for l := range k.seq {
		k.seq[l]++
	}
	if len(k.units) >= ktWindow {
		k.file.mu.Lock()
		k.file.dropped++
		k.file.mu.Unlock()
		return launch()
	}
	pre, err := k.timer.Mark()
	if err != nil {
		return err
	}
	if err := launch(); err != nil {
		return err
	}
	post, err := k.timer.Mark()
	if err != nil {
		return err
	}
	k.units = append(k.units, ktUnit{pre: pre, post: post, call: c, colls: uint32(colls), seq: seq})
	return nil
}

// close ends a window after Wait: the library's records since the last drain, or the window's events, are
// kept with tag.
func (k *ktThread) close(tag string) error {
	if k == nil {
		return nil
	}
	var rows []ktRow
	if k.drainer != nil {
		recs, dropped, result, drains := k.drainer.DrainDispatches()
		for _, r := range recs {
			rows = append(rows, ktRow{r, tag})
		}
		k.file.mu.Lock()
		k.file.dropped, k.file.result = dropped, result
		k.file.drains += drains
		k.file.mu.Unlock()
	}
	for _, u := range k.units {
		from, err := k.timer.Elapsed(k.anchor, u.pre)
		if err != nil {
			return err
		}
		to, err := k.timer.Elapsed(k.anchor, u.post)
		if err != nil {
			return err
		}
		for l, r := range k.ranks {
			rows = append(rows, ktRow{collectives.Dispatch{Rank: r, Seq: u.seq[l], CommHash: k.hash,
				Count: uint64(u.call.Counts[l].Param), Func: ktFuncs[u.call.Coll.Base().Name],
				Datatype: uint32(u.call.DType), NColls: u.colls, Start: k.anchorNs + uint64(from[l].Nanoseconds()),
				End: k.anchorNs + uint64(to[l].Nanoseconds())}, tag})
		}
	}
	k.units = k.units[:0]
	k.file.keep(rows)
	return nil
}

// tag is rccl-tests' name of a half: kernel timing's Config and the rocTX range's message. size is the count
// argument's bytes, proc the process's rank among its communicator's processes.
func (t *thread) tag(p plan.Point, inPlace bool) string {
	count := t.counts(p, 0).Param
	op := p.Op
	if !t.coll.SweepsOps() {
		op = collectives.Sum
	}
	return fmt.Sprintf("rccl-tests timed_loop size=%d count=%d type=%d op=%d in_place=%d proc=%d thread=%d ngpus=%d graph=%d",
		count*int64(p.DType.Size()), count, int(p.DType), int(op), b2i(inPlace), t.proc, t.index, len(t.ranks), b2i(t.graph > 0))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// finishKernelTiming writes this process's records and says so on stderr, in rccl-tests' words.
func (s *Session) finishKernelTiming() {
	if len(s.threads) == 0 || s.threads[0].kt == nil {
		return
	}
	f := s.threads[0].kt.file
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.rows) == 0 {
		if f.library {
			fmt.Fprintf(s.Stderr, "rccl-tests: no kernel timing records after %d drain(s), result %d (is RCCL_KERNEL_TIMING=1 set, and did the library find an event layout?)\n",
				f.drains, f.result)
		}
		return
	}
	if err := writeKernelTiming(f.path, f.rows); err != nil {
		fmt.Fprintf(s.Stderr, "rccl-tests: cannot write %s: %v\n", f.path, err)
		return
	}
	fmt.Fprintf(s.Stderr, "rccl-tests: wrote %d kernel timing records to %s (%d dropped)\n", len(f.rows), f.path, f.dropped+f.lost)
}

// ktHeader is rccl-tests' header line of the file.
const ktHeader = `"Rank","Seq","Comm_Hash","Func","Datatype","Count","nChannels","nThreads","nColls","Start_Timestamp","End_Timestamp","Duration_ns","Config"`

func writeKernelTiming(path string, rows []ktRow) error {
	var b strings.Builder
	writeKTRows(&b, rows)
	a, err := results.ReplaceAside(path)
	if err != nil {
		return err
	}
	_, err = a.Commit([]byte(b.String()))
	return err
}

func writeKTRows(w io.Writer, rows []ktRow) {
	fmt.Fprintln(w, ktHeader)
	for _, r := range rows {
		fmt.Fprintf(w, "%d,%d,\"%x\",%d,%d,%d,%d,%d,%d,%d,%d,%d,\"%s\"\n", r.Rank, r.Seq, r.CommHash, r.Func, r.Datatype,
			r.Count, r.NChannels, r.NThreads, r.NColls, r.Start, r.End, r.End-r.Start, r.tag)
	}
}

// rangePush opens rccl-tests' rocTX range of a timed loop (RCCL_TESTS_ROCTX), rangePop closes it after the
// loop's completion, before the clock is read, as rccl-tests places them.
func (t *thread) rangePush(tag string) {
	if t.ranges != nil {
		t.ranges.Push(tag)
	}
}

func (t *thread) rangePop() {
	if t.ranges != nil {
		t.ranges.Pop()
	}
}
