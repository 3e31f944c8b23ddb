package results

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// Metric names accepted by the gate and the plots.
const (
	MetricBusBW = "busbw"
	MetricTime  = "time"
	MetricAlgBW = "algbw"
)

// GateOptions configures Gate.
type GateOptions struct {
	// Threshold is the largest tolerated regression, as a fraction (0.10).
	Threshold float64
	// Ranges give size ranges their own threshold; the first match wins.
	Ranges []SizeRange
	// Metric is MetricBusBW (a drop fails) or MetricTime (a rise fails).
	Metric string
	// RequireAll makes rows present on one side only failures.
	RequireAll bool
	// AllowMismatch compares the rows two sides share even when they measured different collectives, types,
	// ops, rank counts, halves or A/B arms (otherwise each difference fails).
	AllowMismatch bool
	// HardLimit is the regression of the median time that fails whatever the noise (0: HardFactor times the
	// threshold of the size, for busbw at most MaxHardBusBW).
	HardLimit float64
}

// The gate's verdicts, on a half and on the whole comparison.
const (
	GatePass         = "PASS"         // the interval excludes a regression beyond the threshold
	GateFail         = "FAIL"         // it shows one, or the median passed the hard limit (or a refusal)
	GateInconclusive = "INCONCLUSIVE" // the noise leaves both open
)

// HardFactor is the default hard limit as a multiple of the threshold; a busbw drop cannot reach 100%, so its
// default hard limit stops at MaxHardBusBW.
const (
	HardFactor   = 3
	MaxHardBusBW = 0.9
)

func (o GateOptions) hardFor(size int64) float64 {
	if o.HardLimit > 0 {
		return o.HardLimit
	}
	h := HardFactor * o.thresholdFor(size)
	if o.Metric != MetricTime {
		h = min(h, MaxHardBusBW)
	}
	return h
}

func (o GateOptions) thresholdFor(size int64) float64 {
	for _, r := range o.Ranges {
		if size >= r.Min && size <= r.Max {
			return r.Threshold
		}
	}
	return o.Threshold
}

// GateCheck is the verdict on one half of one row.
type GateCheck struct {
	Label string
	// BaseUs and CurUs are the mean times (us) of all baseline and current samples.
	BaseUs, CurUs float64
	// Change is the relative change of the metric from baseline to current
	// (busbw: negative is worse; time: positive is worse); [Lo, Hi] is its
	// 95% interval when repeated rounds or files give a spread (Noise).
	Change, Lo, Hi float64
	Noise          bool
	Threshold      float64
	// MedianChange is the change of the metric between the median times of each side; Hard is the limit that
	// a regression of it fails beyond, whatever the noise.
	MedianChange, Hard float64
	// Wrong is the number of wrong elements reported in the current run.
	Wrong float64
	// Verdict is GatePass, GateFail or GateInconclusive.
	Verdict string
	// More, for an inconclusive half, is about how many samples each side would need for the interval to
	// decide, were the spread and the change to stay as they are (0: no amount would).
	More   int
	nb, nc int // samples compared on each side
}

// GateReport is the outcome of Gate.
type GateReport struct {
	Metric     string
	RequireAll bool
	Checks     []GateCheck
	// OnlyBase and OnlyCur label the rows found on one side only.
	OnlyBase, OnlyCur []string
	// Incomplete counts current records marked incomplete (interrupted runs): each is a failure.
	Incomplete int
	// Mismatches name what the two sides measured differently (failures unless AllowMismatch), Warnings what
	// they ran on differently, Unread the A/B records whose variable nothing read (failures).
	Mismatches, Warnings, Unread []string
	// Algorithms name the compared rows that ran another algorithm in current than in baseline, one line per
	// pair of algorithms: "64KiB, 128KiB: baseline ring, current dda_flat".
	Algorithms []string
	// OneRun: baseline and current are one file each, so any spread comes from the -N cycles of one run.
	OneRun        bool
	AllowMismatch bool
	rows          int                // rows compared (a row: size, and type, op, root where they vary)
	sizes         map[int64]struct{} // their sizes
}

// sideSamples pools the times (us) of every record of one side of the gate: one sample per run of a row, that
// is per file and per -N cycle (rows repeated within a record, or the rounds that text and CSV output keep for
// them). The interleaved rounds of an A/B run are not runs: each arm gives its mean.
type sideSamples struct {
	order      []rowKey
	times      map[rowKey]*[2][]float64
	wrong      map[rowKey]*[2]float64
	algorithms map[rowKey]*sideSet
}

func poolSide(recs []*Record) sideSamples {
	s := sideSamples{times: map[rowKey]*[2][]float64{}, wrong: map[rowKey]*[2]float64{}, algorithms: map[rowKey]*sideSet{}}
	for _, rec := range recs {
		for _, row := range keyRows(rec) {
			key := row.key
			key.Ordinal = 0
			if s.times[key] == nil {
				s.times[key] = &[2][]float64{}
				s.wrong[key] = &[2]float64{}
				s.algorithms[key] = &sideSet{}
				s.order = append(s.order, key)
			}
			s.algorithms[key].add(row.res.Algorithm)
			for i, h := range row.res.halves() {
				s.times[key][i] = append(s.times[key][i], timeSamples(h, rec.AB == nil)...)
				if h.NWrong != nil {
					s.wrong[key][i] += *h.NWrong
				}
			}
		}
	}
	return s
}

// timeSamples is every round of h (when rounds are runs), or its one reported time.
func timeSamples(h *Half, roundsAreRuns bool) []float64 {
	if len(h.Rounds) > 0 && roundsAreRuns {
		return h.Rounds
	}
	if t, ok := h.Micros(); ok {
		return []float64{t}
	}
	return nil
}

// Gate compares current runs against baseline runs, row by row and half by
// half. A half fails when its metric regressed beyond the threshold of its
// size (the floor of its size range) and, where the runs have a spread, the
// regression lies outside the 95% interval of that run-to-run noise; any
// wrong element in the current run fails. The gate also fails when it
// compared nothing, when the sides measured different things (see shape),
// and on an A/B record whose variable nothing read. A row is compared
// whichever algorithm ran it on either side; the report names the rows
// whose algorithm changed.
// Both metrics are computed from times, so that rounding in text output does
// not matter: at equal size and rank count the busbw ratio is the inverse of
// the time ratio.
func Gate(base, cur []*Record, opt GateOptions) (*GateReport, error) {
	if opt.Metric != MetricBusBW && opt.Metric != MetricTime {
		return nil, fmt.Errorf("gate metric %q: want %s or %s", opt.Metric, MetricBusBW, MetricTime)
	}
	b, c := poolSide(base), poolSide(cur)
	rep := &GateReport{Metric: opt.Metric, RequireAll: opt.RequireAll, AllowMismatch: opt.AllowMismatch,
		OneRun: len(base) == 1 && len(cur) == 1, sizes: map[int64]struct{}{}}
	for _, rec := range cur {
		if rec.Incomplete {
			rep.Incomplete++
		}
	}
	bs, bc := shapeOf(base)
	cs, cc := shapeOf(cur)
	rep.Mismatches = mismatches(shapeFields, bs, cs)
	rep.Warnings = mismatches(contextFields, bc, cc)
	for _, side := range []struct {
		name string
		recs []*Record
	}{{"baseline", base}, {"current", cur}} {
		for i, rec := range side.recs {
			if u := unreadVariable(rec); u != "" {
				rep.Unread = append(rep.Unread, fmt.Sprintf("%s %d is %s", side.name, i+1, u))
			}
		}
	}
	names := newLabeler(append(append([]rowKey{}, b.order...), c.order...))
	var compared []rowKey
	for _, k := range c.order {
		bt, inBase := b.times[k]
		if !inBase {
			rep.OnlyCur = append(rep.OnlyCur, names.label(k))
		}
		counted := false
		for i := range halfNames {
			ct := c.times[k][i]
			chk := GateCheck{Label: names.label(k) + " " + halfNames[i], Wrong: c.wrong[k][i], Threshold: opt.thresholdFor(k.Size)}
			compared := inBase && len(bt[i]) > 0 && len(ct) > 0
			if compared {
				compared = chk.compare(bt[i], ct, opt.Metric, opt.hardFor(k.Size))
			}
			if compared || chk.Wrong > 0 {
				if chk.Wrong > 0 {
					chk.Verdict = GateFail
				}
				rep.Checks = append(rep.Checks, chk)
			}
			counted = counted || compared
		}
		if counted {
			rep.rows++
			rep.sizes[k.Size] = struct{}{}
			compared = append(compared, k)
		}
	}
	rep.Algorithms = algorithmChanges(b, c, compared, names)
	for _, k := range b.order {
		if _, ok := c.times[k]; !ok {
			rep.OnlyBase = append(rep.OnlyBase, names.label(k))
		}
	}
	return rep, nil
}

// algorithmChanges names the keys whose rows ran other algorithms in current than in baseline, grouped by the
// pair of algorithms. Rows without an algorithm (nccl-tests' files) are not compared.
func algorithmChanges(b, c sideSamples, keys []rowKey, names labeler) []string {
	var pairs [][2]string
	labels := map[[2]string][]string{}
	for _, k := range keys {
		pair := [2]string{b.algorithms[k].String(), c.algorithms[k].String()}
		if pair[0] == "" || pair[1] == "" || pair[0] == pair[1] {
			continue
		}
		if labels[pair] == nil {
			pairs = append(pairs, pair)
		}
		labels[pair] = append(labels[pair], names.label(k))
	}
	out := make([]string, len(pairs))
	for i, p := range pairs {
		out[i] = fmt.Sprintf("%s: baseline %s, current %s", abbreviate(labels[p], 8), p[0], p[1])
	}
	return out
}

// compare fills the change of chk from baseline and current times and gives its verdict. The change is the
// one estimator of this package (SpeedupEstimator: the ratio of geometric-mean times), its interval the Welch
// interval of the difference of mean log times. FAIL where the median regressed beyond hard, or the change is
// beyond the threshold and the interval excludes no change; PASS where the interval excludes a regression beyond
// the threshold; else INCONCLUSIVE. It returns false when a side has no time above 0 (nothing to compare).
func (chk *GateCheck) compare(bt, ct []float64, metric string, hard float64) bool {
	lb, lc := logs(bt), logs(ct)
	if len(lb) == 0 || len(lc) == 0 {
		return false
	}
	diff, dlo, dhi, noise := diffInterval(lb, lc) // of log times: current over baseline
	chk.BaseUs, chk.CurUs = GeoMean(bt), GeoMean(ct)
	chk.Noise, chk.Hard, chk.nb, chk.nc = noise, hard, len(bt), len(ct)
	medRatio := Median(ct) / Median(bt)
	// sign turns a log time ratio into a log regression (time: a rise; busbw: a drop); limit is the threshold so.
	sign, limit := 1.0, math.Log1p(chk.Threshold)
	chk.Change, chk.Lo, chk.Hi, chk.MedianChange = math.Expm1(diff), math.Expm1(dlo), math.Expm1(dhi), medRatio-1
	if metric != MetricTime {
		sign, limit = -1, -math.Log1p(-chk.Threshold)
		chk.Change, chk.Lo, chk.Hi, chk.MedianChange = math.Expm1(-diff), math.Expm1(-dhi), math.Expm1(-dlo), 1/medRatio-1
	}
	regression, worst := sign*chk.Change, max(sign*chk.Lo, sign*chk.Hi)
	switch {
	case sign*chk.MedianChange > hard, regression > chk.Threshold && (!noise || dlo > 0):
		chk.Verdict = GateFail // dlo > 0: the current time is higher beyond the noise
	case !noise || worst <= chk.Threshold:
		chk.Verdict = GatePass
	default:
		chk.Verdict = GateInconclusive
		// The interval's half width shrinks as one over the square root of the samples. Above the threshold it
		// decides (FAIL) once it excludes no change, below it (PASS) once it excludes the threshold.
		d := limit - diff
		if regression > chk.Threshold {
			d = diff
		}
		if d > 0 {
			f := math.Pow((dhi-dlo)/2/d, 2)
			chk.More = int(math.Ceil(float64(max(len(bt), len(ct))) * (f - 1)))
		}
	}
	return true
}

// Passed reports whether the verdict is PASS.
func (r *GateReport) Passed() bool { return r.Verdict() == GatePass }

// Verdict is FAIL where a check failed (or, with RequireAll, a row is missing on either side, or the sides
// cannot be compared), else INCONCLUSIVE where the noise left a check undecided, else PASS.
func (r *GateReport) Verdict() string {
	if r.failures() > 0 {
		return GateFail
	}
	if len(r.undecided()) > 0 {
		return GateInconclusive
	}
	return GatePass
}

// undecided are the inconclusive checks, the worst regression first.
func (r *GateReport) undecided() []GateCheck {
	var out []GateCheck
	for _, c := range r.Checks {
		if c.Verdict == GateInconclusive {
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b GateCheck) int { return cmp.Compare(r.regression(b), r.regression(a)) })
	return out
}

func (r *GateReport) failures() int {
	n := r.Incomplete + len(r.Unread)
	if r.rows == 0 {
		n++
	}
	if !r.AllowMismatch {
		n += len(r.Mismatches)
	}
	for _, c := range r.Checks {
		if c.Verdict == GateFail {
			n++
		}
	}
	if r.RequireAll {
		n += len(r.OnlyBase) + len(r.OnlyCur)
	}
	return n
}

// Write prints one line per failing check, the rows found on one side only,
// and a summary line: "gate: PASS (28 sizes, worst -3.1% at 64MiB in-place)".
func (r *GateReport) Write(w io.Writer) error {
	var b strings.Builder
	for _, m := range r.Mismatches {
		word := "FAIL"
		if r.AllowMismatch {
			word = "NOTE"
		}
		fmt.Fprintf(&b, "%s baseline and current differ in %s\n", word, m)
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "WARN baseline and current differ in %s\n", w)
	}
	for _, a := range r.Algorithms {
		fmt.Fprintf(&b, "WARN baseline and current differ in algorithm at %s\n", a)
	}
	for _, u := range r.Unread {
		fmt.Fprintf(&b, "FAIL %s\n", u)
	}
	if r.rows == 0 {
		fmt.Fprintf(&b, "FAIL no size compared: baseline and current share no row with a time on both sides\n")
	}
	for _, c := range r.Checks {
		switch {
		case c.Verdict == GateFail:
			fmt.Fprintf(&b, "FAIL %s\n", r.describe(c))
		case c.Verdict == GateInconclusive:
			fmt.Fprintf(&b, "INCONCLUSIVE %s: the noise leaves a regression beyond the limit open; %s\n", r.describe(c), c.more())
		}
	}
	for _, side := range []struct {
		name   string
		labels []string
	}{{"baseline", r.OnlyBase}, {"current", r.OnlyCur}} {
		if len(side.labels) > 0 {
			fmt.Fprintf(&b, "%s %d rows only in %s: %s\n", missingWord(r.RequireAll), len(side.labels), side.name, abbreviate(side.labels, 8))
		}
	}
	if r.Incomplete > 0 {
		fmt.Fprintf(&b, "FAIL %d current run(s) marked incomplete (interrupted): not a full sweep\n", r.Incomplete)
	}
	if r.OneRun {
		fmt.Fprintf(&b, "NOTE baseline and current are one run each: their -N cycles show the noise within a run, "+
			"not between runs; several baseline files widen the interval where runs differ\n")
	}
	fmt.Fprintf(&b, "gate: %s\n", r.summary())
	_, err := io.WriteString(w, b.String())
	return err
}

// missingWord starts the line on rows found on one side only.
func missingWord(fail bool) string {
	if fail {
		return "FAIL"
	}
	return "NOTE"
}

func (r *GateReport) summary() string {
	worst := -1
	for i, c := range r.Checks {
		if worst < 0 || r.regression(c) > r.regression(r.Checks[worst]) {
			worst = i
		}
	}
	tail := ""
	if worst >= 0 {
		tail = fmt.Sprintf(", worst %s at %s", pct(r.Checks[worst].Change), r.Checks[worst].Label)
	}
	compared := fmt.Sprintf("%d sizes", r.rows)
	if len(r.sizes) != r.rows {
		compared = fmt.Sprintf("%d rows over %d sizes", r.rows, len(r.sizes))
	}
	und := r.undecided()
	switch {
	case r.failures() > 0:
		tail = fmt.Sprintf("%d failures in %s%s", r.failures(), compared, tail)
	case len(und) > 0:
		var worstOnes []string
		need, known := 0, true
		for i, c := range und {
			if i < 3 {
				worstOnes = append(worstOnes, fmt.Sprintf("%s %s", c.Label, pct(c.Change)))
			}
			need, known = max(need, c.More), known && c.More > 0
		}
		more := "more samples"
		if known {
			more = fmt.Sprintf("about %d more samples on each side", need)
		}
		tail = fmt.Sprintf("%d undecided in %s, worst %s; %s (-N cycles in the current run, or more "+
			"baseline runs) would decide", len(und), compared, strings.Join(worstOnes, ", "), more)
	default:
		tail = compared + tail
	}
	return r.Verdict() + " (" + tail + ")"
}

// more says how many samples would decide an inconclusive check.
func (c GateCheck) more() string {
	if c.More <= 0 {
		return "more -N cycles or runs would narrow it"
	}
	return fmt.Sprintf("about %d more samples on each side (now %d baseline, %d current: -N cycles or runs) "+
		"would decide", c.More, c.nb, c.nc)
}

func (r *GateReport) regression(c GateCheck) float64 {
	if r.Metric == MetricTime {
		return c.Change
	}
	return -c.Change
}

func (r *GateReport) describe(c GateCheck) string {
	var parts []string
	if c.BaseUs > 0 {
		limit := -c.Threshold
		if r.Metric == MetricTime {
			limit = c.Threshold
		}
		s := fmt.Sprintf("%s %s (limit %s", r.Metric, pct(c.Change), pct(limit))
		if c.Noise {
			s += fmt.Sprintf(", 95%% CI %s..%s", pct(c.Lo), pct(c.Hi))
		}
		if r.regression(GateCheck{Change: c.MedianChange}) > c.Hard {
			hard := -c.Hard
			if r.Metric == MetricTime {
				hard = c.Hard
			}
			s += fmt.Sprintf("; median %s, beyond the hard limit %s whatever the noise", pct(c.MedianChange), pct(hard))
		}
		parts = append(parts, s+fmt.Sprintf("), time %.2f -> %.2f us (geomean)", c.BaseUs, c.CurUs))
	}
	if c.Wrong > 0 {
		parts = append(parts, fmt.Sprintf("%g wrong elements", c.Wrong))
	}
	return c.Label + ": " + strings.Join(parts, "; ")
}

func pct(f float64) string {
	v := 100 * f
	if math.Abs(v) < 0.05 {
		v = 0 // no "-0.0%"
	}
	return fmt.Sprintf("%+.1f%%", v)
}

// abbreviate joins at most n labels and says how many more there are.
func abbreviate(labels []string, n int) string {
	if len(labels) <= n {
		return strings.Join(labels, ", ")
	}
	return fmt.Sprintf("%s, ... (%d more)", strings.Join(labels[:n], ", "), len(labels)-n)
}
