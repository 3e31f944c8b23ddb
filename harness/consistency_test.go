package harness

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
)

// envRun is testRun with a process environment.
func envRun(t *testing.T, args []string, env map[string]string) run {
	t.Helper()
	seed := rand.Uint64()
	return runWith(t, collectives.AllReduce, seedArgs(seed, args...), testSource(newFake(seed)), func(a *app) {
		a.getenv = func(k string) string { return env[k] }
	})
}

// TestParseTimeChecks: values of variables and flags that only mean something together are checked before
// anything runs: exit 1, one line naming the flag or variable, nothing on stdout, no file.
func TestParseTimeChecks(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  map[string]string
		text string
	}{
		{[]string{"-E", "RCCL_DDA_ENABLE=yes"}, nil, "RCCL_DDA_ENABLE"},
		{[]string{"-E", "RCCL_DDA_ALL_GATHER_MAX_BYTES=lots"}, nil, "RCCL_DDA_ALL_GATHER_MAX_BYTES"},
		{[]string{"--ab", "RCCL_DDA_ENABLE=0,yes"}, nil, "RCCL_DDA_ENABLE"},
		{nil, map[string]string{"RCCL_ENABLE_DDA_ALL_REDUCE": "on"}, "RCCL_ENABLE_DDA_ALL_REDUCE"},
		{nil, map[string]string{"RANK": "x", "WORLD_SIZE": "2"}, "RANK"},
		{nil, map[string]string{"RANK": "0", "WORLD_SIZE": "zero"}, "WORLD_SIZE"},
		{nil, map[string]string{"RANK": "3", "WORLD_SIZE": "2"}, "rank 3 is not within world size 2"},
		{nil, map[string]string{"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "99999"}, "MASTER_"},
		{nil, map[string]string{"NCCL_TESTS_MIN_BW": "abc"}, "NCCL_TESTS_MIN_BW"},
		{nil, map[string]string{"NCCL_TESTS_MIN_BW": "-1"}, "NCCL_TESTS_MIN_BW"},
		{[]string{"--dda", "-E", "RCCL_DDA_ENABLE=0"}, nil, "--dda"},
		{[]string{"--lp", "-E", "RCCL_LOW_PRECISION_ENABLE=false"}, nil, "--lp"},
		{[]string{"--lp-mode", "scaled", "-E", "RCCLX_TESTS_LP_MODE=rcclx"}, nil, "--lp-mode"},
		{[]string{"--ab", "NCCL_ALGO=Ring,Tree", "-E", "NCCL_ALGO=Ring"}, nil, "--ab"},
		{[]string{"--ab", "RCCL_DDA_ENABLE=0,1", "--dda"}, nil, "--ab"},
		{[]string{"--ab", "NCCL_ALGO=Ring,Ring"}, nil, "both arms are the same"},
		{[]string{"-t", "4096", "-g", "4"}, nil, "-t/--nthreads: must be between 1 and 1024"},
		{[]string{"-g", "1025"}, nil, "-g/--ngpus: must be between 1 and 1024"},
		{[]string{"--ab", ""}, nil, `invalid value "" for --ab: want KEY=v1,v2`},
		{[]string{"-t", "64", "-g", "17"}, nil, "at most 1024"},
		{[]string{"-t", "512", "-g", "2"}, map[string]string{"RANK": "0", "WORLD_SIZE": "65", "MASTER_ADDR": "h",
			"MASTER_PORT": "1"}, "65 processes"},
	} {
		dir := t.TempDir()
		file := filepath.Join(dir, "out.json")
		args := append(c.args, "-b", "8", "-e", "8", "-J", file)
		if !slices.Contains(c.args, "--ab") { // --ab refuses --csv itself (TestABRefusesRCCLFile)
			args = append(args, "--csv", filepath.Join(dir, "out.csv"))
		}
		r := envRun(t, args, c.env)
		if r.code != exit.Usage || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, c.text) {
			t.Errorf("%v %v: exit %d, stdout %q, stderr %q", c.args, c.env, r.code, r.stdout, r.stderr)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%v %v wrote %v", c.args, c.env, entries)
		}
	}
}

// TestABRefusesRCCLFile: rccl-tests' result file has no column for the arm, so --ab with --csv or -X is bad
// input, decided before any file is written.
func TestABRefusesRCCLFile(t *testing.T) {
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"--csv", "out.csv"}, "--csv"},
		{[]string{"-Z", "csv", "-X", "out.csv"}, "-X/--rccl_output_file"},
		{[]string{"-X", "out.json"}, "-X/--rccl_output_file"},
	} {
		dir := t.TempDir()
		for i, a := range c.args {
			if strings.HasPrefix(a, "out.") {
				c.args[i] = filepath.Join(dir, a)
			}
		}
		r := envRun(t, append(c.args, "--ab", "K=0,1", "-J", filepath.Join(dir, "out.json"), "-b", "8", "-e", "8"), nil)
		if r.code != exit.Usage || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 ||
			!strings.Contains(r.stderr, "for "+c.flag+": cannot be combined with --ab") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", c.args, r.code, r.stdout, r.stderr)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%v wrote %v", c.args, entries)
		}
	}
}

// TestIneffectiveFlagsNoted: a flag that has no effect without another one runs, with one "#" line saying so.
func TestIneffectiveFlagsNoted(t *testing.T) {
	for _, c := range []struct {
		args []string
		note string
	}{
		{[]string{"-K", "2"}, "# -K 2 ignored: per-iteration timing is off"},
		{[]string{"--lp-mode", "scaled"}, "# --lp-mode scaled ignored: low precision is off"},
		{[]string{"--ab-rounds", "3"}, "# --ab-rounds 3 ignored: there is no --ab comparison"},
		{[]string{"--ab-strict"}, "# --ab-strict ignored: there is no --ab comparison"},
		{[]string{"--lib", "libnccl.so.2"}, "# --lib libnccl.so.2 ignored: engine fake loads no collective library"},
	} {
		r := envRun(t, append(c.args, "-b", "8", "-e", "8", "-n", "1"), nil)
		if r.code != exit.OK || strings.Count(r.stdout, c.note) != 1 {
			t.Errorf("%v: exit %d, stderr %q, stdout\n%s", c.args, r.code, r.stderr, r.stdout)
		}
	}
	// With low precision on, in the run or in an A/B arm, --lp-mode applies and is not noted.
	for _, args := range [][]string{{"--lp"}, {"--ab", "RCCL_LOW_PRECISION_ENABLE=0,1", "--ab-rounds", "1"}} {
		r := envRun(t, append(args, "--lp-mode", "scaled", "-b", "8", "-e", "8", "-n", "1"), nil)
		if r.code != exit.OK || strings.Contains(r.stdout, "--lp-mode scaled ignored") {
			t.Errorf("%v --lp-mode: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
	}
}

// TestFractionalSizes: -b 1.5M is 1572864 bytes, as nccl-tests reads it.
func TestFractionalSizes(t *testing.T) {
	r := envRun(t, []string{"-b", "1.5M", "-e", "1.5M", "-n", "1", "-d", "int8"}, nil)
	rows := tableRows(r.stdout)
	if r.code != exit.OK || len(rows) != 1 || rows[0][0] != "1572864" {
		t.Errorf("exit %d, stderr %q\n%s", r.code, r.stderr, r.stdout)
	}
}
