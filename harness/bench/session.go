// Package bench is one engine's run of a perf binary: it opens the engine, its threads and their buffers, fits
// the sweep to the memory, and times and validates every row, printing the table through package report. The
// root package runs one Session per engine of --engine; an A/B worker runs one for its arm and answers its
// launcher's commands with Ready, Half and Memory.
package bench

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/engines"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/harness/report"
	"github.com/rcclx-tests/rcclx-tests/harness/world"
)

// Env is what a session takes from the process that runs it.
type Env struct {
	Coll           *collectives.Collective
	Stdout, Stderr io.Writer
	Getenv         func(string) string // the process environment (never nil)
	// Open creates the engine an --engine name names; Choose is --engine auto for the library --lib names: the
	// engine, and the stderr line saying why it is not the library where it is not (nil: Open("auto"), silently).
	Open        func(name string) (collectives.Engine, error)
	Choose      func(lib string) (collectives.Engine, string, error)
	Interrupted func() bool // SIGINT/SIGTERM received: stop between iterations
	// StopNow is closed when a thread stuck in the engine is to be abandoned, Signalled at the first signal:
	// set-up work is left unfinished at once (nil: never).
	StopNow, Signalled <-chan struct{}
	Now                func() time.Time
	StderrTTY          bool         // stderr is a terminal: show the progress line
	Lost               *world.Watch // nil in a run of one process
	Binary, Program    string       // the binary's name, and as error lines name it
	MinBW              float64      // NCCL_TESTS_MIN_BW, or -1
	// ArmVariable is, in an A/B worker, the name of the variable its arm sets (empty elsewhere).
	ArmVariable string
	// Fail reports an error that ends the run, at the row of the size column at (-1: none), and returns the
	// exit code.
	Fail func(err error, at int64) int
}

// Params is what one engine's run does.
type Params struct {
	Options   *plan.Options
	World     collectives.World // every process of the run
	Split     *plan.Split       // NCCL_TESTS_SPLIT's, when it divides the processes
	CommWorld collectives.World // the processes of this process's communicator (nil: every process)
	Seed      uint64
	Out       io.Writer
	Engine    string // as --engine spells it (may be "auto")
	Multi     bool   // one of several engines
}

// New is the run of one engine, not yet started.
func New(e Env, p Params) *Session {
	return &Session{Env: e, o: p.Options, world: p.World, split: p.Split, commWorld: p.CommWorld, seed: p.Seed,
		out: p.Out, engineName: p.Engine, multi: p.Multi}
}

// Session is the run of one engine: its communicator, threads and buffers, the sweep and its report.
type Session struct {
	Env
	o          *plan.Options
	world      collectives.World // every process of the run: the harness's barriers and gathers
	split      *plan.Split       // NCCL_TESTS_SPLIT's, when it divides the processes
	commWorld  collectives.World // the processes of this process's communicator (nil: every process)
	seed       uint64
	out        io.Writer
	engineName string // as --engine spells it (may be "auto")
	autoNote   string // auto: why it did not pick the library (empty where it did)
	multi      bool   // one of several engines: a "# Engine:" line precedes the whole table instead

	eng      collectives.Engine
	comm     collectives.Comm
	team     *team
	threads  []*thread
	nranks   int
	devices  []collectives.Device // every process's, in rank order
	minBytes int64                // -b and -e after the memory limit
	maxBytes int64
	reduced  int64 // maxBytes after the memory limit, 0 when it fits
	poison   []byte
	graph    int // -G as it applies to this engine
	notes    []string
	perIter  string    // -I: nccl-tests' "Per-Iteration Report" line
	freeMem  [][]int64 // -M: free memory per local rank after Open, after allocation, after the sweep

	rows    []report.Row
	oob     int
	bwSum   float64
	bwN     int
	at      int64 // size column of the row being run, for error messages
	stopped bool  // interrupted (SIGINT/SIGTERM)
	prog    *report.Progress
	err     error // what ended the run early
}

// Run opens the engine, sweeps and reports; it returns the exit code. From the start to the sweep's last row
// the run is busy: a loss of another process then cancels the engine and may end this process (world.Watch).
func (s *Session) Run() int {
	s.Lost.SetBusy(true)
	if err := s.Start(); err != nil {
		s.Lost.SetBusy(false)
		if errors.Is(err, exit.ErrInterrupted) { // before the header: nothing to sum up
			s.err, s.stopped = nil, true
			return exit.Interrupted
		}
		return s.Fail(err, -1)
	}
	defer s.Close()
	report.WriteHeader(s.out, s.o, s.header())
	if s.o.SkipRanks > 0 {
		s.Lost.SetBusy(false)
		return s.skip()
	}
	if err := s.Alloc(); err != nil {
		s.Lost.SetBusy(false)
		if errors.Is(err, exit.ErrInterrupted) {
			return s.abort(err)
		}
		s.err = err
		return s.Fail(err, -1)
	}
	s.startTracing()
	defer s.finishKernelTiming()
	nc, ncOut := s.startNetCounters()
	err := s.sweep()
	s.Lost.SetBusy(false)
	if err != nil {
		return s.abort(err)
	}
	nc.Finish(ncOut)
	return s.finish(s.trailer())
}

// skip is rccl-tests' hypercube on a rank count that is not a power of two: each thread of each process says so
// on its standard output, and the trailer follows an empty table (its average bus bandwidth 0/0).
func (s *Session) skip() int {
	out := s.out
	if s.world.Rank() != 0 {
		out = s.Stdout
	}
	for range s.o.NThreads {
		fmt.Fprintf(out, "nRanks %d is not a power of 2, skipping\n", s.o.SkipRanks)
	}
	t := s.trailer()
	t.Skipped = true
	return s.finish(t)
}

// startNetCounters starts rccl-tests' NIC counters (its dialect only) on the first process of each node, which
// prints them, as rccl-tests' node leads do.
func (s *Session) startNetCounters() (*report.NetCounters, io.Writer) {
	ranks := s.localRanks()
	if !s.o.RCCLDialect || len(ranks) == 0 {
		return nil, nil
	}
	host := ""
	for _, d := range s.devices {
		if d.Rank == ranks[0] {
			host = d.Hostname
		}
	}
	for _, d := range s.devices {
		if d.Rank < ranks[0] && d.Hostname == host {
			return nil, nil
		}
	}
	out := s.out
	if s.world.Rank() != 0 {
		out = s.Stdout
	}
	return report.StartNetCounters(s.Getenv, out, s.Stderr, ranks[0]), out
}

// setAt records the size column of the row in progress, which error lines name.
func (s *Session) setAt(size int64) {
	s.at = size
	s.Lost.SetAt(size)
}

// Start opens the engine and plans the run (devices, memory, the header's notes), allocating nothing large;
// after an error there is nothing to close. alloc then allocates, once the header is out.
func (s *Session) Start() error {
	if err := s.open(); err != nil {
		s.err = err
		return err
	}
	if err := s.prepare(); err != nil {
		s.err = err
		s.Close()
		return err
	}
	return nil
}

// Alloc allocates every buffer after the header is printed: a large run says what it is before it takes time
// (or memory) to set up. After an error, close frees what was allocated.
func (s *Session) Alloc() error {
	bufBytes := s.bufferBytes()
	if err := s.snapshotMemory(); err != nil {
		return err
	}
	if err := s.team.each(func(t int) error { return s.threads[t].alloc() }); err != nil {
		return err
	}
	var err error
	if s.poison, err = poisonBuffer(bufBytes, s.Lost, s.Signalled); err != nil {
		return err
	}
	if err := s.team.each(func(t int) error { return s.threads[t].touch(s.poison, s.Signalled) }); err != nil {
		return err
	}
	if s.o.Check > 0 {
		for _, t := range s.threads {
			for range min(len(t.ranks), 2) {
				t.scratch = append(t.scratch, make([]byte, bufBytes))
			}
		}
	}
	if err := s.snapshotMemory(); err != nil {
		return err
	}
	s.team.stopNow = s.StopNow
	return nil
}

// abort reports an error that stopped the sweep, naming the row for a timeout, and returns the exit code. An
// interrupted sweep is no error: it ends as a stopped run, with the trailer.
func (s *Session) abort(err error) int {
	if errors.Is(err, exit.ErrInterrupted) {
		s.stopped = true
		return s.finish(s.trailer())
	}
	s.err = err
	return s.Fail(err, s.at)
}

// finish prints the trailer and returns the exit code it implies.
func (s *Session) finish(t report.Trailer) int { return Finish(s.out, t, s.stopped) }

// Finish prints a trailer and returns the exit code it implies: Interrupted for a stopped run, TestFailed for
// wrong results or a bus bandwidth under NCCL_TESTS_MIN_BW.
func Finish(out io.Writer, t report.Trailer, stopped bool) int {
	report.WriteTrailer(out, t)
	switch {
	case stopped:
		return exit.Interrupted
	case t.OOB > 0 || !t.BandwidthOK():
		return exit.TestFailed
	}
	return exit.OK
}

// open creates the engine, the threads and the communicator (on thread 0, which drives group 0).
func (s *Session) open() error {
	eng, err := s.openEngine()
	if err != nil {
		return err
	}
	// "auto" has already probed the engine it chose; a named engine says what is missing when it opens.
	s.eng = eng
	o := s.o
	cfg := collectives.Config{NThreads: o.NThreads, NGpus: o.NGpus, World: s.commProcesses(), Env: o.CommEnv,
		Timeout: o.Timeout(), StreamNull: o.StreamNull == 1, Register: o.Register > 0,
		ParallelInit: o.ParallelInit == 1, Oversubscribe: o.Oversubscribe, Library: o.Library,
		Memory: o.RCCL.MemoryKind(), CTAPolicy: o.RCCL.CTAPolicy}
	cfg.FirstDevice, cfg.PinDevices, _ = plan.FirstDevice(s.Getenv) // checked before the run
	s.splitDevices(&cfg)
	s.team = newTeam(o.NThreads, s.world)
	s.team.lost = s.Lost
	comm, err := s.openComm(cfg)
	if err != nil {
		s.team.close()
		return err
	}
	s.comm = comm
	s.Lost.Track(comm)
	if err := s.useFP8Flavour(); err != nil {
		s.Lost.Untrack(comm)
		_ = comm.Close()
		s.team.close()
		return err
	}
	if err := s.attach(); err != nil {
		s.Lost.Untrack(comm)
		_ = comm.Close()
		s.team.close()
		return err
	}
	return nil
}

// commProcesses are the processes of this process's communicator (every process, without a split).
func (s *Session) commProcesses() collectives.World {
	if s.commWorld == nil {
		return s.world
	}
	return s.commWorld
}

// useFP8Flavour sets the flavour FP8 data is generated and checked in, before any is: the devices'. Where the
// sweep has an FP8 type, every process must have the same, or their ranks would disagree about every element.
func (s *Session) useFP8Flavour() error {
	f := collectives.FP8FlavourOf(s.comm)
	collectives.UseFP8Flavour(f)
	if !slices.ContainsFunc(s.o.DTypes, collectives.DType.FP8) {
		return nil
	}
	all, err := collectives.Exchange(s.world, "the FP8 flavours", f)
	if err != nil {
		return err
	}
	for p, g := range all {
		if g != f {
			return fmt.Errorf("process %d's devices compute FP8 in %s, this process's in %s: FP8 data cannot be checked "+
				"across them (run -d without f8e4m3 and f8e5m2, or the processes in runs of their own)", p, g, f)
		}
	}
	return nil
}

// openEngine creates the engine of --engine; for auto, rank 0 says on stderr why it is not the library where
// it is not (an A/B worker leaves that to its launcher, through ready).
func (s *Session) openEngine() (collectives.Engine, error) {
	if s.engineName != engines.Auto || s.Choose == nil {
		return s.Open(s.engineName)
	}
	eng, note, err := s.Choose(s.o.Library)
	s.autoNote = note
	if note != "" && s.ArmVariable == "" && (s.world == nil || s.world.Rank() == 0) {
		fmt.Fprintf(s.Stderr, "%s: --engine auto: %s\n", s.Binary, note)
	}
	return eng, err
}

// splitDevices places the ranks of a split run as nccl-tests does: by the process's local rank among every
// process of its host, not among its communicator's alone (two communicators would share the first devices).
func (s *Session) splitDevices(cfg *collectives.Config) {
	l, ok := s.world.(interface{ LocalRank() int })
	if s.split == nil || cfg.PinDevices || !ok || l.LocalRank() < 0 {
		return
	}
	cfg.PinDevices, cfg.FirstDevice = true, l.LocalRank()*cfg.NThreads*cfg.NGpus
}

func (s *Session) openComm(cfg collectives.Config) (collectives.Comm, error) {
	var comm collectives.Comm
	err := s.team.each(func(t int) error {
		if t != 0 {
			return nil
		}
		var err error
		comm, err = s.eng.Open(cfg)
		return err
	})
	return comm, err
}

// attach binds each thread to its group.
func (s *Session) attach() error {
	groups := s.comm.Groups()
	if len(groups) != s.o.NThreads {
		return fmt.Errorf("engine %s returned %d groups for %d threads", s.eng.Name(), len(groups), s.o.NThreads)
	}
	s.nranks = s.comm.NRanks()
	s.threads = make([]*thread, len(groups))
	for i, g := range groups {
		s.threads[i] = &thread{coll: s.Coll, group: g, nranks: s.nranks, opts: s.o, index: i}
	}
	return s.team.each(func(t int) error {
		s.threads[t].ranks = s.threads[t].group.Ranks()
		return nil
	})
}

// Close frees the buffers and the communicator; a broken team (a thread stuck in the engine) is left alone, and
// so is everything once the run is lost (another process died): the process exits next, and its exit releases
// every buffer and mapping at once, faster than freeing them one by one first (0.5-0.8 s of 2 s at 1 GiB with 3
// processes on 2 cores).
func (s *Session) Close() {
	s.team.stopNow = nil // freeing waits for its threads
	s.Lost.Untrack(s.comm)
	if !s.team.broken && s.Lost.Err() == nil {
		_ = s.team.each(func(t int) error { return s.threads[t].free() })
		if err := s.comm.Close(); err != nil && s.err == nil {
			fmt.Fprintf(s.Stderr, "%s: closing engine %s: %v\n", s.Binary, s.eng.Name(), err)
		}
	}
	s.team.close()
}

// localRanks lists this process's ranks, in thread order.
func (s *Session) localRanks() []int {
	var out []int
	for _, t := range s.threads {
		out = append(out, t.ranks...)
	}
	return out
}

// prepare gathers the devices, fits -e to the memory and works out the header's notes.
func (s *Session) prepare() error {
	s.setDialect()
	var err error
	if s.devices, err = world.Devices(s.world, s.comm.Devices()); err != nil {
		return err
	}
	if s.split != nil { // nccl-tests numbers the ranks over every process and shows each one's colour as Group
		nlocal := s.o.NThreads * s.o.NGpus
		for i := range s.devices {
			s.devices[i].Rank, s.devices[i].Group = i, int(s.split.Color(i/nlocal))
		}
	}
	if err := s.fitMemory(); err != nil {
		return err
	}
	if err := s.prepareEngine(); err != nil {
		return err
	}
	bufBytes := s.bufferBytes()
	for _, t := range s.threads {
		t.bufBytes = bufBytes // the notes' calls rotate through the buffers as the timed loop will
	}
	return s.makeNotes()
}

// prepareEngine lets an engine do its first-use work for every type and operation of the sweep at once
// (the GPU engine compiles its kernels), so that none of it falls into a measurement; rank 0 prints its line.
// A signal stops the wait for it.
func (s *Session) prepareEngine() error {
	p, ok := s.comm.(collectives.Preparer)
	if !ok {
		return nil
	}
	note := func(line string) {
		if s.world.Rank() == 0 {
			fmt.Fprintf(s.Stderr, "%s: %s\n", s.Binary, line)
		}
	}
	done := make(chan error, 1)
	go func() { done <- p.Prepare(s.Coll, s.o.DTypes, s.ops(), note) }()
	select {
	case err := <-done:
		return err
	case <-s.Signalled: // a first compilation can take many seconds
		s.team.broken = true // the engine is busy: close leaves it to the process's exit
		return exit.ErrInterrupted
	}
}

// bufferBytes is the size of every rank's send and receive buffer: the largest view any type needs at -e,
// plus the -u shift.
func (s *Session) bufferBytes() int64 {
	var need int64
	for _, dt := range s.o.DTypes {
		es := int64(dt.Size())
		for _, r := range s.localRanks() {
			k := s.Coll.Counts(s.maxBytes, s.nranks, r, dt)
			need = max(need, max(k.Send, k.Recv)*es+int64(s.o.Unalign)*es)
		}
	}
	if s.o.RCCL.RotatingTensor == 1 {
		need += plan.RotatingBytes
	}
	return max(need, 64)
}

// header describes this session for the lines before the table.
func (s *Session) header() report.Header {
	return report.Header{Binary: s.Program, Library: s.comm.Library(), Engine: s.versionFields(), Graph: s.graph,
		PerIter: s.perIter, Notes: s.notes, Devices: s.devices, Reduced: s.reduced, Banner: s.libraryBanner()}
}

// trailer sums up the table.
func (s *Session) trailer() report.Trailer {
	t := report.Trailer{Binary: s.Program, OOB: s.oob, MinBW: s.MinBW, Memory: s.memoryLine()}
	if s.bwN > 0 {
		t.AvgBusBW = s.bwSum / float64(s.bwN)
	}
	return t
}

// Record is what the JSON keeps of the session.
func (s *Session) Record() report.EngineRun {
	e := report.EngineRun{Rows: s.rows, OOB: s.oob, BWSum: s.bwSum, BWN: s.bwN, Err: s.err, Stopped: s.stopped}
	if s.comm != nil {
		e.Opened, e.Engine, e.Library, e.Version = true, s.eng.Name(), s.comm.Library(), s.comm.Version()
		e.Graph, e.Devices = s.graph, s.devices
	}
	return e
}

// At is the size column of the row in progress, which error lines name.
func (s *Session) At() int64 { return s.at }

// Rows are the table's rows so far.
func (s *Session) Rows() []report.Row { return s.rows }

// EngineName is the name of the engine the session opened ("" before it opened one).
func (s *Session) EngineName() string {
	if s.eng == nil {
		return ""
	}
	return s.eng.Name()
}
