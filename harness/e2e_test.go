package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/results"
)

// The perf binaries' path with the registered engines (the host engine on this machine).
func hostRun(t *testing.T, coll *collectives.Collective, args ...string) run {
	t.Helper()
	return runWith(t, coll, append([]string{"--engine", "host"}, args...),
		realEngines, nil)
}

func TestHostEngineAllCollectives(t *testing.T) {
	for _, coll := range collectives.All() {
		r := hostRun(t, coll, append([]string{"-b", "8", "-e", "256K", "-f", "8", "-n", "3", "-c", "2"}, threeByTwo(coll)...)...)
		allRight(t, coll, r, 6)
	}
}

// TestHostEngineTypesAndOps runs every type and operation the host engine has, at a few sizes.
func TestHostEngineTypesAndOps(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: every type and operation is slow on 2 cores")
	}
	r := hostRun(t, collectives.AllReduce, "-b", "64", "-e", "4K", "-f", "64", "-d", "all", "-o", "all", "-g", "3",
		"-n", "1")
	if r.code != exit.OK || len(tableRows(r.stdout)) != 2*len(collectives.AllDTypes())*len(collectives.AllOps()) {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestHostEngineDDA: the RCCLX switches reach the engine and show in the header's algorithm lines.
func TestHostEngineDDA(t *testing.T) {
	r := hostRun(t, collectives.AllReduce, "--dda", "-b", "64K", "-e", "1M", "-f", "4", "-g", "8", "-n", "2")
	if r.code != exit.OK || !strings.Contains(r.stdout, "# Env: RCCL_DDA_ENABLE=1") ||
		!strings.Contains(r.stdout, "# Algorithms: 65536-65536 dda_flat, 262144-1048576 dda_tree") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestHostEngineCorruptRank uses the host engine's hook: a flipped bit on one rank fails validation.
func TestHostEngineCorruptRank(t *testing.T) {
	r := hostRun(t, collectives.AllGather, "-b", "1K", "-e", "1K", "-g", "4", "-n", "1", "-E", "RCCLX_TESTS_CORRUPT_RANK=3")
	rows := tableRows(r.stdout)
	if r.code != exit.TestFailed || len(rows) != 1 || rows[0][8] != "1" || rows[0][12] != "1" {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestHostEngineTimeout uses the host engine's hook: a rank that never takes part makes its peers time out.
func TestHostEngineTimeout(t *testing.T) {
	start := time.Now()
	r := hostRun(t, collectives.AllReduce, "-b", "1K", "-e", "1K", "-g", "4", "-T", "1", "-E", "RCCLX_TESTS_SKIP_RANK=2")
	if r.code != exit.Timeout || !strings.HasPrefix(r.stderr, "timeout: rank 2 did not arrive at all_reduce size 1024 (rank ") ||
		strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
}

// TestMainEntryPoint runs the binaries' entry point itself (standard streams redirected to files) with the host engine.
func TestMainEntryPoint(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr := os.Stdout, os.Stderr
	defer func() { os.Stdout, os.Stderr = stdout, stderr }()
	for _, coll := range collectives.All() {
		out, err := os.Create(filepath.Join(dir, coll.Name+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		os.Stdout, os.Stderr = out, out
		code := Main(coll, []string{"-b", "8", "-e", "64K", "-f", "16", "-g", "4", "-u", "3", "-n", "2",
			"-J", filepath.Join(dir, coll.Name+".json")})
		out.Close()
		os.Stdout, os.Stderr = stdout, stderr
		data, _ := os.ReadFile(out.Name())
		rows := tableRows(string(data))
		if code != exit.OK || len(rows) != 4 || rows[3][8] != "0" || len(rows[3]) != 13 {
			t.Errorf("%s: exit %d\n%s", coll.Name, code, data)
		}
		if _, err := results.Load(filepath.Join(dir, coll.Name+".json")); err != nil {
			t.Errorf("%s: %v", coll.Name, err)
		}
	}
}

// TestHostEngineABOfDDA: the A/B the users run, on the host engine's own switch: both arms validated, the B arm
// on DDA, a speedup with its interval per size, every round in the JSON.
func TestHostEngineABOfDDA(t *testing.T) {
	file := filepath.Join(t.TempDir(), "ab.json")
	r := hostRun(t, collectives.AllReduce, "-b", "8", "-e", "64K", "-f", "8", "-g", "8", "-n", "2",
		"--ab", "RCCL_DDA_ENABLE=0,1", "--ab-rounds", "3", "-J", file)
	if r.code != exit.OK || !strings.Contains(r.stdout, "# B Algorithm: dda_flat") || !strings.Contains(r.stdout, "| speedup A/B (geomean of per-cycle time ratios) |") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	rec, err := results.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if rec.AB == nil || len(rec.AB.Rows) != 5 { // 8 B .. 32 KiB by 8
		t.Fatalf("ab key: %+v", rec.AB)
	}
	for _, row := range rec.AB.Rows {
		if len(row.TimesA) != 3 || len(row.TimesB) != 3 || !(row.Lo <= row.Speedup && row.Speedup <= row.Hi) ||
			row.Speedup <= 0 || row.Verdict == "" {
			t.Errorf("row %+v", row)
		}
	}
}
