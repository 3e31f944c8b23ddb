package harness

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/engines"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/results"
)

var newColls = []*collectives.Collective{collectives.Broadcast, collectives.Reduce, collectives.Gather,
	collectives.Scatter, collectives.SendRecv, collectives.AllToAllV, collectives.HyperCube}

// hostRunEnv is hostRun with a process environment.
func hostRunEnv(t *testing.T, coll *collectives.Collective, env map[string]string, args ...string) run {
	t.Helper()
	return runWith(t, coll, append([]string{"--engine", "host"}, args...),
		engineSource{names: engines.Names, open: engines.New}, func(a *app) {
			a.getenv = func(k string) string { return env[k] }
		})
}

// fakeRunEnv runs the fake engine e with a process environment.
func fakeRunEnv(t *testing.T, coll *collectives.Collective, e *fakeEngine, env map[string]string, args ...string) run {
	t.Helper()
	return runWith(t, coll, append([]string{"--engine", e.Name()}, args...), fakeSource(e), func(a *app) {
		a.getenv = func(k string) string { return env[k] }
	})
}

// usageFailure fails unless r is one line on stderr naming what, exit code 1 and nothing on stdout.
func usageFailure(t *testing.T, r run, what string) {
	t.Helper()
	if r.code != exit.Usage || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, what) {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and one line naming %q", r.code, r.stdout, r.stderr, what)
	}
}

// TestEveryRootEveryTypeAndOp: -r -1 on 5 ranks with every type and op of each new binary (odd sizes);
// every row is right, in nccl-tests' nesting.
func TestEveryRootEveryTypeAndOp(t *testing.T) {
	for _, coll := range newColls {
		g := "5"
		if coll == collectives.HyperCube {
			g = "4"
		}
		r := hostRun(t, coll, "-g", g, "-b", "4", "-e", "3000", "-f", "25", "-d", "all", "-o", "all", "-r", "-1",
			"-n", "1", "-w", "0")
		rows := tableRows(r.stdout)
		want := 3 * len(collectives.AllDTypes()) // sizes 4, 100, 2500
		if coll.SweepsOps() {
			want *= len(collectives.AllOps())
		}
		if coll.Rooted {
			want *= 5
		}
		allRight(t, coll, r, want)
		if !coll.Rooted {
			continue
		}
		for i, f := range rows { // type, op, root, size: the root changes every three rows
			if root := (i / 3) % 5; f[4] != []string{"0", "1", "2", "3", "4"}[root] {
				t.Errorf("%s row %d: root %s, want %d", coll.Name, i, f[4], root)
				break
			}
		}
	}
}

// TestPlantedWrongElementCaught: the corrupt hook's flipped bit shows as #wrong 1 and exit 7 in every binary.
func TestPlantedWrongElementCaught(t *testing.T) {
	for _, coll := range newColls {
		r := hostRun(t, coll, "-g", "4", "-b", "1K", "-e", "1K", "-n", "1", "-r", "3", "-E", "RCCLX_TESTS_CORRUPT_RANK=3")
		rows := tableRows(r.stdout)
		if r.code != exit.TestFailed || len(rows) != 1 || rows[0][8] != "1" {
			t.Errorf("%s: exit %d\n%s%s", coll.Name, r.code, r.stdout, r.stderr)
		}
	}
}

func TestRootOutOfRange(t *testing.T) {
	usageFailure(t, hostRun(t, collectives.Broadcast, "-g", "3", "-r", "3"), "-r/--root")
	r := hostRun(t, collectives.AllReduce, "-g", "2", "-b", "64", "-e", "64", "-r", "5")
	if r.code != exit.OK || !strings.Contains(r.stdout, "# -r 5 ignored: all_reduce has no root") {
		t.Errorf("all_reduce -r 5: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestHyperCubeNeedsPowerOfTwo(t *testing.T) {
	for _, g := range []string{"3", "5", "6", "7"} {
		usageFailure(t, hostRun(t, collectives.HyperCube, "-g", g), "power-of-two")
	}
	for _, g := range []string{"1", "2", "8"} {
		allRight(t, collectives.HyperCube, hostRun(t, collectives.HyperCube, "-g", g, "-b", "1K", "-e", "1K", "-n", "1"), 1)
	}
}

func TestAllToAllVMatrixErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "0 32 64\n16 0 16\n48 48 0\n")
	for _, c := range []struct {
		file, what string
		args       []string
	}{
		{write("ragged", "1 2 3\n4 5\n6 7 8\n"), "row 1 has 2 columns", nil},
		{write("notsquare", "1 2 3\n4 5 6\n"), "must be square", nil},
		{write("negative", "1 -2\n3 4\n"), "negative", nil},
		{write("nan", "1 x\n3 4\n"), "not a number", nil},
		{write("empty", "\n \n"), "empty", nil},
		{write("small", "1 2\n3 4\n"), "smaller than the 3 ranks", nil},
		{filepath.Join(dir, "missing"), "cannot read", nil},
		{good, "-b and -e must be equal", []string{"-b", "64", "-e", "1K"}},
		{good, "-e must be at least 96", []string{"-b", "64", "-e", "64"}},
	} {
		args := c.args
		if args == nil {
			args = []string{"-b", "1K", "-e", "1K"}
		}
		r := hostRunEnv(t, collectives.AllToAllV, map[string]string{"NCCL_TESTS_ALLTOALLV_MATRIX_FILE": c.file},
			append([]string{"-g", "3"}, args...)...)
		usageFailure(t, r, c.what)
	}
	// The good matrix, scaled by 2: ranks 0 and 2 send 192 bytes, rank 2 receives 160: the size column is 192, the
	// count column 0; the summary lines follow each half.
	env := map[string]string{"NCCL_TESTS_ALLTOALLV_MATRIX_FILE": good, "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE": "2",
		"NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY": "1"}
	r := hostRunEnv(t, collectives.AllToAllV, env, "-g", "3", "-b", "256", "-e", "256", "-d", "all", "-n", "1")
	rows := allRight(t, collectives.AllToAllV, r, len(collectives.AllDTypes()))
	if rows[0][0] != "192" || rows[0][1] != "0" {
		t.Errorf("row %v, want size 192 count 0", rows[0])
	}
	for _, want := range []string{"# NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY: mode=matrix nranks=3 matrix_dim=3 scale=2.000 time_usec=",
		"#   rank=2 send_bytes=192 recv_bytes=160 alg_bw="} {
		if n := strings.Count(r.stdout, want); n != 2*len(rows) {
			t.Errorf("%d lines %q, want %d\n%s", n, want, 2*len(rows), r.stdout)
		}
	}
}

// TestAllToAllVSummaryTimeWithCPUTime: under -C 1 the time column is the host's, but the summary lines, like
// the bandwidth columns, come from the completion time (nccl-tests hands its getBw the device time).
func TestAllToAllVSummaryTimeWithCPUTime(t *testing.T) {
	seed := rand.Uint64()
	e := newFake(seed)
	e.waitDelay = 20 * time.Millisecond // one Wait per timed loop of -n 2: about 10 ms per operation
	r := fakeRunEnv(t, collectives.AllToAllV, e, map[string]string{"NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY": "1"},
		seedArgs(seed, "-g", "2", "-b", "1M", "-e", "1M", "-n", "2", "-C", "1", "-O", "1")...)
	if r.code != exit.OK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var us float64
	for _, line := range strings.Split(r.stdout, "\n") {
		if i := strings.Index(line, "time_usec="); i >= 0 {
			us, _ = strconv.ParseFloat(line[i+len("time_usec="):], 64)
		}
	}
	if us < 5000 {
		t.Errorf("summary time_usec %v, want the completion time (~10000 us), not the host's\n%s", us, r.stdout)
	}
}

// TestAllToAllVMatrixTailChecked: in matrix mode a rank's receive buffer past its own total must keep what it
// held, as nccl-tests checks: an engine that writes the last byte of every receive view is caught on rank 0
// (which receives 32 of 64 bytes) and nowhere else (rank 1's view ends in defined bytes, written afterwards).
func TestAllToAllVMatrixTailChecked(t *testing.T) {
	matrix := filepath.Join(t.TempDir(), "matrix")
	if err := os.WriteFile(matrix, []byte("0 64\n32 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, scribble := range []bool{false, true} {
		seed := rand.Uint64()
		e := newFake(seed)
		if scribble {
			e.onLaunch = func(call *collectives.Call) {
				for l, v := range call.Recv {
					if b, err := span(v, call.Counts[l].Recv); err == nil && len(b) > 0 {
						b[len(b)-1] ^= 0x40
					}
				}
			}
		}
		r := fakeRunEnv(t, collectives.AllToAllV, e, map[string]string{"NCCL_TESTS_ALLTOALLV_MATRIX_FILE": matrix},
			seedArgs(seed, "-g", "2", "-b", "64", "-e", "64", "-n", "1", "-w", "0", "-d", "int8", "-O", "1")...)
		want, wrong := exit.OK, "0"
		if scribble {
			want, wrong = exit.TestFailed, "1"
		}
		if rows := tableRows(r.stdout); r.code != want || len(rows) != 1 || rows[0][8] != wrong {
			t.Errorf("scribbling %v: exit %d (want %d), rows %v\n%s%s", scribble, r.code, want, rows, r.stdout, r.stderr)
		}
	}
}

// TestAllToAllVSpread: spread 0 is uniform (every peer gets the same), spread 1 weights by distance; both
// check out, and the count column is the per-peer share of the size.
func TestAllToAllVSpread(t *testing.T) {
	for _, spread := range []string{"0", "0.5", "1", ""} {
		r := hostRunEnv(t, collectives.AllToAllV, map[string]string{"NCCL_TESTS_ALLTOALLV_SPREAD": spread},
			"-g", "5", "-b", "7K", "-e", "7K", "-d", "all", "-n", "1")
		rows := allRight(t, collectives.AllToAllV, r, len(collectives.AllDTypes()))
		if rows[7][1] != "356" { // float: 7168/4/5 = 358.4, rounded down to 4 elements
			t.Errorf("spread %s: count %s, want 356", spread, rows[7][1])
		}
	}
	k := collectives.AllToAllV.Counts(7<<10, 5, 0, collectives.Float)
	if k.SendCounts[0] != 0 || k.SendCounts[4] <= k.SendCounts[1] {
		t.Errorf("spread 1: rank 0 sends %v, want nothing to itself and more to farther peers", k.SendCounts)
	}
}

// TestAllToAllVBadVariables: a value the pattern's readers refuse (nccl-tests would read a word as 0 or the
// default, clamp a spread, and send nothing with a negative scale) is bad input, from the environment or -E.
func TestAllToAllVBadVariables(t *testing.T) {
	for _, kv := range [][2]string{
		{"NCCL_TESTS_ALLTOALLV_SPREAD", "bogus"}, {"NCCL_TESTS_ALLTOALLV_SPREAD", "1.5"},
		{"NCCL_TESTS_ALLTOALLV_SPREAD", "-0.5"}, {"NCCL_TESTS_ALLTOALLV_SPREAD", "nan"},
		{"NCCL_TESTS_ALLTOALLV_MATRIX_SCALE", "-1"}, {"NCCL_TESTS_ALLTOALLV_MATRIX_SCALE", "0"},
		{"NCCL_TESTS_ALLTOALLV_MATRIX_SCALE", "abc"}, {"NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY", "yes"},
	} {
		what := fmt.Sprintf("%s=%q", kv[0], kv[1])
		usageFailure(t, hostRunEnv(t, collectives.AllToAllV, map[string]string{kv[0]: kv[1]}, "-g", "3"), what)
		usageFailure(t, hostRun(t, collectives.AllToAllV, "-g", "3", "-E", kv[0]+"="+kv[1]), what)
	}
}

// TestNewBinariesJSON: -J of each binary loads, with the root column as nccl-tests writes it.
func TestNewBinariesJSON(t *testing.T) {
	dir := t.TempDir()
	for _, coll := range newColls {
		file := filepath.Join(dir, coll.Name+".json")
		r := hostRun(t, coll, "-g", "4", "-b", "64", "-e", "1K", "-f", "4", "-n", "1", "-r", "2", "-J", file)
		if r.code != exit.OK {
			t.Fatalf("%s: exit %d\n%s", coll.Name, r.code, r.stderr)
		}
		rec, err := results.Load(file)
		if err != nil || len(rec.Results) != 3 {
			t.Fatalf("%s: %v %+v", coll.Name, err, rec)
		}
		root := "    -1"
		if coll.Rooted {
			root = "     2"
		}
		res := rec.Results[0]
		if res.Root != root || res.Redop != coll.RedOpName(collectives.Sum) || (res.InPlace.NWrong == nil) == coll.InPlaceChecked() {
			t.Errorf("%s: root %q redop %q in-place nwrong %v", coll.Name, res.Root, res.Redop, res.InPlace.NWrong)
		}
		text, err := results.Load(writeFile(t, dir, coll.Name+".txt", r.stdout))
		if err != nil || len(text.Results) != 3 || text.Results[2].Root != root {
			t.Errorf("%s text: %v %+v", coll.Name, err, text)
		}
	}
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAllReduceBiasWhereUnsupported: an engine without all_reduce_bias says so in one line and runs nothing,
// exit 0 as for any unsupported row.
func TestAllReduceBiasWhereUnsupported(t *testing.T) {
	r := hostRun(t, collectives.AllReduceBias, "-g", "2", "-d", "all", "-o", "all", "-b", "1K", "-e", "1K")
	if r.code != exit.OK || len(tableRows(r.stdout)) != 0 || strings.Count(r.stdout, "# all_reduce_bias skipped") != 1 ||
		!strings.Contains(r.stdout, "# all_reduce_bias skipped: engine host has no all_reduce_bias") {
		t.Errorf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Under --ab the arms' workers answer, and both say the same: the one line of a plain run, not one per
	// type and operation.
	r = hostRun(t, collectives.AllReduceBias, "-g", "2", "-d", "all", "-o", "all", "-b", "1K", "-e", "1K",
		"--ab", "RCCLX_TESTS_DELAY_US=0,1")
	if r.code != exit.OK || len(tableRows(r.stdout)) != 0 || strings.Count(r.stdout, "# all_reduce_bias skipped") != 1 ||
		!strings.Contains(r.stdout, "# all_reduce_bias skipped: engine host has no all_reduce_bias") {
		t.Errorf("--ab: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestABEveryRoot: an A/B run of a rooted collective with -r -1 runs and validates every root.
func TestABEveryRoot(t *testing.T) {
	r := hostRun(t, collectives.Broadcast, "-g", "3", "-b", "1K", "-e", "4K", "-f", "4", "-r", "-1", "-n", "2",
		"--ab", "RCCLX_TESTS_DELAY_US=0,1", "--ab-rounds", "2") // RCCL_DDA_ENABLE: broadcast does not read it
	if r.code != exit.OK || strings.Count(r.stdout, "#wrong RCCLX_TESTS_DELAY_US=0 0, RCCLX_TESTS_DELAY_US=1 0") != 6 ||
		!strings.Contains(r.stdout, "# float none, root 2, size 4096: #wrong") {
		t.Errorf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
