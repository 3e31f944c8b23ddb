package harness

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/engines"
	"github.com/rcclx-tests/rcclx-tests/internal/syncbuf"
	"github.com/rcclx-tests/rcclx-tests/results"
)

// fakeEngine is a reference engine for the harness's own tests: ranks are host buffers and every call writes
// the exact expected output (collectives.Expect with the seed the test passes on the command line). Knobs plant
// the failures the harness must report.
type fakeEngine struct {
	name         string
	seed         uint64
	corruptRank  int   // -1: none; this rank's output gets one byte flipped after each call
	timeoutRank  int   // -1: none; Wait on this rank's group times out after cfg.Timeout
	free         int64 // > 0: groups report this much free memory per rank (MemoryReporter)
	failAlloc    bool
	unsupported  map[collectives.DType]bool
	events       bool // groups are EventTimers
	drains       bool // groups are DispatchDrainers: each drain returns a record per launch since the last
	drainResult  int  // with drains: the library's status (non-zero: no records, as RCCL without RCCL_KERNEL_TIMING)
	graphs       bool // groups are Graphers
	loops        bool // groups are LoopLaunchers
	paced        bool // groups are Paced (as the host engine's)
	wakers       bool // groups are Wakers
	noInPlaceA2A bool // groups are InPlaceLimiters without in-place alltoall, as NCCL
	// prepare: communicators are Preparers that record each call, print prepareNote (when not empty) and
	// return prepareErr.
	prepare     bool
	prepareNote string
	prepareErr  error
	// splitAt > 0: rows at or below this size column use algorithm "small", above it "large".
	splitAt int64
	// waitDelay: every Wait takes this long, as a device still busy after the launches returned.
	waitDelay time.Duration
	// onLaunch, when set, sees every call before it runs.
	onLaunch func(c *collectives.Call)
	// stuck: Wait blocks until the communicator is cancelled (collectives.Canceler) and returns the cause, or
	// with ignoreCancel until release is closed. prepareBlock: Prepare (with prepare) blocks until it is closed.
	stuck, ignoreCancel   bool
	release, prepareBlock chan struct{}
	cancel                chan struct{} // closed by Cancel, after cancelErr is set
	cancelErr             error

	mu       sync.Mutex
	launches int
	trace    []byte   // L per launch, W per wait, K per wake, in order
	loopArgs [][3]int // first, iters and agg of each PrepareLoop
	prepared []prepareCall
	cfg      collectives.Config
}

func newFake(seed uint64) *fakeEngine {
	return &fakeEngine{name: "fake", seed: seed, corruptRank: -1, timeoutRank: -1, cancel: make(chan struct{})}
}

func (e *fakeEngine) Name() string { return e.name }

func (e *fakeEngine) Open(cfg collectives.Config) (collectives.Comm, error) {
	e.cfg = cfg
	c := &fakeComm{e: e, nranks: cfg.World.Size() * cfg.NThreads * cfg.NGpus, want: map[wantKey][]byte{}}
	first := cfg.World.Rank() * cfg.NThreads * cfg.NGpus
	for t := range cfg.NThreads {
		g := &fakeGroup{c: c}
		for l := range cfg.NGpus {
			g.ranks = append(g.ranks, first+t*cfg.NGpus+l)
		}
		c.groups = append(c.groups, e.wrap(g))
	}
	if e.prepare {
		return preparingComm{c}, nil
	}
	return c, nil
}

// prepareCall is one Prepare: its arguments and the launches made before it.
type prepareCall struct {
	coll     *collectives.Collective
	dtypes   []collectives.DType
	ops      []collectives.Op
	launches int
}

type preparingComm struct{ *fakeComm }

func (c preparingComm) Prepare(coll *collectives.Collective, dtypes []collectives.DType, ops []collectives.Op,
	note func(string)) error {
	e := c.e
	e.mu.Lock()
	e.prepared = append(e.prepared, prepareCall{coll, dtypes, ops, e.launches})
	e.mu.Unlock()
	if e.prepareNote != "" {
		note(e.prepareNote)
	}
	if e.prepareBlock != nil {
		<-e.prepareBlock
	}
	return e.prepareErr
}

// wrap gives a group the capabilities the knobs ask for.
func (e *fakeEngine) wrap(g *fakeGroup) collectives.Group {
	switch {
	case e.free > 0:
		return memGroup{g}
	case e.events:
		return eventGroup{g}
	case e.drains:
		return &drainGroup{fakeGroup: g}
	case e.graphs:
		return graphGroup{g}
	case e.loops:
		return loopGroup{g}
	case e.paced:
		return pacedGroup{g}
	case e.wakers:
		return wakerGroup{g}
	case e.noInPlaceA2A:
		return ncclLikeGroup{g}
	}
	return g
}

type wantKey struct {
	dt        collectives.DType
	op        collectives.Op
	rank      int
	recv, par int64
}

type fakeComm struct {
	e      *fakeEngine
	nranks int
	groups []collectives.Group
	mu     sync.Mutex
	want   map[wantKey][]byte
}

func (c *fakeComm) NRanks() int                 { return c.nranks }
func (c *fakeComm) Groups() []collectives.Group { return c.groups }
func (c *fakeComm) Library() string             { return "fake-library=1" }
func (c *fakeComm) Version() int                { return 7 }
func (c *fakeComm) Close() error                { return nil }

// Cancel is collectives.Canceler: a stuck Wait returns err.
func (c *fakeComm) Cancel(err error) {
	e := c.e
	e.mu.Lock()
	defer e.mu.Unlock()
	select {
	case <-e.cancel:
	default:
		e.cancelErr = err
		close(e.cancel)
	}
}

func (c *fakeComm) Devices() []collectives.Device {
	var out []collectives.Device
	for t, g := range c.groups {
		for _, r := range g.Ranks() {
			out = append(out, collectives.Device{Rank: r, Group: t, Pid: os.Getpid(), Hostname: "fake", Index: r,
				BusID: fmt.Sprintf("0000:00:%02x", r), Name: "Fake Device"})
		}
	}
	return out
}

// expected is the exact output of rank for a call, cached.
func (c *fakeComm) expected(call *collectives.Call, rank int, k collectives.Counts) []byte {
	key := wantKey{call.DType, call.Op, rank, k.Recv, k.Param}
	c.mu.Lock()
	defer c.mu.Unlock()
	if w, ok := c.want[key]; ok {
		return w
	}
	w := call.Coll.Expect(call.DType, call.Op, rank, call.Root, c.nranks, k, c.e.seed, collectives.Tolerance{}).Want()
	c.want[key] = w
	return w
}

type fakeBuffer struct{ b []byte }

func (b *fakeBuffer) Len() int64 { return int64(len(b.b)) }

func span(v collectives.View, n int64) ([]byte, error) {
	b := v.Buf.(*fakeBuffer).b
	if v.Off < 0 || v.Off+n > int64(len(b)) {
		return nil, fmt.Errorf("view [%d, %d) outside a buffer of %d bytes", v.Off, v.Off+n, len(b))
	}
	return b[v.Off : v.Off+n], nil
}

type fakeGroup struct {
	c     *fakeComm
	ranks []int
}

func (g *fakeGroup) Ranks() []int { return g.ranks }

func (g *fakeGroup) Alloc(local int, n int64) (collectives.Buffer, error) {
	if g.c.e.failAlloc && local == len(g.ranks)-1 {
		return nil, &collectives.RuntimeError{Err: fmt.Errorf("out of fake memory")}
	}
	return &fakeBuffer{make([]byte, n)}, nil
}

func (g *fakeGroup) Free(collectives.Buffer) error { return nil }

func (g *fakeGroup) Write(dst collectives.View, src []byte) error {
	b, err := span(dst, int64(len(src)))
	if err == nil {
		copy(b, src)
	}
	return err
}

func (g *fakeGroup) Read(dst []byte, src collectives.View) error {
	b, err := span(src, int64(len(dst)))
	if err == nil {
		copy(dst, b)
	}
	return err
}

func (g *fakeGroup) Algorithm(c *collectives.Call) string {
	split := g.c.e.splitAt
	if v, ok := g.c.e.cfg.Env["FAKE_ALGO"]; ok {
		return v
	}
	if split > 0 {
		if c.Coll.Bytes(c.Counts[0], c.DType) <= split {
			return "small"
		}
		return "large"
	}
	return "ring"
}

func (g *fakeGroup) Launch(c *collectives.Call) error {
	e := g.c.e
	if e.unsupported[c.DType] {
		return collectives.ErrUnsupported
	}
	if e.onLaunch != nil {
		e.onLaunch(c)
	}
	es := int64(c.DType.Size())
	for l, r := range g.ranks {
		k := c.Counts[l]
		if _, err := span(c.Send[l], k.Send*es); err != nil {
			return fmt.Errorf("rank %d send: %w", r, err)
		}
		out, err := span(c.Recv[l], k.Recv*es)
		if err != nil {
			return fmt.Errorf("rank %d recv: %w", r, err)
		}
		copy(out, g.c.expected(c, r, k))
		if r == e.corruptRank && len(out) > 0 {
			out[0] ^= 0x40
		}
	}
	e.mu.Lock()
	e.launches++
	e.trace = append(e.trace, 'L')
	e.mu.Unlock()
	return nil
}

func (g *fakeGroup) Wait() error {
	e := g.c.e
	e.mu.Lock()
	e.trace = append(e.trace, 'W')
	e.mu.Unlock()
	if e.stuck {
		cancel := e.cancel
		if e.ignoreCancel {
			cancel = nil
		}
		select {
		case <-cancel:
			return e.cancelErr
		case <-e.release:
			return nil
		}
	}
	time.Sleep(e.waitDelay)
	for _, r := range g.ranks {
		if r == e.timeoutRank {
			time.Sleep(e.cfg.Timeout)
			return &collectives.TimeoutError{Rank: r, Phase: "fake step 1", After: e.cfg.Timeout}
		}
	}
	return nil
}

type memGroup struct{ *fakeGroup }

func (g memGroup) FreeMemory(int) (int64, error) { return g.c.e.free, nil }

type eventGroup struct{ *fakeGroup }

func (g eventGroup) Mark() (collectives.Event, error) { return time.Now(), nil }
func (g eventGroup) Elapsed(from, to collectives.Event) ([]time.Duration, error) {
	d := to.(time.Time).Sub(from.(time.Time))
	out := make([]time.Duration, len(g.Ranks()))
	for i := range out {
		out[i] = d
	}
	return out, nil
}

// drainGroup stands in for a library with RCCL's kernel timing: a drain returns one record per local rank
// for each launch since the last drain, numbered by launch.
type drainGroup struct {
	*fakeGroup
	drained int
}

func (g *drainGroup) KernelTiming() bool { return true }
func (g *drainGroup) DrainDispatches() ([]collectives.Dispatch, uint64, int, int) {
	e := g.c.e
	if e.drainResult != 0 {
		return nil, 0, e.drainResult, 1
	}
	e.mu.Lock()
	launches := e.launches
	e.mu.Unlock()
	var out []collectives.Dispatch
	for ; g.drained < launches; g.drained++ {
		for _, r := range g.ranks {
			out = append(out, collectives.Dispatch{Rank: r, Seq: uint64(g.drained), CommHash: 0xfeed, Func: 4,
				Datatype: 7, NChannels: 8, NThreads: 256, NColls: 1, Start: 1000, End: 1500})
		}
	}
	return out, 3, 0, 1
}

type graphGroup struct{ *fakeGroup }

type ncclLikeGroup struct{ *fakeGroup }

type loopGroup struct{ *fakeGroup }

type pacedGroup struct{ *fakeGroup }

func (pacedGroup) Paced() {}

type wakerGroup struct{ *fakeGroup }

func (g wakerGroup) Wake() {
	e := g.c.e
	e.mu.Lock()
	e.trace = append(e.trace, 'K')
	e.mu.Unlock()
}

func (g loopGroup) PrepareLoop(calls []*collectives.Call, first, iters, agg int) (func() error, error) {
	e := g.c.e
	e.mu.Lock()
	e.loopArgs = append(e.loopArgs, [3]int{first, iters, agg})
	e.mu.Unlock()
	return func() error { return collectives.LaunchEach(g, calls, first, iters*agg) }, nil
}

func (g ncclLikeGroup) NoInPlace(c *collectives.Collective) bool { return c == collectives.AllToAll }

// fakeGraph replays the captured launches.
type fakeGraph struct{ record func() error }

func (g graphGroup) Capture(record func() error) (collectives.Graph, error) {
	return fakeGraph{record}, nil
}
func (g fakeGraph) Launch() error  { return g.record() }
func (g fakeGraph) Destroy() error { return nil }

// run is the outcome of one invocation.
type run struct {
	code           int
	stdout, stderr string
}

// testRun runs a perf binary's harness with the given engines (the first is also "auto").
func testRun(t *testing.T, coll *collectives.Collective, args []string, engs ...collectives.Engine) run {
	t.Helper()
	// A/B workers are this test binary, running a fake engine of their own (see childMain).
	return runWith(t, coll, args, fakeSource(engs...), func(a *app) { a.workerEnv = append(a.workerEnv, childFaultEnv+"=none") })
}

// fakeSource offers the engines engs by name, the first also as "auto".
func fakeSource(engs ...collectives.Engine) engineSource {
	return engineSource{
		names: func() []string {
			out := []string{engines.Auto}
			for _, e := range engs {
				out = append(out, e.Name())
			}
			return out
		},
		open: func(name string) (collectives.Engine, error) {
			for _, e := range engs {
				if name == e.Name() || name == engines.Auto {
					return e, nil
				}
			}
			return nil, fmt.Errorf("no engine %q", name)
		},
	}
}

// runWith runs with the engines of src; tweak, when not nil, adjusts the app (environment, world, signals).
func runWith(t *testing.T, coll *collectives.Collective, args []string, src engineSource, tweak func(*app)) run {
	t.Helper()
	var out, errOut syncbuf.Buffer // A/B workers' output is copied into them from goroutines of their own
	a := &app{coll: coll, stdout: &out, stderr: &errOut, getenv: func(string) string { return "" },
		environ: func() []string { return []string{"NCCL_PROTO=Simple", "HOME=/root"} }, engines: src,
		argv: append([]string{coll.Name + "_perf"}, args...), interrupted: func() bool { return false },
		now: time.Now, world: openWorld, workerEnv: []string{childEnv + "=" + coll.Name}}
	if tweak != nil {
		tweak(a)
	}
	code := a.main(args)
	return run{code: code, stdout: out.String(), stderr: errOut.String()}
}

// tableRows returns the table rows of an output (lines that start with a number).
func tableRows(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(out, "\n") {
		f := results.RowFields(line)
		if len(f) == 0 || strings.HasPrefix(line, "#") {
			continue
		}
		if _, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			rows = append(rows, f)
		}
	}
	return rows
}

// seedArgs pins the seed the fake engine computes its outputs with.
func seedArgs(seed uint64, args ...string) []string {
	return append([]string{"--seed", strconv.FormatUint(seed, 10)}, args...)
}
