// Package plan is what a run does, as plain data: the parsed command line (Options), the values of its flags, and
// the binary and flags that every process of the run must agree on (Args). The command line fills it in; the
// run, the agreement between processes and the outputs read it. It holds no flag set and reads no environment,
// and imports no other package of the harness.
package plan

import (
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// Options are the parsed command line. Field names follow nccl-tests' variables; the comments give the flags.
type Options struct {
	NThreads, NGpus    int   // -t, -g
	MinBytes, MaxBytes int64 // -b, -e
	StepBytes          int64 // -i
	StepFactor         int64 // -f
	Iters, AggIters    int   // -n, -m
	Warmup             int   // -w
	Cycles             int   // -N (0 = until interrupted)
	Check              int   // -c
	Op, DType          string
	Root               int      // -r
	Blocking           int      // -z
	StreamNull         int      // -y
	TimeoutSec         int      // -T
	Graph              int      // -G
	CPUTime            int      // -C
	Timestamps         int      // -S
	Average            int      // -a
	Unalign            int      // -u
	PerIter, IterSkip  int      // -I, -K
	Memory             int      // -M
	OutputFile         string   // -J
	ParallelInit       int      // -p
	Register           int      // -R
	Halves             Halves   // -O
	Engine, Library    string   // --engine, --lib
	Seed               Seed     // --seed
	AB                 string   // --ab KEY=v1,v2
	ABRounds           int      // --ab-rounds
	ABStrict           bool     // --ab-strict
	Env                []string // -E KEY=VALUE
	DDA, LP            bool     // --dda, --lp
	LPMode             string   // --lp-mode
	Progress           bool     // --progress
	Oversubscribe      bool
	AlgoColumn         bool
	Dialect            string      // --dialect: nccl-tests or rccl-tests ("" = by platform, or RCCLX_TESTS_DIALECT)
	RCCL               RCCLOptions // rccl-tests' flags and nccl-tests' -x, -D, -V (harness/cli/rcclflags.go)

	// Derived from the flags and the environment by the command line (validate).
	DTypes   []collectives.DType
	Ops      []collectives.Op
	Engines  []string
	CommEnv  map[string]string // communicator overrides: -E, --dda, --lp, --lp-mode
	ABKey    string
	ABValues [2]string
	ABVar    ABVariable // whether anything reads ABKey (checkABVariable)
	// ABIgnored are the flags the A/B run set aside (dropABIgnored), as its header names them.
	ABIgnored []string
	// Args are the binary and the flags every process of the run must agree on (world.AgreeArgs).
	Args          Args
	ChosenDialect string // --dialect or RCCLX_TESTS_DIALECT ("" = by platform: setDialect)
	RCCLDialect   bool   // the session prints rccl-tests' dialect
	RCCLAlgo      bool   // rccl-tests asks the library for this collective's algorithm (-A)
	// SkipRanks is hypercube's rank count where it is not a power of two and rccl-tests' dialect runs: every
	// thread says it skips, as rccl-tests' threads do, and no row runs (0: the run has rows).
	SkipRanks int
	// Changed records which flags the user gave, for "ignored" notes.
	Changed map[string]bool
}

// Timeout is -T as a duration (0 waits forever).
func (o *Options) Timeout() time.Duration { return time.Duration(o.TimeoutSec) * time.Second }

// RCCLLayout: the table takes rccl-tests' layout, for its flags that nccl-tests lacks (-O 0|1, -A 1).
func (o *Options) RCCLLayout() bool { return o.Halves != BothHalves || o.RCCL.AlgoColumns == 1 }

// RunOutOfPlace and RunInPlace say which halves -O selects.
func (o *Options) RunOutOfPlace() bool { return o.Halves != InPlaceOnly }
func (o *Options) RunInPlace() bool    { return o.Halves != OutOfPlaceOnly }

// SeedEnv is the variable under which the JSON records the seed; --seed defaults to it, so a run replays.
const SeedEnv = "RCCLX_TESTS_SEED"
