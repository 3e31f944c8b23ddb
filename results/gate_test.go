package results

import (
	"bytes"
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

func TestGateIdenticalRunsPass(t *testing.T) {
	rec := synthRecord(newRand(), 12, 1, 0, 0)
	rep, out := gate(t, []*Record{rec}, []*Record{rec}, GateOptions{Threshold: 0.1})
	if !rep.Passed() || out != "gate: PASS (12 sizes, worst +0.0% at 8B out-of-place)\n" {
		t.Fatalf("identical runs: %q", out)
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
		if !rep.Passed() || !strings.HasPrefix(out, "gate: PASS (28 sizes") {
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
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "FAIL 4KiB out-of-place: busbw -20.0% (limit -10.0%)") ||
		lines[1] != "gate: FAIL (1 failures in 10 sizes, worst -20.0% at 4KiB out-of-place)" {
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

func TestGateDropInsideNoisePasses(t *testing.T) {
	rng := newRand()
	base := synthRecord(rng, 1, 1, 3, 0)
	cur := synthRecord(rng, 1, 1, 3, 0)
	// Mean time up 20%, but three rounds spread over 0.6x..1.8x: not significant.
	for _, rec := range []*Record{base, cur} {
		h := &rec.Results[0].OutOfPlace
		m := *h.Time
		if rec == cur {
			m *= 1.2
		}
		h.Rounds = []float64{0.6 * m, m, 1.4 * m}
		h.Time = &m
	}
	rep, out := gate(t, []*Record{base}, []*Record{cur}, GateOptions{Threshold: 0.1})
	if !rep.Passed() {
		t.Fatalf("drop inside the noise failed:\n%s", out)
	}
	if c := rep.Checks[0]; !c.Noise || c.Lo > -0.1 || c.Hi < 0 {
		t.Fatalf("interval %+v should span the threshold and zero", c)
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
