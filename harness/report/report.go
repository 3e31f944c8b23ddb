// Package report is what a run prints and writes, as pure functions of data: the header, the rows and the trailer
// in the nccl-tests and rccl-tests dialects, the type and redop columns, and the -J JSON's records. Its input is
// plan.Options and the Rows a run measured; its output is text and results values. It runs nothing and imports
// no other package of the harness but plan and exit.
package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/internal/version"
)

// Version is this suite's version, printed where nccl-tests prints its own.
const Version = version.Suite

// TimeLayout is nccl-tests' time format (JSON start/end times, -S timestamps).
const TimeLayout = "2006-01-02 15:04:05"

// fitNumber formats v in width columns the way nccl-tests does: two decimals, else one, else none, else
// scientific notation.
func fitNumber(v float64, width int) string {
	for _, prec := range []int{2, 1, 0} {
		if s := fmt.Sprintf("%*.*f", width, prec, v); len(s) <= width {
			return s
		}
	}
	if width >= 7 {
		return fmt.Sprintf("%*.1e", width, v)
	}
	return fmt.Sprintf("%*.0e", width, v)
}

// cG formats v like C's printf %g (six significant digits, no trailing zeros).
func cG(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// Header is what the lines before the table say.
type Header struct {
	Binary  string // "all_reduce_perf"
	Library string // Comm.Library()
	Engine  string // what the version line adds after the library: " engine=gpu runtime=cuda"
	Graph   int    // -G as it applies to this engine (0 when ignored)
	PerIter string // -I: the "Per-Iteration Report" line, which nccl-tests prints before "Parallel Init"
	Notes   []string
	Devices []collectives.Device
	Reduced int64    // maxBytes after the memory limit, 0 when unchanged
	NoTable bool     // --ab prints tables of its own instead of nccl-tests' rows
	Banner  []string // RCCL's NCCL_DEBUG=VERSION lines, where this suite's engine stands in for it (libraryBanner)
}

// WriteHeader writes the lines before the table: the version, the run's parameters, the devices and h's notes.
func WriteHeader(w io.Writer, o *plan.Options, h Header) {
	step, kind := o.StepBytes, "bytes"
	if o.StepFactor > 1 {
		step, kind = o.StepFactor, "factor"
	}
	lines := []string{
		fmt.Sprintf("# rcclx-tests version %s %s%s", Version, h.Library, h.Engine),
		"# Collective test starting: " + h.Binary,
		fmt.Sprintf("# nThread %d nGpus %d minBytes %d maxBytes %d step: %d(%s) warmup iters: %d iters: %d "+
			"agg iters: %d validation: %d graph: %d unalign: %d", o.NThreads, o.NGpus, o.MinBytes, o.MaxBytes, step,
			kind, o.Warmup, o.Iters, o.AggIters, o.Check, h.Graph, o.Unalign),
	}
	if b := BlockingLine(o); b != "" {
		lines = append(lines, b)
	}
	if h.PerIter != "" {
		lines = append(lines, "# "+h.PerIter)
	}
	if o.ParallelInit == 1 {
		lines = append(lines, "# Parallel Init Enabled: threads call into NcclInitRank concurrently ")
	}
	for _, n := range h.Notes {
		lines = append(lines, "# "+n)
	}
	lines = append(lines, "#", "# Using devices")
	for _, d := range h.Devices {
		lines = append(lines, fmt.Sprintf("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s",
			d.Rank, d.Group, d.Pid, d.Hostname, d.Index, d.BusID, d.Name))
	}
	lines = append(lines, h.Banner...)
	if h.Reduced > 0 {
		lines = append(lines, "#", fmt.Sprintf("# Reducing maxBytes to %d due to memory limitation", h.Reduced))
	}
	lines = append(lines, "#")
	if !h.NoTable {
		lines = append(lines, ColumnHeader(o)...)
	}
	fmt.Fprint(w, strings.Join(lines, "\n")+"\n")
}

// ColumnHeader is the table's three header lines, with nccl-tests' widths and trailing spaces. rccl-tests'
// -O and -A (flags nccl-tests lacks), and the rccl-tests dialect, take rccl-tests' layout: only the halves that
// run, then its extra columns' field (empty without -A: one more trailing space).
func ColumnHeader(o *plan.Options) []string {
	timeName := "time"
	if o.CPUTime == 1 {
		timeName = "cputime"
	}
	tsName, tsFmt, tsPad := "", "", 0
	if o.Timestamps == 1 {
		tsName, tsFmt, tsPad = "timestamp", "%Y-%m-%d %H:%M:%S", 19
	}
	lead := func(a, b string) string { return fmt.Sprintf("# %10s  %12s  %8s  %6s  %6s", a, b, "", "", "") }
	names := fmt.Sprintf("# %10s  %12s  %8s  %6s  %6s", "size", "count", "type", "redop", "root")
	half := func(t, a, b, wrong string) string { return fmt.Sprintf("  %7s  %6s  %6s  %6s", t, a, b, wrong) }
	iter := func(a, b, c, d string) string { return fmt.Sprintf("  %7s  %7s  %7s  %7s", a, b, c, d) }
	nameHalf, unitHalf := half(timeName, "algbw", "busbw", "#wrong"), half("(us)", "(GB/s)", "(GB/s)", "")
	top := "           out-of-place                       in-place          "
	if o.PerIter == 1 {
		top = "              out-of-place (+ per-iteration)                                in-place (+ per-iteration)"
		nameHalf += iter("i_min", "i_max", "i_p99", "i_cv%")
		unitHalf += iter("(us)", "(us)", "(us)", "(%)")
	}
	nameLine, unitLine := names+nameHalf+nameHalf, lead("(B)", "(elements)")+unitHalf+unitHalf
	if o.RCCLLayout() || o.RCCLDialect {
		if o.Halves != plan.BothHalves {
			which := map[plan.Halves]string{plan.OutOfPlaceOnly: "out-of-place", plan.InPlaceOnly: "in-place"}[o.Halves]
			top = "           " + which + "          "
			if o.PerIter == 1 {
				top = "              " + which + " (+ per-iteration)"
			}
			nameLine, unitLine = names+nameHalf, lead("(B)", "(elements)")+unitHalf
		}
		extra, extraPad := "", 0
		if o.RCCL.AlgoColumns == 1 {
			extra, extraPad = "algo      proto      nchannels", 28
		}
		nameLine += fmt.Sprintf(" %*s", extraPad, extra)
		unitLine += fmt.Sprintf(" %*s", extraPad, "")
	}
	nameLine += fmt.Sprintf(" %*s", tsPad, tsName)
	unitLine += fmt.Sprintf(" %*s", tsPad, tsFmt)
	if o.AlgoColumn && o.RCCL.AlgoColumns != 1 {
		nameLine += "  algorithm"
	}
	return []string{lead("", "") + top, nameLine, unitLine}
}

// Half is one half of a row, combined over ranks.
type Half struct {
	Ran          bool
	Sec          float64 // reported time per operation (completion time, or host time with -C)
	BWSec        float64 // completion time per operation, which the bandwidths come from (with -C too)
	AlgBW, BusBW float64
	Checked      bool
	Wrong        int64              // of the last validation run
	Errs         collectives.Errors // relative errors over every validation run (MaxRel, SumSqRel, N)
	Iters        [][]float64        // -I: per process, seconds per operation of each iteration
	Rounds       []float64          // --ab: seconds per operation of each round
	Algorithm    string
}

// WrongText is the #wrong column: the count, or N/A when the half was not checked.
func (h Half) WrongText() string {
	if !h.Checked {
		return "N/A"
	}
	return cG(float64(h.Wrong))
}

// Row is one line of the table.
type Row struct {
	Size, Count  int64
	DType, Redop string
	Root         int
	Halves       [2]Half // out-of-place, in-place
	When         time.Time
	Engine       string
	Label        string // --ab: the arm ("KEY=value"), JSON's experiment_name
	Cycle        int    // -N: the pass over the sizes, from 0 for each type and operation
}

// Algorithm names the row's algorithm: the halves' when they agree, else both.
func (r Row) Algorithm() string {
	a, b := r.Halves[0], r.Halves[1]
	switch {
	case !a.Ran:
		return b.Algorithm
	case !b.Ran || a.Algorithm == b.Algorithm:
		return a.Algorithm
	}
	return a.Algorithm + "/" + b.Algorithm
}

// FormatRow renders r as nccl-tests prints it, or in rccl-tests' layout (Options.RCCLLayout): only the halves
// that ran, then -A's columns.
func FormatRow(r Row, o *plan.Options) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%12d  %12d  %8s  %6s  %6d", r.Size, r.Count, r.DType, r.Redop, r.Root)
	for _, h := range r.Halves {
		if !h.Ran {
			continue
		}
		fmt.Fprintf(&b, "  %7s  %6s  %6s", fitNumber(h.Sec*1e6, 7), fitNumber(h.AlgBW, 6), fitNumber(h.BusBW, 6))
		if h.Checked {
			fmt.Fprintf(&b, "  %6s", h.WrongText())
		} else {
			b.WriteString("    N/A") // one column narrower than a count, as nccl-tests prints it
		}
		if o.PerIter == 1 {
			s := IterSummary(h.Iters, o.IterSkip)
			fmt.Fprintf(&b, "  %7s  %7s  %7s  %7s", fitNumber(s.MinUs, 7), fitNumber(s.MaxUs, 7),
				fitNumber(s.P99Us, 7), fitNumber(s.CVPct, 7))
		}
	}
	// rccl-tests stamps the in-place half only: none with -O 1.
	if o.Timestamps == 1 && (!o.RCCLDialect || r.Halves[1].Ran) {
		fmt.Fprintf(&b, "%21s", r.When.Format(TimeLayout))
	}
	if o.RCCL.AlgoColumns == 1 {
		// Our engines know their algorithm; protocol and channels, and a library's choices, are not told
		// through the NCCL API: N/A, as rccl-tests prints where it cannot ask (and, in its dialect, for the
		// collectives it never asks about).
		algo := rcclAlgoName(r.Algorithm())
		if r.Engine == "vendor" || algo == "" || (o.RCCLDialect && !o.RCCLAlgo) {
			algo = "N/A"
		}
		fmt.Fprintf(&b, "%8s  %8s  %10s", algo, "N/A", "N/A")
	}
	if o.AlgoColumn && o.RCCL.AlgoColumns != 1 {
		b.WriteString("  " + r.Algorithm())
	}
	return b.String()
}

// rcclAlgoNames spell our algorithms as RCCL's rcclGetAlgoName spells its own in rccl-tests' -A column
// (Tree, Ring, Direct, MSCCL: capitalized, acronyms in capitals).
var rcclAlgoNames = map[string]string{
	collectives.Ring: "Ring", collectives.Direct: "Direct", collectives.HyperCubeSteps: "HyperCube",
	collectives.DDAFlat: "DDAFlat", collectives.DDATree: "DDATree", collectives.DDA: "DDA",
	collectives.LowPrecision: "LP",
}

// rcclAlgoName is the -A column's name of a row's algorithm (both halves' "a/b" when they differ).
func rcclAlgoName(algo string) string {
	parts := strings.Split(algo, "/")
	for i, p := range parts {
		if n, ok := rcclAlgoNames[p]; ok {
			parts[i] = n
		} else if p != "" {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, "/")
}

// Trailer is what the lines after the table say.
type Trailer struct {
	Binary    string
	OOB       int     // (size, half) cases with wrong elements
	AvgBusBW  float64 // mean busbw of every half of every row
	MinBW     float64 // NCCL_TESTS_MIN_BW, or -1 when unset
	Memory    string  // -M line, "" without
	LastError string
	// Skipped is rccl-tests' skipped hypercube: no rows, and an average of 0/0, which rccl-tests prints as -nan
	// (glibc's %g) and checks against nothing (a comparison with NaN is false).
	Skipped bool
}

// BandwidthOK reports whether the average bus bandwidth meets NCCL_TESTS_MIN_BW (within 10%).
func (t Trailer) BandwidthOK() bool { return t.MinBW < 0 || t.Skipped || t.AvgBusBW >= t.MinBW*0.9 }

// WriteTrailer writes the lines after the table: errors, the average bus bandwidth and the -M line.
func WriteTrailer(w io.Writer, t Trailer) {
	oob := "OK"
	if t.OOB > 0 {
		oob = "FAILED"
	}
	bw := ""
	if t.MinBW >= 0 {
		bw = "OK"
		if !t.BandwidthOK() {
			bw = "FAILED"
		}
	}
	avg := t.AvgBusBW
	if math.IsNaN(avg) {
		avg = 0
	}
	avgText := cG(avg)
	if t.Skipped {
		avgText = "-nan"
	}
	lines := []string{
		fmt.Sprintf("# %-20s : %d %s", "Out of bounds values", t.OOB, oob),
		fmt.Sprintf("# %-20s : %s %s", "Avg bus bandwidth", avgText, bw),
		"#",
		"# Collective test concluded: " + t.Binary,
	}
	if t.Memory != "" {
		lines = append(lines, fmt.Sprintf("# %-20s : %s", "GPU memory usage", t.Memory))
	}
	lines = append(lines, "#")
	if t.LastError != "" {
		lines = append(lines, "# error: "+t.LastError)
	} else {
		lines = append(lines, "")
	}
	fmt.Fprint(w, strings.Join(lines, "\n")+"\n")
}

// MemoryString spells a byte count as nccl-tests' memory report does ("1.50 GB", "12.3 MB", "512 B").
func MemoryString(v float64) string {
	unit := " B"
	for _, u := range []struct {
		size float64
		name string
	}{{1 << 30, " GB"}, {1 << 20, " MB"}, {1 << 10, " KB"}} {
		if math.Abs(v) >= u.size {
			v, unit = v/u.size, u.name
			break
		}
	}
	prec := 0
	switch {
	case math.Abs(v) < 10:
		prec = 2
	case math.Abs(v) < 100:
		prec = 1
	}
	return strconv.FormatFloat(v, 'f', prec, 64) + unit
}
