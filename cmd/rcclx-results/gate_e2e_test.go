package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness"
	"github.com/rcclx-tests/rcclx-tests/results"
)

// perfEnv makes a re-executed test binary run all_reduce_perf: RCCLX_TESTS_DELAY_US is read once per process,
// so a run with a planted delay needs a process of its own.
const perfEnv = "RCCLX_RESULTS_TEST_PERF"

func TestMain(m *testing.M) {
	if os.Getenv(perfEnv) != "" {
		os.Exit(harness.Main(collectives.AllReduce, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// writeRecord writes a changed copy of the anchor.
func writeRecord(t *testing.T, name string, change func(*results.Record)) string {
	t.Helper()
	rec, err := results.Load(anchor)
	if err != nil {
		t.Fatal(err)
	}
	change(rec)
	path, err := results.Write(filepath.Join(t.TempDir(), name), rec)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// Files that share no row, or measured something else, fail the gate with a line saying why.
func TestGateDisjointFiles(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		change     func(*results.Record)
	}{
		{"all_gather", "FAIL baseline and current differ in collective: baseline all_reduce, current all_gather",
			func(r *results.Record) { r.Args[0] = "./build/all_gather_perf" }},
		{"half", "FAIL baseline and current differ in type: baseline float, current half",
			func(r *results.Record) {
				for i := range r.Results {
					r.Results[i].Type = "half"
				}
			}},
		{"empty", "FAIL no size compared", func(r *results.Record) { r.Results = []results.Result{} }},
		{"ab", "FAIL baseline and current differ in A/B arms: baseline none, current RCCL_DDA_ENABLE=0 vs RCCL_DDA_ENABLE=1",
			func(r *results.Record) {
				r.AB = &results.ABReport{Arms: [2]string{"RCCL_DDA_ENABLE=0", "RCCL_DDA_ENABLE=1"}}
				for i := range r.Results {
					r.Results[i].ExperimentName = "RCCL_DDA_ENABLE=1"
				}
			}},
	} {
		cur := writeRecord(t, tc.name+".json", tc.change)
		code, out, _ := runCLI(t, "gate", "--baseline", anchor, cur)
		if code != exitGateFailed || !strings.Contains(out, tc.line) || !strings.Contains(out, "gate: FAIL") {
			t.Errorf("%s: exit %d\n%s", tc.name, code, out)
		}
	}
}

// A threshold no busbw drop can exceed would make a gate that never fails.
func TestGateThresholdAbove100(t *testing.T) {
	for _, args := range [][]string{
		{"--threshold", "150%"},
		{"--threshold", "100"},
		{"--range", "0-64K=200%"},
	} {
		code, out, errOut := runCLI(t, append(append([]string{"gate", "--baseline", anchor}, args...), anchor)...)
		if code != exitUsage || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, args[1]) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	if code, out, errOut := runCLI(t, "gate", "--baseline", anchor, "--metric", "time", "--threshold", "150%", slowed(t, 1)); code != exitOK {
		t.Errorf("a 150%% rise in time is a valid threshold: exit %d %s %s", code, out, errOut)
	}
}

// The README's CI recipe on the host engine: a baseline of three runs of -N 3 and a run back to back pass; the
// same with a planted delay in every call fails. The host engine shares 2 CPU cores with other jobs in CI, where a cycle of a size can take
// several times another's and a loaded machine (other test packages beside it) slows a whole run: the floor is
// a time 4x the baseline's, and the delay (10 ms a call against ~0.1-1 ms) makes the planted run 11-100x
// slower. The gate's sensitivity to a 15%
// slowdown is tested on records (results package).
func TestGateHostRunsBackToBack(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the host engine")
	}
	dir := t.TempDir()
	perf := func(name, delay string) string {
		out := filepath.Join(dir, name)
		cmd := exec.Command(os.Args[0], "--engine", "host", "-b", "1M", "-e", "2M", "-f", "2", "-g", "2",
			"-n", "10", "-w", "2", "-N", "3", "-J", out)
		cmd.Env = append(os.Environ(), perfEnv+"=1", collectives.EnvDelayUS+"="+delay)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("all_reduce_perf: %v\n%s", err, b)
		}
		return out
	}
	gate := []string{"gate", "--metric", "time", "--threshold", "300%"}
	for _, name := range []string{"base1.json", "base2.json", "base3.json"} {
		gate = append(gate, "--baseline", perf(name, "0"))
	}
	same, slow := perf("same.json", "0"), perf("slow.json", "10000")
	// Identical runs never fail; on a loaded machine their noise may leave a size undecided (INCONCLUSIVE).
	code, out, errOut := runCLI(t, append(gate, same)...)
	if code != exitOK && code != exitGateInconclusive || strings.HasPrefix(out, "FAIL ") || strings.Contains(out, "\nFAIL ") ||
		!strings.Contains("\n"+out, "\ngate: PASS (2 sizes") && !strings.Contains("\n"+out, "\ngate: INCONCLUSIVE (") {
		t.Fatalf("identical runs: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runCLI(t, append(gate, slow)...)
	if code != exitGateFailed || !strings.HasPrefix(out, "FAIL ") || !strings.Contains(out, "\ngate: FAIL (") {
		t.Fatalf("planted delay: exit %d\n%s", code, out)
	}
}
