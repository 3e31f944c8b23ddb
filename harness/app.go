// Package harness is the nccl-tests-compatible driver shared by the four perf binaries: flags, the size sweep,
// timing, validation and the text and JSON reports. It drives any collectives.Engine and knows nothing of the
// devices behind it.
package harness

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/rcclx-tests/rcclx-tests/bootstrap"
	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/engines"
	"github.com/rcclx-tests/rcclx-tests/harness/bench"
	"github.com/rcclx-tests/rcclx-tests/harness/cli"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/harness/report"
	"github.com/rcclx-tests/rcclx-tests/harness/world"
	"github.com/rcclx-tests/rcclx-tests/internal/version"
)

// nativeLibraries tells --version where the native libraries' versions show: --version itself loads none.
const nativeLibraries = "none loaded by --version; a run loads its engine's libraries and names their versions " +
	"in its header (# rcclx-tests version ...) and JSON (library, nccl_version); rcclx-doctor lists what this " +
	"machine has"

// openWorld returns the processes of this run: one, or those an mpirun, srun or torchrun launch started
// (the bootstrap package detects the launcher and meets the others at a rendezvous). Once stop is closed,
// every wait on the others ends (bootstrap.ErrInterrupted).
var openWorld = func(timeout time.Duration, stop <-chan struct{}) (collectives.World, error) {
	return bootstrap.FromEnv(timeout, bootstrap.StopOn(stop))
}

// engineSource names and creates engines; the mains use the engines package, tests their own.
type engineSource struct {
	names func() []string
	open  func(name string) (collectives.Engine, error)
	// readers lists the engines an --engine name may create, when all of them read only registered variables
	// (nil: unknown, no name is refused).
	readers func(name string) ([]string, bool)
	// choose is --engine auto for the library --lib names: the engine, and the stderr line saying why it is not
	// the library where it is not (nil: open("auto"), silently).
	choose func(lib string) (collectives.Engine, string, error)
}

// app is one invocation of a perf binary.
type app struct {
	coll           *collectives.Collective
	stdout, stderr io.Writer
	getenv         func(string) string
	environ        func() []string
	engines        engineSource
	argv           []string    // the whole command line, for JSON
	interrupted    func() bool // SIGINT/SIGTERM received: stop between iterations
	// stopNow is closed stopGrace after the first signal if the run has not ended: a thread stuck in the
	// engine is then abandoned, and the run reports what it has (nil: never).
	stopNow <-chan struct{}
	// signalled is closed at the first signal: the harness's own set-up work (touching buffers, generating
	// inputs) is left unfinished at once (nil: never).
	signalled <-chan struct{}
	outputs   report.Outputs // the result files, which a second signal must not leave half-written
	now       func() time.Time
	world     func(timeout time.Duration, stop <-chan struct{}) (collectives.World, error)
	stderrTTY bool     // stderr is a terminal: show the progress line
	workerEnv []string // variables added to A/B workers' environments (tests re-execute their own binary)
	runWorld  collectives.World
	lost      *world.Watch // nil in a run of one process (world.Watch)
	exit      func(int)    // ends the process where the run cannot end itself (nil: never; tests)
}

// stopGrace is how long the first SIGINT or SIGTERM lets a measurement end by itself before the run stops
// waiting for threads stuck in the engine and prints its trailer and JSON.
var stopGrace = time.Second

// stopSignals end a run as Ctrl-C does: SIGINT, SIGTERM, SIGHUP (a closed terminal, a dropped ssh
// connection) and SIGPIPE when standard output has no reader any more (`| head -1`).
var stopSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE}

// Main runs the perf binary of coll with the command-line arguments args and returns its exit code: 130 after
// SIGINT, 143 after SIGTERM, 129 after SIGHUP and 141 after a closed standard output, as a shell reports a
// process killed by them.
func Main(coll *collectives.Collective, args []string) int {
	a := &app{coll: coll, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, environ: os.Environ,
		engines: engineSource{names: engines.Names, open: engines.New, readers: engines.Readers,
			choose: engines.Choose},
		argv: append([]string{os.Args[0]}, args...), now: time.Now, world: openWorld, stderrTTY: isTerminal(os.Stderr),
		exit: os.Exit}
	if os.Getenv(abWorkerEnv) != "" {
		// An A/B worker ends when its launching process says so (a Ctrl-C at a terminal reaches both).
		signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		a.interrupted = func() bool { return false }
		return a.main(args)
	}
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, stopSignals...)
	defer signal.Stop(sig)
	first := a.handleSignals(sig, os.Exit, stdoutClosed)
	code := a.main(args)
	if s := first.Load(); code == exit.Interrupted && s != nil {
		code = signalExit(*s)
	}
	return code
}

// handleSignals watches sig: the first signal stops the run between iterations (interrupted) and its set-up
// at once (signalled), and stopNow closes stopGrace later; a second signal calls exit at once, once a result
// file being written is complete (outputs). A SIGPIPE counts only when standard output has lost its reader
// (pipeClosed), and only once: every later write to it raises another. It returns where the first signal is
// recorded.
func (a *app) handleSignals(sig <-chan os.Signal, exit func(int), pipeClosed func() bool) *atomic.Pointer[os.Signal] {
	var first atomic.Pointer[os.Signal]
	stopNow, signalled := make(chan struct{}), make(chan struct{})
	a.interrupted = func() bool { return first.Load() != nil }
	a.stopNow, a.signalled = stopNow, signalled
	next := func() os.Signal {
		for s := range sig {
			if s != syscall.SIGPIPE || (first.Load() == nil && pipeClosed()) {
				return s
			}
		}
		return nil
	}
	go func() {
		s := next()
		first.Store(&s)
		close(signalled)
		if s == syscall.SIGPIPE {
			fmt.Fprintf(a.stderr, "%s: standard output closed: stopping after the current iteration\n", a.binary())
		} else {
			fmt.Fprintf(a.stderr, "%s: interrupted: stopping after the current iteration (interrupt again to exit now)\n",
				a.binary())
		}
		time.AfterFunc(stopGrace, func() { close(stopNow) })
		s = next()
		fmt.Fprintf(a.stderr, "%s: interrupted again: exiting now\n", a.binary())
		a.outputs.Abandon()
		exit(signalExit(s))
	}()
	return &first
}

// signalExit is the exit code of a run stopped by s: 128 + the signal's number (SIGINT 130, SIGTERM 143,
// SIGHUP 129, SIGPIPE 141).
func signalExit(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return exit.Interrupted
}

func (a *app) binary() string { return a.coll.Name + "_perf" }

// programName is what the header and trailer call the program: the file name it was started as, as
// nccl-tests prints it (a renamed or linked binary keeps its own name there).
func (a *app) programName() string {
	if len(a.argv) > 0 && a.argv[0] != "" {
		return filepath.Base(a.argv[0])
	}
	return a.binary()
}

// main parses args and runs; bad input is one line on stderr and exit code 1, with nothing on stdout (in
// rccl-tests' dialect, rccl-tests' own line and exit status where rccl-tests refuses the input too).
func (a *app) main(args []string) int {
	o, run, err := a.parse(args)
	if err != nil {
		if line := cli.RCCLRefusal(err); line != "" && cli.EarlyDialect(args, a.getenv) == plan.DialectRCCL {
			fmt.Fprintln(a.stderr, line)
			return exit.RCCLRefused
		}
		fmt.Fprintf(a.stderr, "%s: %v\n", a.binary(), err)
		return exit.Usage
	}
	if !run {
		return exit.OK
	}
	if v := a.getenv(plan.SeedEnv); v != "" && !o.Seed.Given {
		if err := o.Seed.Set(v); err != nil {
			fmt.Fprintf(a.stderr, "%s: invalid %s=%q: %v\n", a.binary(), plan.SeedEnv, v, err)
			return exit.Usage
		}
	}
	if key := a.getenv(abWorkerEnv); key != "" {
		return a.abWorker(o, key)
	}
	return a.run(o)
}

// parse reads the command line; run is false when only help was asked for.
func (a *app) parse(args []string) (o *plan.Options, run bool, err error) {
	o = &plan.Options{}
	var showVersion bool
	cmd := &cobra.Command{
		Use:   a.binary() + " [flags]",
		Short: "Measure and validate " + a.coll.Name + " like nccl-tests' " + a.binary(),
		Long: "Measure and validate " + a.coll.Name + " like nccl-tests' " + a.binary() + ".\n\n" +
			"Exit codes: 0 ok, 1 bad arguments (255 in rccl-tests' dialect where rccl-tests refuses them too, docs/DIALECTS.md),\n" +
			"2 runtime error (device, memory, a lost process), 3 collective library error, 4 timeout (-T),\n" +
			"7 wrong results or average bus bandwidth under NCCL_TESTS_MIN_BW x 0.9,\n" +
			"130 interrupted (SIGINT), 143 terminated (SIGTERM), 129 hung up (SIGHUP), 141 standard output closed.",
		Args:          cobra.NoArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if showVersion {
				_, err := io.WriteString(a.stdout, version.Text(a.binary(), nativeLibraries))
				return err
			}
			run = true
			if err := cli.Validate(o, cmd.Flags(), a.engines.names()); err != nil {
				return err
			}
			if err := cli.CheckConsistency(cmd.Flags(), o, a.parseEnv()); err != nil {
				return err
			}
			if err := a.checkAutoInList(cmd.Flags(), o); err != nil {
				return err
			}
			o.Args = world.NewArgs(a.binary(), cmd.Flags())
			o.Args.Switches = world.SwitchEnv(plan.Overlay(o.CommEnv, a.parseEnv())) // as the engines will read them
			if err := checkVariables(o, cmd.Flags(), a.engines.readers); err != nil || o.ABKey == "" {
				return err
			}
			var err error
			o.ABVar, err = a.checkABVariable(o)
			o.ABIgnored = dropABIgnored(o)
			return err
		},
	}
	cli.RegisterFlags(cmd.Flags(), o)
	cmd.Flags().BoolVar(&o.Progress, "progress", false, "show a progress line on stderr (default: when stderr is a terminal)")
	cmd.Flags().BoolVar(&showVersion, "version", false, "print the suite, commit, Go and module versions, and exit")
	cli.AddCompletions(cmd, a.engines.names())
	cmd.SetOut(a.stdout)
	cmd.SetErr(a.stderr)
	if args == nil {
		args = []string{}
	}
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		return nil, false, err
	}
	return o, run, nil
}

// run executes a validated command line: the A/B comparison, or each engine of --engine in turn.
func (a *app) run(o *plan.Options) int {
	var started atomic.Bool
	var stop <-chan struct{}
	if l, err := bootstrap.Detect(a.parseEnv()); err == nil && l.Size > 1 { // only then is there anyone to wait for
		var endStop func()
		stop, endStop = world.Stop(a.signalled, started.Load)
		defer endStop()
	}
	w, err := a.world(o.Timeout(), stop)
	if err != nil {
		return a.fail(err)
	}
	started.Store(true)
	// A process that ends its run says so, so that the others do not take its going for a loss; until then a
	// loss anywhere ends this process's run promptly (world.Watch).
	if l, ok := w.(interface{ Leave() }); ok {
		defer l.Leave()
	}
	a.runWorld, a.lost = w, world.NewWatch(w, a.lastResort())
	defer a.lost.Stop()
	if err := world.AgreeArgs(w, o.Args); err != nil {
		var ue *exit.UsageError
		if errors.As(err, &ue) {
			fmt.Fprintf(a.stderr, "%s: %v\n", a.binary(), err)
			return exit.Usage
		}
		return a.fail(err)
	}
	sp, commWorld, err := a.splitWorld(w)
	if err != nil {
		return a.fail(err)
	}
	if commWorld == nil {
		commWorld = w
	} else if l, ok := commWorld.(interface{ Leave() }); ok {
		defer l.Leave()
	}
	if err := a.prepareCollective(o, commWorld.Size()*o.NThreads*o.NGpus); err != nil {
		fmt.Fprintf(a.stderr, "%s: %v\n", a.binary(), err)
		return exit.Usage
	}
	if err := a.probeEngines(o); err != nil {
		return a.fail(err)
	}
	out := a.stdout
	if w.Rank() != 0 {
		out = io.Discard
	}
	rccl, err := report.StartRCCL(out, o, w, a.coll.Name, &a.outputs, a.interrupted)
	if err != nil {
		fmt.Fprintf(a.stderr, "%s: %v\n", a.binary(), err)
		if errors.Is(err, exit.ErrInterrupted) {
			return exit.Interrupted
		}
		return exit.Usage
	}
	seed, err := world.Seed(w, o.Seed.Resolve())
	if err != nil {
		rccl.Discard()
		return a.fail(err)
	}
	j, err := report.StartJSON(out, o, seed, w.Rank() == 0, report.RunInfo{Binary: a.binary(), Argv: a.argv, Environ: a.environ,
		Now: a.now, MinBW: a.minBW, Stderr: a.stderr}, &a.outputs)
	if err != nil {
		rccl.Discard()
		fmt.Fprintf(a.stderr, "%s: %v\n", a.binary(), err)
		return exit.Usage
	}
	j.RCCL = rccl
	rccl.Announce(out)
	j.Announce(out)
	var code int
	if o.ABKey != "" {
		code = a.runAB(out, o, w, seed, j)
	} else {
		code = a.runEngines(out, o, w, sp, commWorld, seed, j)
	}
	if err := j.Finish(); err != nil {
		fmt.Fprintf(a.stderr, "%s: %v\n", a.binary(), err)
		code = max(code, exit.Runtime)
	}
	return code
}

// probeEngines finds, before any file is claimed, an engine of an --engine list that cannot run here, so that
// a list does not fail after the tables of the engines before it. The vendor engine's probe loads the default
// library, so it is left to Open where --lib names another.
func (a *app) probeEngines(o *plan.Options) error {
	if len(o.Engines) < 2 || a.engines.open == nil {
		return nil
	}
	for _, name := range o.Engines {
		if name == collectives.EngineVendor && o.Library != "" {
			continue
		}
		e, err := a.engines.open(name)
		if err != nil {
			return err
		}
		if p, ok := e.(collectives.Prober); ok {
			if err := p.Available(); err != nil {
				return fmt.Errorf("--engine %s: %s cannot run here: %w", strings.Join(o.Engines, ","), name, err)
			}
		}
	}
	return nil
}

// runEngines runs the sweep on each engine of --engine, one after the other, then compares their times.
func (a *app) runEngines(out io.Writer, o *plan.Options, world collectives.World, sp *plan.Split, commWorld collectives.World,
	seed uint64, j *report.JSON) int {
	code := exit.OK
	var runs []*bench.Session
	for _, name := range o.Engines {
		if len(o.Engines) > 1 {
			fmt.Fprintf(out, "# Engine: %s\n", name)
		}
		s := bench.New(a.benchEnv(), bench.Params{Options: o, World: world, Split: sp, CommWorld: commWorld, Seed: seed,
			Out: out, Engine: name, Multi: len(o.Engines) > 1})
		c := s.Run()
		j.Add(s.Record())
		runs = append(runs, s)
		code = exit.Worse(code, c)
		if c != exit.OK && c != exit.TestFailed {
			break
		}
	}
	if len(runs) > 1 {
		names, rows := make([]string, len(runs)), make([][]report.Row, len(runs))
		for i, s := range runs {
			names[i], rows[i] = s.EngineName(), s.Rows()
		}
		report.WriteRatios(out, names, rows)
	}
	return code
}

// benchEnv is what a session takes from the app.
func (a *app) benchEnv() bench.Env {
	return bench.Env{Coll: a.coll, Stdout: a.stdout, Stderr: a.stderr, Getenv: a.parseEnv(), Open: a.engines.open,
		Choose: a.engines.choose, Interrupted: a.interrupted, StopNow: a.stopNow, Signalled: a.signalled, Now: a.now,
		StderrTTY: a.stderrTTY, Lost: a.lost, Binary: a.binary(), Program: a.programName(), MinBW: a.minBW(),
		Fail: a.failAt}
}

// prepareCollective checks what depends on the rank count (-r, hypercube's power of two, which rccl-tests'
// dialect skips instead) and configures the collective from its environment (alltoallv's pattern), before
// anything is measured or printed.
func (a *app) prepareCollective(o *plan.Options, nranks int) error {
	if a.coll.Rooted && o.Root >= nranks {
		return &exit.UsageError{Msg: fmt.Sprintf("invalid value \"%d\" for -r/--root: must be below the rank count %d (or -1 for every root)", o.Root, nranks)}
	}
	coll, err := a.coll.Prepare(plan.Overlay(o.CommEnv, a.getenv), nranks, o.MinBytes, o.MaxBytes)
	if errors.Is(err, collectives.ErrNotPowerOfTwo) && o.ABKey == "" &&
		cli.EarlyDialect(a.argv[1:], a.getenv) == plan.DialectRCCL {
		// rccl-tests runs hypercube's header and trailer around a line per thread saying it skips: its dialect
		// is fixed here, before any engine opens, as a refusal's would be.
		o.ChosenDialect, o.SkipRanks = plan.DialectRCCL, nranks
		return nil
	}
	if err != nil {
		return err
	}
	a.coll = coll
	return nil
}

// minBW is NCCL_TESTS_MIN_BW, or -1 when unset (the average bus bandwidth is then unchecked).
func (a *app) minBW() float64 {
	if bw, err := strconv.ParseFloat(a.getenv("NCCL_TESTS_MIN_BW"), 64); err == nil {
		return bw
	}
	return -1
}

// fail reports an error that ends the run and returns its exit code.
func (a *app) fail(err error) int { return a.failAt(err, -1) }

// failAt is fail for an error at the row of size (the size column; -1 when unknown), which a timeout and a
// lost process name. In a run of several processes the others are told (World.Abort), so that they stop now
// with the same error instead of at their next wait for this one.
func (a *app) failAt(err error, size int64) int {
	var te *collectives.TimeoutError
	var said *bench.SaidError
	switch {
	case errors.As(err, &said):
	case errors.As(err, &te):
		fmt.Fprintln(a.stderr, report.TimeoutLine(a.coll, te, size))
	case size >= 0 && a.lostProcess(err):
		fmt.Fprintf(a.stderr, "%s: %v at %s size %d\n", a.binary(), err, a.coll.Name, size)
	default:
		fmt.Fprintf(a.stderr, "%s: %v\n", a.binary(), err)
	}
	if ab, ok := a.runWorld.(interface{ Abort(error) }); ok {
		ab.Abort(err)
	}
	return exit.Code(err)
}

// lostProcess reports whether err is the World's own failure (a process died, left or ended the run), which
// failAt follows with the size in progress.
func (a *app) lostProcess(err error) bool {
	w, ok := a.runWorld.(interface{ Err() error })
	if !ok {
		return false
	}
	werr := w.Err()
	return werr != nil && errors.Is(err, werr)
}

// lastResort is how the loss watch ends a process still busy long after the run was lost: the run's error line,
// then exit (nil where the app may not exit: tests).
func (a *app) lastResort() func(err error, at int64) {
	if a.exit == nil {
		return nil
	}
	return func(err error, at int64) { a.exit(a.failAt(err, at)) }
}

// isTerminal reports whether f is a character device such as a terminal.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// stdoutClosed reports whether this process's standard output is a pipe or socket whose reader has gone:
// what a SIGPIPE means when it concerns the output and not a connection of the run.
func stdoutClosed() bool {
	fds := []unix.PollFd{{Fd: int32(os.Stdout.Fd())}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n == 1 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0
}
