package results

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func gate(t *testing.T, base, cur []*Record, opt GateOptions) (*GateReport, string) {
	t.Helper()
	if opt.Metric == "" {
		opt.Metric = MetricBusBW
	}
	rep, err := Gate(base, cur, opt)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := rep.Write(&out); err != nil {
		t.Fatal(err)
	}
	return rep, out.String()
}

// oneRun is the line before the summary of a gate of one file against one file.
const oneRun = "NOTE baseline and current are one run each: their -N cycles show the noise within a run, not between runs; " +
	"several baseline files widen the interval where runs differ"

// summaryLine is the last line of a gate's report.
func summaryLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}

func TestGateIdenticalRunsPass(t *testing.T) {
	rec := synthRecord(newRand(), 12, 1, 0, 0)
	rep, out := gate(t, []*Record{rec}, []*Record{rec}, GateOptions{Threshold: 0.1})
	if !rep.Passed() || out != oneRun+"\ngate: PASS (12 sizes, worst +0.0% at 8B out-of-place)\n" {
		t.Fatalf("identical runs: %q", out)
	}
}

// A run over every root has a row per size and root: the summary counts rows then, not sizes.
func TestGateCountsRowsOfSeveralRoots(t *testing.T) {
	rec := synthRecord(newRand(), 3, 1, 0, 0)
	for _, res := range slices.Clone(rec.Results) {
		res.Root = RootString(1)
		rec.Results = append(rec.Results, res)
	}
	rep, out := gate(t, []*Record{rec}, []*Record{rec}, GateOptions{Threshold: 0.1})
	if !rep.Passed() || !strings.HasPrefix(summaryLine(out), "gate: PASS (6 rows over 3 sizes, worst +0.0% at 8B") {
		t.Fatalf("two roots: %q", out)
	}
}

// An interrupted current run is not a sweep to gate on, however fast its rows.
func TestGateIncompleteRunFails(t *testing.T) {
	base := synthRecord(newRand(), 12, 1, 0, 0)
	cur := *base
	cur.Incomplete = true
	rep, out := gate(t, []*Record{base}, []*Record{&cur}, GateOptions{Threshold: 0.1})
	if rep.Passed() || !strings.Contains(out, "FAIL 1 current run(s) marked incomplete") || !strings.Contains(out, "gate: FAIL") {
		t.Fatalf("incomplete current run: %q", out)
	}
}

func TestGateAnchorAgainstItself(t *testing.T) {
	anchor := loadAnchor(t)
	for _, metric := range []string{MetricBusBW, MetricTime} {
		rep, out := gate(t, []*Record{anchor}, []*Record{anchor}, GateOptions{Threshold: 0.01, Metric: metric})
		if !rep.Passed() || !strings.HasPrefix(summaryLine(out), "gate: PASS (28 sizes") {
			t.Fatalf("%s: %q", metric, out)
		}
	}
}

func TestGatePlantedSlowdownFails(t *testing.T) {
	rng := newRand()
	base := synthRecord(rng, 10, 1, 0, 0)
	cur := synthRecord(rng, 10, 1, 0, 0)
	// 20% less busbw at 4 KiB: the time grows by 1/0.8.
	slow := &cur.Results[9]
	*slow.OutOfPlace.Time /= 0.8
	rep, out := gate(t, []*Record{base}, []*Record{cur}, GateOptions{Threshold: 0.1})
	if rep.Passed() {
		t.Fatalf("20%% slowdown passed: %q", out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "FAIL 4KiB out-of-place: busbw -20.0% (limit -10.0%)") ||
		lines[1] != oneRun || lines[2] != "gate: FAIL (1 failures in 10 sizes, worst -20.0% at 4KiB out-of-place)" {
		t.Fatalf("report:\n%s", out)
	}
	// The same change passes under a looser threshold for that size range.
	loose := GateOptions{Threshold: 0.1, Ranges: []SizeRange{{Min: 2048, Max: 8192, Threshold: 0.25}}}
	if rep, out := gate(t, []*Record{base}, []*Record{cur}, loose); !rep.Passed() {
		t.Fatalf("range threshold ignored: %q", out)
	}
	// With --metric time the rise is +25%.
	if rep, out := gate(t, []*Record{base}, []*Record{cur}, GateOptions{Threshold: 0.1, Metric: MetricTime}); rep.Passed() || !strings.Contains(out, "time +25.0%") {
		t.Fatalf("time metric: %q", out)
	}
}

func TestGateNoisyRoundsWithinThresholdPass(t *testing.T) {
	rng := newRand()
	base := synthRecord(rng, 10, 1, 20, 0.03)
	cur := synthRecord(rng, 10, 1.02, 20, 0.03)
	if rep, out := gate(t, []*Record{base}, []*Record{cur}, GateOptions{Threshold: 0.1}); !rep.Passed() {
		t.Fatalf("2%% slower with 3%% noise failed a 10%% gate:\n%s", out)
	}
}

// roundsApart is one size whose current time is rise times the baseline's, each side's rounds at spread times
// its time.
func roundsApart(rise float64, spread ...float64) (base, cur *Record) {
	rng := newRand()
	base, cur = synthRecord(rng, 1, 1, 3, 0), synthRecord(rng, 1, 1, 3, 0)
	for _, rec := range []*Record{base, cur} {
		h := &rec.Results[0].OutOfPlace
		m := *h.Time
		if rec == cur {
			m *= rise
		}
		h.Rounds = nil
		for _, f := range spread {
			h.Rounds = append(h.Rounds, f*m)
		}
		h.Time = &m
	}
	return base, cur
}

// A drop inside the noise is neither a pass nor a failure: INCONCLUSIVE, with what more data would decide.
func TestGateDropInsideNoiseIsInconclusive(t *testing.T) {
	// Mean time up 20%, but three rounds spread over 0.6x..1.8x: not significant.
	base, cur := roundsApart(1.2, 0.6, 1, 1.4)
	rep, out := gate(t, []*Record{base}, []*Record{cur}, GateOptions{Threshold: 0.1})
	if rep.Verdict() != GateInconclusive || rep.Passed() {
		t.Fatalf("drop inside the noise: %s\n%s", rep.Verdict(), out)
	}
	if c := rep.Checks[0]; !c.Noise || c.Lo > -0.1 || c.Hi < 0 || c.More <= 0 {
		t.Fatalf("interval %+v should span the threshold and zero, and say what more would decide", c)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "INCONCLUSIVE 8B out-of-place: busbw -16.7% (limit -10.0%, 95% CI ") ||
		!strings.Contains(lines[0], "more samples on each side (now 3 baseline, 3 current") ||
		!strings.HasPrefix(lines[2], "gate: INCONCLUSIVE (1 undecided in 1 sizes, worst 8B out-of-place -16.7%; about ") {
		t.Fatalf("report:\n%s", out)
	}
}

// The current run's three cycles at the baseline's times x1, x50, x50: the mean's interval spans no change, but
// the median dropped 98%, beyond the hard limit: FAIL, never PASS.
func TestGateHugeDropWithNoiseFails(t *testing.T) {
	for _, cyc := range [][]float64{{1, 50, 50}, {50, 1, 50}, {0.9, 1.1, 33.3}} {
		want := GateFail
		if Median(cyc) < 2 { // one slow cycle of three: the median did not move, the mean did; nothing decides
			want = GateInconclusive
		}
		base, cur := roundsApart(1, 1, 1, 1)
		h := &cur.Results[0].OutOfPlace
		h.Rounds = nil
		for _, f := range cyc {
			h.Rounds = append(h.Rounds, f**base.Results[0].OutOfPlace.Time)
		}
		rep, out := gate(t, []*Record{base}, []*Record{cur}, GateOptions{Threshold: 0.1})
		if rep.Verdict() != want || want == GateFail && !strings.Contains(out, "beyond the hard limit -30.0% whatever the noise") {
			t.Errorf("cycles x%v: %s\n%s", cyc, rep.Verdict(), out)
		}
	}
	// -97% with any noise fails, in time as in busbw.
	for _, noise := range []float64{0, 0.01, 0.5, 2} {
		rng := newRand()
		base, cur := synthRecord(rng, 4, 1, 5, noise), synthRecord(rng, 4, 1/0.03, 5, noise)
		for _, m := range []string{MetricBusBW, MetricTime} {
			if rep, out := gate(t, []*Record{base}, []*Record{cur}, GateOptions{Threshold: 0.1, Metric: m}); rep.Verdict() != GateFail {
				t.Errorf("-97%% with noise %g (%s): %s\n%s", noise, m, rep.Verdict(), out)
			}
		}
	}
}

// Three baseline runs, one of them far off, and a current run 5.3 times slower (busbw -81%): the pooled
// interval is wide, the median drop is not.
func TestGateNoisyBaselinesDoNotExcuseADrop(t *testing.T) {
	var bases []*Record
	for _, f := range []float64{1, 1.05, 20} {
		b, _ := roundsApart(1, 1, 1, 1)
		*b.Results[0].OutOfPlace.Time *= f
		b.Results[0].OutOfPlace.Rounds = nil
		bases = append(bases, b)
	}
	_, cur := roundsApart(5.33, 1)
	cur.Results[0].OutOfPlace.Rounds = nil
	rep, out := gate(t, bases, []*Record{cur}, GateOptions{Threshold: 0.1})
	if rep.Verdict() != GateFail {
		t.Fatalf("%s\n%s", rep.Verdict(), out)
	}
}

// The hard limit is 3x the threshold unless set: a 25% drop inside wide noise is INCONCLUSIVE under a 10%
// threshold, and FAIL under a hard limit of 20%.
func TestGateHardLimit(t *testing.T) {
	base, cur := roundsApart(1/0.75, 0.5, 1, 1.5)
	if rep, out := gate(t, []*Record{base}, []*Record{cur}, GateOptions{Threshold: 0.1}); rep.Verdict() != GateInconclusive {
		t.Errorf("default hard limit: %s\n%s", rep.Verdict(), out)
	}
	if rep, out := gate(t, []*Record{base}, []*Record{cur}, GateOptions{Threshold: 0.1, HardLimit: 0.2}); rep.Verdict() != GateFail {
		t.Errorf("hard limit 20%%: %s\n%s", rep.Verdict(), out)
	}
	if h := (GateOptions{Threshold: 0.4}).hardFor(8); h != MaxHardBusBW {
		t.Errorf("busbw hard limit at a 40%% threshold = %g, want %g", h, MaxHardBusBW)
	}
	if h := (GateOptions{Threshold: 0.4, Metric: MetricTime}).hardFor(8); math.Abs(h-1.2) > 1e-12 {
		t.Errorf("time hard limit at a 40%% threshold = %g, want 1.2", h)
	}
}

func TestGatePooledBaselines(t *testing.T) {
	rng := newRand()
	var bases []*Record
	for i := 0; i < 4; i++ {
		bases = append(bases, synthRecord(rng, 8, 1+0.01*float64(i), 0, 0))
	}
	if rep, out := gate(t, bases, []*Record{synthRecord(rng, 8, 1.3, 0, 0)}, GateOptions{Threshold: 0.1}); rep.Passed() {
		t.Fatalf("30%% slower than four pooled baselines passed:\n%s", out)
	}
	if rep, out := gate(t, bases, []*Record{synthRecord(rng, 8, 1.02, 0, 0)}, GateOptions{Threshold: 0.1}); !rep.Passed() {
		t.Fatalf("within the pooled baselines failed:\n%s", out)
	}
}

// A file against a file has only the spread within one run; with several baseline files the report has no such
// line.
func TestGateNotesOneRunEach(t *testing.T) {
	rng := newRand()
	base, cur := cycles(rng, 3, 4, 1, 0.01), cycles(rng, 3, 4, 1, 0.01)
	if _, out := gate(t, []*Record{base}, []*Record{cur}, GateOptions{Threshold: 0.1}); !strings.Contains(out, oneRun+"\ngate: ") {
		t.Errorf("one run each, no note before the summary:\n%s", out)
	}
	bases := []*Record{base, cycles(rng, 3, 4, 1, 0.01)}
	if _, out := gate(t, bases, []*Record{cur}, GateOptions{Threshold: 0.1}); strings.Contains(out, "one run") {
		t.Errorf("two baseline files, yet a note:\n%s", out)
	}
}

// ran sets the engine of every row of rec, and the algorithm of row i to algorithms[i].
func ran(rec *Record, engine string, algorithms ...string) *Record {
	for i := range rec.Results {
		rec.Results[i].Engine, rec.Results[i].Algorithm = engine, algorithms[i]
	}
	return rec
}

// slowLast multiplies both halves' times of rec's last row by f.
func slowLast(rec *Record, f float64) *Record {
	last := &rec.Results[len(rec.Results)-1]
	*last.OutOfPlace.Time *= f
	*last.InPlace.Time *= f
	return rec
}

// A build may change the algorithm a size runs: the gate compares the size all the same and names the change.
func TestGateComparesAcrossAlgorithms(t *testing.T) {
	rng := newRand()
	dda := func() *Record {
		return ran(synthRecord(rng, 4, 1, 0, 0), "host", "dda_flat", "dda_flat", "dda_flat", "dda_tree")
	}
	cur := slowLast(ran(synthRecord(rng, 4, 1, 0, 0), "host", "dda_flat", "dda_flat", "dda_flat", "ring"), 70)
	rep, out := gate(t, []*Record{dda()}, []*Record{cur}, GateOptions{Threshold: 0.1, Ranges: []SizeRange{{Min: 0, Max: 32, Threshold: 0.999}}})
	for _, want := range []string{"WARN baseline and current differ in algorithm at 64B: baseline dda_tree, current ring\n",
		"FAIL 64B out-of-place: busbw -98.6%", "FAIL 64B in-place: busbw -98.6%", "gate: FAIL (2 failures in 4 sizes"} {
		if rep.Passed() || !strings.Contains(out, want) {
			t.Errorf("70x slower under another algorithm: no %q:\n%s", want, out)
		}
	}
	// A plain run (ring) against a DDA run of the same times passes, and says where the algorithms differ.
	plain := ran(synthRecord(rng, 4, 1, 0, 0), "host", "ring", "ring", "ring", "ring")
	rep, out = gate(t, []*Record{plain}, []*Record{dda()}, GateOptions{Threshold: 0.1})
	for _, want := range []string{"WARN baseline and current differ in algorithm at 8B, 16B, 32B: baseline ring, current dda_flat\n",
		"WARN baseline and current differ in algorithm at 64B: baseline ring, current dda_tree\n", "gate: PASS (4 sizes"} {
		if !rep.Passed() || !strings.Contains(out, want) {
			t.Errorf("same times under other algorithms: no %q:\n%s", want, out)
		}
	}
}

// In a record of several engines the engine stays part of a row: vendor is compared with vendor, gpu with gpu,
// whichever algorithm gpu ran.
func TestGateEnginesAcrossAlgorithms(t *testing.T) {
	rng := newRand()
	both := func(last string, f float64) *Record {
		rec := ran(synthRecord(rng, 4, 1, 0, 0), "vendor", "nccl", "nccl", "nccl", "nccl")
		gpu := slowLast(ran(synthRecord(rng, 4, 0.5, 0, 0), "gpu", "dda_flat", "dda_flat", "dda_flat", last), f)
		rec.Results = append(rec.Results, gpu.Results...)
		return rec
	}
	rep, out := gate(t, []*Record{both("dda_tree", 1)}, []*Record{both("ring", 70)}, GateOptions{Threshold: 0.1})
	if rep.Passed() || strings.Count("\n"+out, "\nFAIL ") != 2 || strings.Count(out, "FAIL gpu 64B float sum ") != 2 ||
		!strings.Contains(out, "WARN baseline and current differ in algorithm at gpu 64B float sum: baseline dda_tree, current ring\n") ||
		!strings.Contains(out, "gate: FAIL (2 failures in 8 rows over 4 sizes") {
		t.Fatalf("gpu 70x slower under another algorithm:\n%s", out)
	}
}

func TestGateWrongResultsFail(t *testing.T) {
	rec := synthRecord(newRand(), 4, 1, 0, 0)
	bad := synthRecord(newRand(), 4, 1, 0, 0)
	wrong := 3.0
	bad.Results[1].InPlace.NWrong = &wrong
	rep, out := gate(t, []*Record{rec}, []*Record{bad}, GateOptions{Threshold: 10})
	if rep.Passed() || !strings.Contains(out, "FAIL 16B in-place:") || !strings.Contains(out, "3 wrong elements") {
		t.Fatalf("wrong results passed:\n%s", out)
	}
}

func TestGateMissingSizes(t *testing.T) {
	rng := newRand()
	base := synthRecord(rng, 6, 1, 0, 0)
	cur := synthRecord(rng, 4, 1, 0, 0)
	rep, out := gate(t, []*Record{base}, []*Record{cur}, GateOptions{Threshold: 0.1})
	if !rep.Passed() || !strings.Contains(out, "NOTE 2 rows only in baseline: 128B, 256B") {
		t.Fatalf("missing sizes:\n%s", out)
	}
	rep, out = gate(t, []*Record{base}, []*Record{cur}, GateOptions{Threshold: 0.1, RequireAll: true})
	if rep.Passed() || !strings.Contains(out, "FAIL 2 rows only in baseline") || !strings.Contains(out, "gate: FAIL (2 failures") {
		t.Fatalf("--require-all:\n%s", out)
	}
}

func TestGateBadMetric(t *testing.T) {
	if _, err := Gate(nil, nil, GateOptions{Metric: "algbw"}); err == nil {
		t.Fatal("algbw accepted as a gate metric")
	}
}

// cycles is a record of n -N cycles of synthRecord: each row repeated once per cycle, as this suite writes -N.
func cycles(rng *rand.Rand, n, sizes int, factor, noise float64) *Record {
	rec := synthRecord(rng, sizes, factor, 0, 0)
	rec.Results = nil
	for range n {
		rec.Results = append(rec.Results, synthRecord(rng, sizes, factor*(1+noise*rng.NormFloat64()), 0, 0).Results...)
	}
	return rec
}

// Two runs of three -N cycles each, 0.5% apart at random, pass; the same with a 15% slowdown planted in one size
// range fail there and only there, whatever the range.
func TestGateCyclesPlantedFifteenPercent(t *testing.T) {
	rng := newRand()
	opt := GateOptions{Threshold: 0.10}
	base := cycles(rng, 3, 12, 1, 0.005)
	if rep, out := gate(t, []*Record{base}, []*Record{cycles(rng, 3, 12, 1, 0.005)}, opt); !rep.Passed() {
		t.Fatalf("identical runs failed:\n%s", out)
	}
	for _, lo := range []int64{8, 256, 4096} {
		cur := cycles(rng, 3, 12, 1, 0.005)
		for i := range cur.Results {
			if r := &cur.Results[i]; r.Size >= lo && r.Size < 8*lo {
				*r.OutOfPlace.Time *= 1.15
			}
		}
		rep, out := gate(t, []*Record{base}, []*Record{cur}, opt)
		if rep.Passed() || strings.Count("\n"+out, "\nFAIL ") != 3 ||
			!strings.Contains(out, "FAIL "+FormatSize(lo)+" out-of-place: busbw -1") {
			t.Fatalf("15%% slower at %s..%s:\n%s", FormatSize(lo), FormatSize(4*lo), out)
		}
	}
}

// A gate that compares nothing, or compares different things, cannot pass; each difference is one line.
func TestGateDisjointRunsFail(t *testing.T) {
	rng := newRand()
	base := synthRecord(rng, 6, 1, 0, 0)
	base.Config.Devices = []Device{{Rank: 0}, {Rank: 1}} // as this suite's JSON lists every rank
	for _, tc := range []struct {
		name, line string
		change     func(r *Record)
		allowed    bool // passes with AllowMismatch
	}{
		{"collective", "FAIL baseline and current differ in collective: baseline all_reduce, current all_gather",
			func(r *Record) { r.Args = []string{"./all_gather_perf"} }, true},
		{"type", "FAIL baseline and current differ in type: baseline float, current half",
			func(r *Record) { r.Results = retype(r.Results, "half") }, false},
		{"op", "FAIL baseline and current differ in op: baseline sum, current max",
			func(r *Record) {
				for i := range r.Results {
					r.Results[i].Redop = "max"
				}
			}, false},
		{"ranks", "FAIL baseline and current differ in rank count: baseline 2, current 8",
			func(r *Record) {
				for i := range r.Results {
					r.Results[i].OutOfPlace.BusBW *= 1.75
					r.Results[i].InPlace.BusBW *= 1.75
				}
				r.Config.Devices = nil // this suite's JSON lists every rank
				for k := range 8 {
					r.Config.Devices = append(r.Config.Devices, Device{Rank: k})
				}
			}, true},
		{"halves", "FAIL baseline and current differ in halves (-O): baseline in-place,out-of-place, current out-of-place",
			func(r *Record) {
				for i := range r.Results {
					r.Results[i].InPlace = Half{}
				}
			}, true},
		{"empty", "FAIL no size compared: baseline and current share no row with a time on both sides", func(r *Record) { r.Results = nil }, false},
		{"ab", "FAIL baseline and current differ in A/B arms: baseline none, current K=0 vs K=1",
			func(r *Record) {
				arms := append(r.Results, r.Results...)
				for i := range arms {
					arms[i].ExperimentName = []string{"K=0", "K=1"}[i/len(r.Results)]
				}
				r.Results, r.AB = arms, &ABReport{Arms: [2]string{"K=0", "K=1"}}
			}, false},
	} {
		cur := synthRecord(rng, 6, 1, 0, 0)
		tc.change(cur)
		rep, out := gate(t, []*Record{base}, []*Record{cur}, GateOptions{Threshold: 0.1})
		if rep.Passed() || !strings.Contains(out, tc.line+"\n") || !strings.Contains(out, "gate: FAIL") {
			t.Errorf("%s: passed or no line %q:\n%s", tc.name, tc.line, out)
		}
		rep, out = gate(t, []*Record{base}, []*Record{cur}, GateOptions{Threshold: 0.1, AllowMismatch: true})
		if rep.Passed() != tc.allowed {
			t.Errorf("%s with AllowMismatch: passed %v, want %v:\n%s", tc.name, rep.Passed(), tc.allowed, out)
		}
	}
}

func retype(rs []Result, typ string) []Result {
	for i := range rs {
		rs[i].Type = typ
	}
	return rs
}

// What a run ran on may be the change under test: a warning, not a failure.
func TestGateContextWarns(t *testing.T) {
	rng := newRand()
	base, cur := synthRecord(rng, 4, 1, 0, 0), synthRecord(rng, 4, 1, 0, 0)
	base.Engine, cur.Engine = "vendor", "gpu"
	base.NcclVersion, cur.NcclVersion = 22803, 22703
	rep, out := gate(t, []*Record{base}, []*Record{cur}, GateOptions{Threshold: 0.1})
	if !rep.Passed() || !strings.Contains(out, "WARN baseline and current differ in engine: baseline vendor, current gpu\n") ||
		!strings.Contains(out, "WARN baseline and current differ in library version: baseline 22803, current 22703\n") {
		t.Fatalf("context differences:\n%s", out)
	}
}

// An A/B baseline whose variable the library never reads measured one configuration twice.
func TestGateUnreadABVariableFails(t *testing.T) {
	rng := newRand()
	mk := func(read bool) *Record {
		r := synthRecord(rng, 4, 1, 0, 0)
		r.AB = &ABReport{Arms: [2]string{"RCCL_DDA_ENABLE=0", "RCCL_DDA_ENABLE=1"}, VariableRead: &read,
			Library: "/lib/libnccl.so.2"}
		return r
	}
	if rep, out := gate(t, []*Record{mk(true)}, []*Record{mk(true)}, GateOptions{Threshold: 0.1}); !rep.Passed() {
		t.Fatalf("A/B runs of a read variable:\n%s", out)
	}
	rep, out := gate(t, []*Record{mk(false)}, []*Record{mk(true)}, GateOptions{Threshold: 0.1})
	want := "FAIL baseline 1 is an A/B run of RCCL_DDA_ENABLE, which /lib/libnccl.so.2 never reads: both arms ran the same\n"
	if rep.Passed() || !strings.Contains(out, want) {
		t.Fatalf("unread variable:\n%s", out)
	}
}
