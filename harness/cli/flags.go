// Package cli is the perf binaries' command line: the flags with nccl-tests' and rccl-tests' letters, their values,
// the checks of each value and of their combinations, and shell completions. Its input is argv through a pflag
// FlagSet; its output is a filled-in plan.Options, or an exit.UsageError naming the flag and the value. It runs
// nothing, and imports no other package of the harness but plan and exit.
package cli

import (
	"fmt"

	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/spf13/pflag"
)

// RegisterFlags defines every flag of the perf binaries on fs, with nccl-tests' letters, long names and
// defaults, followed by this suite's own flags.
func RegisterFlags(fs *pflag.FlagSet, o *plan.Options) {
	o.MinBytes, o.MaxBytes, o.StepBytes = 32<<20, 32<<20, 1<<20
	o.Halves = plan.BothHalves
	fs.IntVarP(&o.NThreads, "nthreads", "t", 1, "threads per process")
	fs.IntVarP(&o.NGpus, "ngpus", "g", 1, "GPUs (ranks) per thread")
	fs.VarP(&sizeValue{p: &o.MinBytes}, "minbytes", "b", "smallest size in bytes (K, M, G suffixes are powers of 1024)")
	fs.VarP(&sizeValue{p: &o.MaxBytes}, "maxbytes", "e", "largest size in bytes")
	fs.VarP(&sizeValue{p: &o.StepBytes}, "stepbytes", "i", "size increment when -f is 1")
	fs.Int64VarP(&o.StepFactor, "stepfactor", "f", 1, "size multiplier when above 1")
	fs.IntVarP(&o.Iters, "iters", "n", 20, "timed iterations per size")
	fs.IntVarP(&o.AggIters, "agg_iters", "m", 1, "operations aggregated per iteration")
	fs.IntVarP(&o.Warmup, "warmup_iters", "w", 1, "warmup iterations per size")
	fs.IntVarP(&o.Cycles, "run_cycles", "N", 1, "repeat the sweep; 0 = until interrupted")
	fs.IntVarP(&o.Check, "check", "c", 1, "validation runs per size; 0 = off (#wrong prints N/A)")
	fs.StringVarP(&o.Op, "op", "o", "sum", "sum, prod, max, min, avg, mulsum or all")
	fs.StringVarP(&o.DType, "datatype", "d", "float",
		"int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 f8e4m3 f8e5m2, or all")
	fs.VarP(rootValue{&o.Root}, "root", "r", "root rank of rooted collectives (-1 or all = every root)")
	fs.IntVarP(&o.Blocking, "blocking", "z", 0,
		"1: wait and barrier after each operation; 2: wait only; 3: wait and untimed barrier per iteration")
	fs.VarP(streamNullValue{&o.StreamNull, &o.RCCL.MemoryType}, "stream_null", "y",
		"use the default stream (0/1); a word is rccl-tests' memory type (-Y)")
	fs.IntVarP(&o.TimeoutSec, "timeout", "T", 0, "seconds before a stuck operation is aborted (exit 4); 0 = never")
	fs.IntVarP(&o.Graph, "cudagraph", "G", 0, "capture the iteration loop as a graph and replay it this many times")
	fs.IntVarP(&o.CPUTime, "report_cputime", "C", 0, "report host enqueue time instead of completion time (0/1)")
	fs.IntVarP(&o.Timestamps, "report_timestamps", "S", 0, "append a timestamp to each row (0/1)")
	fs.IntVarP(&o.Average, "average", "a", 1, "combine ranks' times: 0 rank 0, 1 average, 2 minimum, 3 maximum")
	fs.VarP(unalignValue{&o.Unalign, &o.RCCL.Cumask}, "unalign", "u",
		"shift buffers by this many elements; a list of hex masks is rccl-tests' --cumask")
	fs.IntVarP(&o.PerIter, "per_iter_timing", "I", 0, "time each iteration: adds i_min i_max i_p99 i_cv% (0/1)")
	fs.IntVarP(&o.IterSkip, "per_iter_skip", "K", 0, "leave this many first iterations out of the per-iteration summary")
	fs.IntVarP(&o.Memory, "memory", "M", 0, "print a device memory usage line (0/1)")
	fs.StringVarP(&o.OutputFile, "output_file", "J", "", "write JSON results to this file if it ends in .json (never overwrites: FILE.0, FILE.1 ... instead)")
	fs.IntVarP(&o.ParallelInit, "parallel_init", "p", 0, "each thread creates its own communicators (0/1)")
	fs.IntVarP(&o.Register, "local_register", "R", 0, "register buffers with the library: 0 no, 1 local, 2 symmetric")
	fs.VarP(&o.Halves, "out_of_place", "O", "1 = out-of-place only, 0 = in-place only")

	fs.StringVar(&o.Engine, "engine", "auto", "engine: auto, host, gpu, vendor, or a comma list run one after the other")
	fs.StringVar(&o.Library, "lib", "", "vendor library: a name to search for or a path")
	fs.Var(&o.Seed, "seed", "seed of the input data; default $RCCLX_TESTS_SEED, else random (JSON records it in env)")
	fs.Var(&onceString{p: &o.AB}, "ab", "A/B comparison KEY=v1,v2: each arm in worker processes of its own, started with KEY=v1 or KEY=v2, interleaved")
	fs.IntVar(&o.ABRounds, "ab-rounds", 5, "rounds per arm and size with --ab")
	fs.BoolVar(&o.ABStrict, "ab-strict", false, "with --ab: a variable the vendor library never reads is an error, not a warning")
	fs.VarP(envValue{&o.Env, &o.RCCL.RotatingTensor}, "env", "E",
		"KEY=VALUE communicator environment override (repeatable); 0/1 is rccl-tests' --rotating_tensor")
	fs.BoolVar(&o.DDA, "dda", false, "enable RCCLX DDA (RCCL_DDA_ENABLE=1)")
	fs.BoolVar(&o.LP, "lp", false, "enable RCCLX low precision (RCCL_LOW_PRECISION_ENABLE=1)")
	fs.StringVar(&o.LPMode, "lp-mode", "", "low-precision quantization: rcclx (plain E4M3 cast) or scaled (per-block scale)")
	fs.BoolVar(&o.Oversubscribe, "oversubscribe", false, "let more ranks than devices share devices")
	fs.BoolVar(&o.AlgoColumn, "algo-column", false, "append the algorithm of each row as an extra column")
	fs.StringVar(&o.Dialect, "dialect", "", "output dialect: nccl-tests or rccl-tests (default: rccl-tests' on HIP or RCCL, "+
		"nccl-tests' elsewhere; also $RCCLX_TESTS_DIALECT)")
	registerRCCLFlags(fs, o)
	showZeroDefaults(fs)
}

// showZeroDefaults makes --help print every default: pflag leaves out zero ones.
func showZeroDefaults(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		switch f.DefValue {
		case "0", "false":
			f.Usage += fmt.Sprintf(" (default %s)", f.DefValue)
		case "", "[]":
			f.Usage += " (default none)"
		}
	})
}
