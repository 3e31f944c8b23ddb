package harness

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/engines"
)

// Exit codes, as nccl-tests and this suite's SPEC define them.
const (
	exitOK          = 0
	exitUsage       = 1
	exitRuntime     = 2
	exitLibrary     = 3
	exitTimeout     = 4
	exitTestFailed  = 7
	exitInterrupted = 130
)

// engineSource names and creates engines; the mains use the engines package, tests their own.
type engineSource struct {
	names func() []string
	open  func(name string) (collectives.Engine, error)
}

// app is one invocation of a perf binary.
type app struct {
	coll           *collectives.Collective
	stdout, stderr io.Writer
	getenv         func(string) string
	environ        func() []string
	engines        engineSource
	argv           []string    // the whole command line, for JSON
	interrupted    func() bool // SIGINT/SIGTERM received: stop after the current half
	now            func() time.Time
	world          func(timeout time.Duration) (collectives.World, error)
}

// Main runs the perf binary of coll with the command-line arguments args and returns its exit code.
func Main(coll *collectives.Collective, args []string) int {
	a := &app{coll: coll, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, environ: os.Environ,
		engines: engineSource{names: engines.Names, open: engines.New}, argv: append([]string{os.Args[0]}, args...),
		now: time.Now, world: openWorld}
	var stop atomic.Bool
	a.interrupted = stop.Load
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	go func() {
		// The first signal stops the sweep after the current half; a second one does not wait for it.
		<-sig
		stop.Store(true)
		fmt.Fprintf(a.stderr, "%s: interrupted: stopping after the current measurement (interrupt again to exit now)\n",
			a.binary())
		<-sig
		fmt.Fprintf(a.stderr, "%s: interrupted again: exiting now\n", a.binary())
		os.Exit(exitInterrupted)
	}()
	return a.main(args)
}

func (a *app) binary() string { return a.coll.Name + "_perf" }

// main parses args and runs; bad input is one line on stderr and exit code 1, with nothing on stdout.
func (a *app) main(args []string) int {
	o, run, err := a.parse(args)
	if err != nil {
		fmt.Fprintf(a.stderr, "%s: %v\n", a.binary(), err)
		return exitUsage
	}
	if !run {
		return exitOK
	}
	if v := a.getenv(seedEnv); v != "" && !o.Seed.set {
		if err := o.Seed.Set(v); err != nil {
			fmt.Fprintf(a.stderr, "%s: invalid %s=%q: %v\n", a.binary(), seedEnv, v, err)
			return exitUsage
		}
	}
	return a.run(o)
}

// parse reads the command line; run is false when only help was asked for.
func (a *app) parse(args []string) (o *Options, run bool, err error) {
	o = &Options{}
	cmd := &cobra.Command{
		Use:   a.binary() + " [flags]",
		Short: "Measure and validate " + a.coll.Name + " like nccl-tests' " + a.binary(),
		Long: "Measure and validate " + a.coll.Name + " like nccl-tests' " + a.binary() + ".\n\n" +
			"Exit codes: 0 ok, 1 bad arguments, 2 device runtime error, 3 collective library error, 4 timeout (-T),\n" +
			"7 wrong results or average bus bandwidth under NCCL_TESTS_MIN_BW x 0.9, 130 interrupted.",
		Args:          cobra.NoArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			run = true
			return o.validate(cmd.Flags(), a.engines.names())
		},
	}
	RegisterFlags(cmd.Flags(), o)
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
func (a *app) run(o *Options) int {
	world, err := a.world(o.Timeout())
	if err != nil {
		return a.fail(err)
	}
	if err := a.prepareCollective(o, world.Size()*o.NThreads*o.NGpus); err != nil {
		fmt.Fprintf(a.stderr, "%s: %v\n", a.binary(), err)
		return exitUsage
	}
	out := a.stdout
	if world.Rank() != 0 {
		out = io.Discard
	} else if err := checkOutputDirs(o); err != nil {
		fmt.Fprintf(a.stderr, "%s: %v\n", a.binary(), err)
		return exitUsage
	}
	seed, err := agreeSeed(world, o.Seed.resolve())
	if err != nil {
		return a.fail(err)
	}
	j := a.startJSON(out, o, seed, world.Rank() == 0)
	var code int
	if o.abKey != "" {
		code = a.runAB(out, o, world, seed, j)
	} else {
		code = a.runEngines(out, o, world, seed, j)
	}
	if err := j.finish(); err != nil {
		fmt.Fprintf(a.stderr, "%s: %v\n", a.binary(), err)
		code = max(code, exitRuntime)
	}
	return code
}

// runEngines runs the sweep on each engine of --engine, one after the other, then compares their times.
func (a *app) runEngines(out io.Writer, o *Options, world collectives.World, seed uint64, j *jsonOut) int {
	code := exitOK
	var runs []*session
	for _, name := range o.engines {
		if len(o.engines) > 1 {
			fmt.Fprintf(out, "# Engine: %s\n", name)
		}
		s := &session{a: a, o: o, world: world, seed: seed, out: out, engineName: name, multi: len(o.engines) > 1}
		c := s.run()
		j.add(s)
		runs = append(runs, s)
		code = worseExit(code, c)
		if c != exitOK && c != exitTestFailed {
			break
		}
	}
	if len(runs) > 1 {
		writeRatios(out, runs)
	}
	return code
}

// prepareCollective checks what depends on the rank count (-r, hypercube's power of two) and configures the
// collective from its environment (alltoallv's pattern), before anything is measured or printed.
func (a *app) prepareCollective(o *Options, nranks int) error {
	if a.coll.Rooted && o.Root >= nranks {
		return &usageError{fmt.Sprintf("invalid value \"%d\" for -r/--root: must be below the rank count %d (or -1 for every root)", o.Root, nranks)}
	}
	getenv := func(k string) string {
		if v, ok := o.env[k]; ok {
			return v
		}
		return a.getenv(k)
	}
	coll, err := a.coll.Prepare(getenv, nranks, o.MinBytes, o.MaxBytes)
	if err != nil {
		return err
	}
	a.coll = coll
	return nil
}

// worseExit keeps the exit code that matters most: errors over test failures over success.
func worseExit(a, b int) int {
	rank := func(c int) int {
		switch c {
		case exitOK:
			return 0
		case exitTestFailed:
			return 1
		case exitInterrupted:
			return 2
		}
		return 3
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// minBW is NCCL_TESTS_MIN_BW, or -1 when unset (the average bus bandwidth is then unchecked).
func (a *app) minBW() float64 {
	if bw, err := strconv.ParseFloat(a.getenv("NCCL_TESTS_MIN_BW"), 64); err == nil {
		return bw
	}
	return -1
}

// fail reports an error that ends the run and returns its exit code.
func (a *app) fail(err error) int {
	var te *collectives.TimeoutError
	if errors.As(err, &te) {
		fmt.Fprintln(a.stderr, timeoutLine(a.coll, te, -1))
	} else {
		fmt.Fprintf(a.stderr, "%s: %v\n", a.binary(), err)
	}
	return exitCode(err)
}

// exitCode maps an engine error to nccl-tests' exit codes.
func exitCode(err error) int {
	var te *collectives.TimeoutError
	var le *collectives.LibraryError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &te):
		return exitTimeout
	case errors.As(err, &le):
		return exitLibrary
	}
	return exitRuntime
}

// timeoutLine is the one line printed for a timeout; size is the row's size column, or -1 when unknown.
func timeoutLine(c *collectives.Collective, te *collectives.TimeoutError, size int64) string {
	return fmt.Sprintf("timeout: rank %d %s size %d phase %s after %v", te.Rank, c.Name, size, te.Phase, te.After)
}

// agreeSeed makes every process use rank 0's seed.
func agreeSeed(w collectives.World, local uint64) (uint64, error) {
	all, err := gatherJSON(w, "the seed", local)
	if err != nil {
		return 0, err
	}
	return all[0], nil
}
