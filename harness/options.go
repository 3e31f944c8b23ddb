// Package harness is the nccl-tests-compatible driver shared by the four perf binaries: flags, the size sweep,
// timing, validation and the text and JSON reports. It drives any collectives.Engine and knows nothing of the
// devices behind it.
package harness

import (
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/world"
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
	Halves             halves   // -O
	Engine, Library    string   // --engine, --lib
	Seed               seed     // --seed
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
	RCCL               rcclOptions // rccl-tests' flags and nccl-tests' -x, -D, -V (rcclflags.go)

	// Derived by validate.
	dtypes  []collectives.DType
	ops     []collectives.Op
	engines []string
	env     map[string]string // communicator overrides: -E, --dda, --lp, --lp-mode
	abKey   string
	abVals  [2]string
	abVar   abVariable // whether anything reads abKey (app.checkABVariable)
	// abIgnored are the flags the A/B run set aside (dropABIgnored), as its header names them.
	abIgnored []string
	// args are the binary and the flags every process of the run must agree on (world.AgreeArgs).
	args     world.Args
	dialect  string // --dialect or RCCLX_TESTS_DIALECT ("" = by platform: setDialect)
	rccl     bool   // the session prints rccl-tests' dialect
	rcclAlgo bool   // rccl-tests asks the library for this collective's algorithm (-A)
	// changed records which flags the user gave, for "ignored" notes.
	changed map[string]bool
}

// Timeout is -T as a duration (0 waits forever).
func (o *Options) Timeout() time.Duration { return time.Duration(o.TimeoutSec) * time.Second }

// rcclLayout: the table takes rccl-tests' layout, for its flags that nccl-tests lacks (-O 0|1, -A 1).
func (o *Options) rcclLayout() bool { return o.Halves != bothHalves || o.RCCL.AlgoColumns == 1 }

// runOutOfPlace and runInPlace say which halves -O selects.
func (o *Options) runOutOfPlace() bool { return o.Halves != inPlaceOnly }
func (o *Options) runInPlace() bool    { return o.Halves != outOfPlaceOnly }
