// Command rcclx-results compares, gates and plots the records of perf runs
// (this suite's JSON, nccl-tests' -J JSON, rccl-tests' CSV or JSON, or the text
// output of either tool).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/rcclx-tests/rcclx-tests/internal/version"
	"github.com/rcclx-tests/rcclx-tests/plots"
	"github.com/rcclx-tests/rcclx-tests/results"
)

// Exit codes: bad input is exit 1 as in the perf binaries, and so is a failed gate; the message tells them
// apart (a gate verdict on stdout, one "rcclx-results: " line on stderr for bad input). An inconclusive gate
// has a code of its own, so that CI can tell "rerun with more data" from both.
const (
	exitOK               = 0
	exitGateFailed       = 1
	exitUsage            = 1
	exitGateInconclusive = 2
)

var (
	errGateFailed       = errors.New("gate failed")
	errGateInconclusive = errors.New("gate inconclusive")
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line args and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	root := &cobra.Command{
		Use:   "rcclx-results",
		Short: "Compare, gate and plot collective benchmark results",
		Long: `Compare, gate and plot collective benchmark results.

Inputs: this suite's JSON records, nccl-tests' -J JSON (schema 3), rccl-tests'
CSV and JSON (-Z csv|json -X) and the text output of nccl-tests or rccl-tests; the format is
detected from the content.

Exit status: 0 success; 1 the gate failed, or bad arguments or an unreadable
or malformed input file (one line on stderr); 2 the gate is inconclusive.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Suite,
	}
	root.SetVersionTemplate(version.Text("rcclx-results", "none: rcclx-results only reads files"))
	root.AddCommand(compareCmd(), gateCmd(), plotCmd())
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errGateFailed):
		return exitGateFailed
	case errors.Is(err, errGateInconclusive):
		return exitGateInconclusive
	default:
		fmt.Fprintf(stderr, "rcclx-results: %v\n", err)
		return exitUsage
	}
}

func compareCmd() *cobra.Command {
	var opt results.CompareOptions
	cmd := &cobra.Command{
		Use:   "compare RUN [RUN ...]",
		Short: "One row per size: median time, spread and busbw of each run (engine, A/B arm), speedup over the first column (geomean of per-cycle time ratios)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			runs, err := results.LoadRuns(args)
			if err != nil {
				return err
			}
			return results.Compare(cmd.OutOrStdout(), runs, opt)
		},
	}
	cmd.Flags().BoolVar(&opt.InPlace, "in-place", false, "show the in-place half instead of out-of-place")
	cmd.Flags().BoolVar(&opt.Markdown, "markdown", false, "print a Markdown table (for a report), its notes as plain lines before it")
	return cmd
}

func gateCmd() *cobra.Command {
	var (
		baselines  []string
		threshold  string
		ranges     []string
		metric     string
		requireAll bool
		mismatch   bool
		hard       string
	)
	cmd := &cobra.Command{
		Use:   "gate --baseline BASE [--baseline BASE2 ...] CURRENT [CURRENT2 ...]",
		Short: "PASS, FAIL (exit 1) or INCONCLUSIVE (exit 2): did a size regress beyond the threshold?",
		Long: `Compare current runs against baseline runs, size by size and half by half.

Each half gets one of three verdicts on its busbw drop (--metric busbw) or
time rise (--metric time) between the geometric-mean times of each side (the
estimator of every speedup rcclx-results and the A/B table print), against
the threshold of its size range:
  FAIL          the mean changed beyond the threshold and, where several runs
                on a side give a spread (-N cycles in a record, or several
                files), the 95% Welch interval of that run-to-run noise
                excludes no change; or the median changed beyond the hard
                limit (--hard-limit, default 3x the threshold, busbw at most
                90%), whatever the noise
  PASS          the interval excludes a change beyond the threshold (one
                sample a side: the change is within it)
  INCONCLUSIVE  the noise leaves both open: the line says about how many more
                samples (-N cycles, or runs) would decide
Any wrong element in a current run fails. The gate also
fails when no size was compared, when baseline and current differ in
collective, type, op, rank count, halves (-O) or A/B arms (unless
--allow-mismatch), and on an A/B record whose variable the library never
reads; a different engine, library version, GPU model or -G is a WARN line,
and so is a size that ran another algorithm (the size is still compared).
Sizes present on one side only are reported; they fail only with
--require-all. Where baseline and current are one file each, a NOTE says
that their spread is the noise within one run: several baseline files bring
the noise between runs. Prints one line per failing or undecided half and a
summary line: the verdict, with the worst sizes.

A file given twice (any spelling of its path, or a copy with the same bytes)
is refused: each file counts as one run.

Exit status: 0 PASS; 1 FAIL, or bad arguments or input (one line on stderr);
2 INCONCLUSIVE.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opt := results.GateOptions{Metric: metric, RequireAll: requireAll}
			var err error
			if opt.Threshold, err = results.ParsePercent(threshold); err != nil {
				return fmt.Errorf("--threshold: %v", err)
			}
			if err := checkThreshold(metric, opt.Threshold); err != nil {
				return fmt.Errorf("--threshold %s: %v", threshold, err)
			}
			for _, s := range ranges {
				r, err := results.ParseSizeRange(s)
				if err == nil {
					err = checkThreshold(metric, r.Threshold)
				}
				if err != nil {
					return fmt.Errorf("--range %s: %v", s, err)
				}
				opt.Ranges = append(opt.Ranges, r)
			}
			if cmd.Flags().Changed("hard-limit") {
				if opt.HardLimit, err = results.ParsePercent(hard); err == nil && !(opt.HardLimit > 0) {
					err = errors.New("want a regression above 0%")
				}
				if err != nil {
					return fmt.Errorf("--hard-limit: %v", err)
				}
				if err := checkThreshold(metric, opt.HardLimit); err != nil {
					return fmt.Errorf("--hard-limit %s: %v", hard, err)
				}
				for _, r := range append(opt.Ranges, results.SizeRange{Threshold: opt.Threshold}) {
					if opt.HardLimit < r.Threshold {
						return fmt.Errorf("--hard-limit %s: below the threshold %s%%", hard,
							strconv.FormatFloat(100*r.Threshold, 'g', -1, 64))
					}
				}
			}
			opt.AllowMismatch = mismatch
			recs, err := loadDistinct(slices.Concat(baselines, args))
			if err != nil {
				return err
			}
			rep, err := results.Gate(recs[:len(baselines)], recs[len(baselines):], opt)
			if err != nil {
				return err
			}
			if err := rep.Write(cmd.OutOrStdout()); err != nil {
				return err
			}
			switch rep.Verdict() {
			case results.GateFail:
				return errGateFailed
			case results.GateInconclusive:
				return errGateInconclusive
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&baselines, "baseline", nil, "baseline run (repeat to pool several runs)")
	f.StringVar(&threshold, "threshold", "10%", "largest tolerated regression")
	f.StringArrayVar(&ranges, "range", nil, "own threshold for a size range, MIN-MAX=PCT (e.g. 0-64K=25%); first match wins")
	f.StringVar(&metric, "metric", results.MetricBusBW, "busbw (drop fails) or time (rise fails)")
	f.StringVar(&hard, "hard-limit", "", "median regression that fails whatever the noise (default 3x the threshold)")
	f.BoolVar(&requireAll, "require-all", false, "fail when a size is present on one side only")
	f.BoolVar(&mismatch, "allow-mismatch", false,
		"compare the rows both sides share even if they differ in collective, type, op, ranks, halves or A/B arms")
	_ = cmd.MarkFlagRequired("baseline")
	completeMetric(cmd)
	return cmd
}

// checkThreshold refuses a bandwidth threshold of 100% or more: busbw cannot drop by that much, so such a gate
// could never fail.
func checkThreshold(metric string, t float64) error {
	if metric != results.MetricTime && t >= 1 {
		return fmt.Errorf("a busbw drop of %s%% or more cannot happen, so the gate could never fail (use --metric time for a rise)",
			strconv.FormatFloat(100*t, 'g', -1, 64))
	}
	return nil
}

func plotCmd() *cobra.Command {
	var (
		outs   []string
		opt    plots.Options
		ab     bool
		labels []string
	)
	cmd := &cobra.Command{
		Use:   "plot RUN [RUN ...] -o FILE.png|FILE.svg|FILE.pdf [-o ...]",
		Short: "Plot busbw, algbw or time against size (or, with --ab, an A/B speedup)",
		Long: `Plot busbw, algbw or time against size: one line per run (and per engine, A/B
arm, type and reduction where a record mixes them) through the
median at each size, with a shaded band from the minimum to the maximum where
a size has several samples (-N cycles, A/B rounds). With --ab, the speedup of
an A/B record's arm B over arm A with its 95% interval.

The title names what the records say ran (collective, type, op, ranks, GPU or
CPU, engine, library); the legend names each run by what tells it from the
others, or by --label. Sizes are on a logarithmic axis, each one marked; the
value axis is logarithmic too unless --linear. Bandwidths come from the times
(bytes / time, as nccl-tests computes them), so that sizes text output prints
at 0.00 GB/s are drawn; what cannot be drawn (size 0 on a log axis) is named
in a NOTE line on stderr. A PNG is 1600x1000 pixels a panel; give
-o twice (FILE.png and FILE.svg) for both. An existing file is never replaced
without --force.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("label") {
				opt.Labels = labels
			}
			var notes []string
			if ab {
				var err error
				if notes, err = plotAB(args, outs, opt); err != nil {
					return err
				}
			} else {
				runs, err := results.LoadRuns(args)
				if err != nil {
					return err
				}
				if notes, err = plots.PlotRuns(outs, runs, opt); err != nil {
					return err
				}
				shown := results.ShownHalf(runs, opt.InPlace)
				for _, label := range results.Unshown(runs, shown) {
					notes = append(notes, results.UnshownNote(label, shown))
				}
			}
			for _, n := range notes {
				fmt.Fprintln(cmd.ErrOrStderr(), n)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&outs, "output", "o", nil, "output file; the extension picks the format (.png, .svg, .pdf; also .jpg, .tif); repeat for several")
	f.StringVar(&opt.Metric, "metric", results.MetricBusBW, "busbw, algbw or time")
	f.BoolVar(&opt.InPlace, "in-place", false, "plot the in-place half instead of out-of-place")
	f.BoolVar(&opt.Linear, "linear", false, "a linear value axis instead of the logarithmic one")
	f.Bool("log", false, "") // accepted, deprecated: the value axis is logarithmic by default
	_ = f.MarkDeprecated("log", "the value axis is logarithmic by default (--linear for a linear one)")
	f.StringArrayVar(&labels, "label", nil, "legend name of each input, once per input in order (default: derived from the records)")
	f.BoolVar(&opt.Force, "force", false, "replace existing output files")
	f.BoolVar(&ab, "ab", false, "plot the A/B speedup of one record that carries an ab report")
	_ = cmd.MarkFlagRequired("output")
	completeMetric(cmd)
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"png", "svg", "pdf"}, cobra.ShellCompDirectiveFilterFileExt))
	return cmd
}

func plotAB(args, outs []string, opt plots.Options) ([]string, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("--ab takes exactly one record, got %d", len(args))
	}
	rec, err := results.Load(args[0])
	if err != nil {
		return nil, err
	}
	if rec.AB == nil {
		return nil, fmt.Errorf("%s: no A/B report (ab key) in this record", args[0])
	}
	return plots.PlotAB(outs, rec, opt)
}

// completeMetric lets a shell complete --metric's values.
func completeMetric(cmd *cobra.Command) {
	_ = cmd.RegisterFlagCompletionFunc("metric", cobra.FixedCompletions(
		[]string{results.MetricBusBW, results.MetricAlgBW, results.MetricTime}, cobra.ShellCompDirectiveNoFileComp))
}

// loadDistinct loads the gate's files. Each file is one run, and every run narrows the noise interval, so a
// file given twice (under the same path in any spelling, or as a byte-identical copy) is refused.
func loadDistinct(paths []string) ([]*results.Record, error) {
	byPath, byContent := map[string]bool{}, map[string]string{}
	recs := make([]*results.Record, len(paths))
	for i, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		if byPath[abs] {
			return nil, fmt.Errorf("%s given twice: a file is one run and counts once", p)
		}
		data, err := results.ReadFile(p)
		if err != nil {
			return nil, err
		}
		if first, ok := byContent[string(data)]; ok {
			return nil, fmt.Errorf("%s has the same content as %s: one run given twice", p, first)
		}
		byPath[abs], byContent[string(data)] = true, p
		if recs[i], err = results.Parse(p, data); err != nil {
			return nil, err
		}
	}
	return recs, nil
}
