package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/results"
)

const anchor = "../../results/testdata/nccl-tests-all_reduce.json"

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// slowed writes a copy of the anchor with the out-of-place time at 64 MiB
// raised by factor.
func slowed(t *testing.T, factor float64) string {
	t.Helper()
	rec, err := results.Load(anchor)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rec.Results {
		if rec.Results[i].Size == 64<<20 {
			*rec.Results[i].OutOfPlace.Time *= factor
		}
	}
	path, err := results.Write(filepath.Join(t.TempDir(), "slow.json"), rec)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func TestGateExitCodes(t *testing.T) {
	if code, out, _ := runCLI(t, "gate", "--baseline", anchor, slowed(t, 1)); code != exitOK || !strings.Contains(out, "\ngate: PASS") {
		t.Fatalf("self gate: %d %q", code, out)
	}
	code, out, _ := runCLI(t, "gate", "--baseline", anchor, slowed(t, 1.25))
	if code != exitGateFailed || !strings.Contains(out, "FAIL 64MiB out-of-place: busbw -20.0%") {
		t.Fatalf("planted slowdown: %d %q", code, out)
	}
	if code, _, _ := runCLI(t, "gate", "--baseline", anchor, "--threshold", "25%", slowed(t, 1.25)); code != exitOK {
		t.Fatalf("25%% threshold: %d", code)
	}
	if code, _, _ := runCLI(t, "gate", "--baseline", anchor, "--range", "32M-128M=30%", slowed(t, 1.25)); code != exitOK {
		t.Fatalf("range threshold: %d", code)
	}
}

// A file is one run: given twice it would narrow the noise interval, so the gate refuses it before comparing.
func TestGateRefusesAFileTwice(t *testing.T) {
	copied := filepath.Join(t.TempDir(), "copy.json")
	data, err := os.ReadFile(anchor)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copied, data, 0o644); err != nil {
		t.Fatal(err)
	}
	other := slowed(t, 1)
	respelled, err := filepath.Abs(anchor)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		line string
	}{
		{[]string{"--baseline", anchor, anchor}, anchor + " given twice"},
		{[]string{"--baseline", anchor, "--baseline", respelled, other}, respelled + " given twice"},
		{[]string{"--baseline", anchor, "--baseline", other, copied}, copied + " has the same content as " + anchor},
	} {
		code, out, errOut := runCLI(t, append([]string{"gate"}, tc.args...)...)
		if code != exitUsage || out != "" || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "rcclx-results: "+tc.line) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", tc.args, code, out, errOut)
		}
	}
}

func TestUsageAndInputErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte("{\n \"version\": 3,\n \"results\": [1]\n}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"gate", anchor},
		{"gate", "--baseline", anchor, "--threshold", "ten", anchor},
		{"gate", "--baseline", anchor, "--threshold", "0.1", anchor},
		{"gate", "--baseline", anchor, "--range", "0-64K=0.25", anchor},
		{"gate", "--baseline", anchor, "--range", "64K=1%", anchor},
		{"gate", "--baseline", anchor, "--metric", "speed", anchor},
		{"gate", "--baseline", bad, anchor},
		{"compare", "--nope", anchor},
		{"compare", "missing.json"},
		{"plot", anchor},
		{"plot", "--ab", anchor, "-o", filepath.Join(t.TempDir(), "x.png")},
		{"plot", anchor, "-o", filepath.Join(t.TempDir(), "x.bmp")},
		{"plot", anchor, "-o", bad},
		{"plot", anchor, anchor, "--label", "one", "-o", filepath.Join(t.TempDir(), "x.png")},
		{"frobnicate"},
	} {
		code, _, errOut := runCLI(t, args...)
		if code != exitUsage || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "rcclx-results: ") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	if _, _, errOut := runCLI(t, "gate", "--baseline", bad, anchor); !strings.Contains(errOut, "bad.json: line 3") {
		t.Errorf("malformed file error does not name file and line: %q", errOut)
	}
}

func TestCompareAndPlot(t *testing.T) {
	code, out, _ := runCLI(t, "compare", anchor, slowed(t, 2))
	if code != exitOK || !strings.Contains(out, "0.500x") {
		t.Fatalf("compare: %d\n%s", code, out)
	}
	png := filepath.Join(t.TempDir(), "busbw.png")
	if code, _, errOut := runCLI(t, "plot", anchor, "-o", png); code != exitOK {
		t.Fatalf("plot: %d %s", code, errOut)
	}
	if st, err := os.Stat(png); err != nil || st.Size() < 10000 {
		t.Fatalf("plot output: %v %v", st, err)
	}
	// The deprecated --log is still accepted: the value axis is logarithmic by default.
	svg := filepath.Join(t.TempDir(), "busbw.svg")
	if code, _, errOut := runCLI(t, "plot", anchor, "--log", "--label", "NCCL", "-o", svg, "-o", png, "--force"); code != exitOK {
		t.Fatalf("plot --log: %d %s", code, errOut)
	}
	if data, err := os.ReadFile(svg); err != nil || !strings.Contains(string(data), ">NCCL<") {
		t.Fatalf("plot --label: %v", err)
	}
}

func TestVersionAndCompletion(t *testing.T) {
	code, out, _ := runCLI(t, "--version")
	if code != exitOK || !strings.HasPrefix(out, "rcclx-results (rcclx-tests) ") || !strings.Contains(out, "\ngo:      go") {
		t.Errorf("--version: exit %d\n%s", code, out)
	}
	if code, out, _ := runCLI(t, "__complete", "gate", "--metric", ""); code != exitOK || !strings.Contains(out, "busbw\nalgbw\ntime\n") {
		t.Errorf("--metric completion: exit %d %q", code, out)
	}
}

// rcclCopy writes the anchor, its out-of-place time at 64 MiB multiplied by factor, as rccl-tests' reporter
// file of the given format (-Z csv|json).
func rcclCopy(t *testing.T, format string, factor float64) string {
	t.Helper()
	rec, err := results.Load(anchor)
	if err != nil {
		t.Fatal(err)
	}
	var rows []results.RCCLRow
	for _, r := range rec.Results {
		for i, h := range []results.Half{r.OutOfPlace, r.InPlace} {
			us, ok := h.Micros()
			if !ok {
				continue
			}
			scale := 1.0
			if i == 0 && r.Size == 64<<20 {
				scale = factor
			}
			rows = append(rows, results.RCCLRow{Name: "AllReduce", Size: r.Size, Type: r.Type, Redop: r.Redop,
				InPlace: i == 1, Time: us * scale, AlgBW: h.AlgBW / scale, BusBW: h.BusBW / scale})
		}
	}
	path := filepath.Join(t.TempDir(), "run."+format)
	if err := os.WriteFile(path, results.FormatRCCL(format, results.RCCLLayout{GPUsPerProcess: 2}, rows), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestGateReadsRCCLReporter: gate, compare and plot take rccl-tests' -Z files, and gate catches a planted
// slowdown between a JSON baseline and a CSV run.
func TestGateReadsRCCLReporter(t *testing.T) {
	base, same := rcclCopy(t, "json", 1), rcclCopy(t, "csv", 1)
	if code, out, errOut := runCLI(t, "gate", "--baseline", base, same); code != exitOK || !strings.Contains(out, "\ngate: PASS") {
		t.Fatalf("self gate: %d %q %q", code, out, errOut)
	}
	code, out, _ := runCLI(t, "gate", "--baseline", base, rcclCopy(t, "csv", 1.25))
	if code != exitGateFailed || !strings.Contains(out, "FAIL 64MiB out-of-place") {
		t.Fatalf("planted slowdown: %d %q", code, out)
	}
	if code, _, errOut := runCLI(t, "compare", base, same); code != exitOK {
		t.Fatalf("compare: %d %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "plot", base, same, "-o", filepath.Join(t.TempDir(), "p.svg")); code != exitOK {
		t.Fatalf("plot: %d %s", code, errOut)
	}
}

// withRounds writes a copy of the anchor whose 64 MiB out-of-place time has the -N cycles factors times its own.
func withRounds(t *testing.T, name string, factors ...float64) string {
	return writeRecord(t, name, func(r *results.Record) {
		for i := range r.Results {
			if h := &r.Results[i].OutOfPlace; r.Results[i].Size == 64<<20 {
				m := *h.Time
				h.Rounds = nil
				for _, f := range factors {
					h.Rounds = append(h.Rounds, f*m)
				}
			}
		}
	})
}

// Each verdict has its exit code: INCONCLUSIVE (2) where the noise leaves a regression open, FAIL (1) where the
// median passed the hard limit whatever the noise.
func TestGateVerdictExitCodes(t *testing.T) {
	base := withRounds(t, "base.json", 0.6, 1, 1.4)
	code, out, _ := runCLI(t, "gate", "--baseline", base, withRounds(t, "noisy.json", 0.72, 1.2, 1.68))
	if code != exitGateInconclusive || !strings.Contains(out, "\ngate: INCONCLUSIVE (1 undecided in 28 sizes, worst 64MiB out-of-place -16.7%") {
		t.Errorf("noisy drop: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "gate", "--baseline", base, withRounds(t, "x50.json", 1, 50, 50))
	if code != exitGateFailed || !strings.Contains(out, "beyond the hard limit -30.0% whatever the noise") {
		t.Errorf("x1 x50 x50: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "gate", "--baseline", base, "--hard-limit", "15%", withRounds(t, "noisy2.json", 0.72, 1.2, 1.68))
	if code != exitGateFailed || !strings.Contains(out, "beyond the hard limit -15.0%") {
		t.Errorf("--hard-limit 15%%: exit %d\n%s", code, out)
	}
	for _, bad := range []string{"5%", "x", "0%"} {
		if code, _, errOut := runCLI(t, "gate", "--baseline", base, "--hard-limit", bad, anchor); code != exitUsage ||
			!strings.HasPrefix(errOut, "rcclx-results: --hard-limit") {
			t.Errorf("--hard-limit %s: exit %d, %q", bad, code, errOut)
		}
	}
}

// A file that starts with a UTF-8 byte order mark is read as what follows it.
func TestGateReadsBOM(t *testing.T) {
	data, err := os.ReadFile(anchor)
	if err != nil {
		t.Fatal(err)
	}
	bom := filepath.Join(t.TempDir(), "bom.json")
	if err := os.WriteFile(bom, append([]byte("\xef\xbb\xbf"), data...), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLI(t, "gate", "--baseline", anchor, bom); code != exitOK {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
}
