package harness

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/report"
)

// TestVersion: --version prints the suite, commit and Go version and opens no engine (no GPU needed).
func TestVersion(t *testing.T) {
	src := engineSource{names: func() []string { return []string{"auto", "fake"} },
		open: func(string) (collectives.Engine, error) { return nil, fmt.Errorf("--version opened an engine") }}
	r := runWith(t, collectives.AllReduce, []string{"--version"}, src, nil)
	if r.code != exit.OK || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	for _, want := range []string{"all_reduce_perf (rcclx-tests) " + report.Version + "\n", "\ncommit:  ", "\ngo:      " + runtime.Version(), "\nnative:  none loaded"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("--version lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestCompletion: the shell's completion request for flag values lists -d types, --engine names (after a comma
// too), -o reductions and --lp-mode modes.
func TestCompletion(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"-d", ""}, []string{"int8", "bfloat16", "f8e5m2", "all"}},
		{[]string{"--engine", "fake,"}, []string{"fake,auto", "fake,fake"}},
		{[]string{"-o", ""}, []string{"sum", "mulsum", "all"}},
		{[]string{"--lp-mode", ""}, []string{"rcclx", "scaled"}},
	} {
		r := testRun(t, collectives.AllReduce, append([]string{"__complete"}, c.args...), newFake(1))
		got := strings.Split(r.stdout, "\n")
		for _, w := range c.want {
			found := false
			for _, g := range got {
				found = found || g == w
			}
			if !found {
				t.Errorf("%v: completions %q lack %q", c.args, got, w)
			}
		}
	}
	r := testRun(t, collectives.AllReduce, []string{"completion", "bash"}, newFake(1))
	if r.code != exit.OK || !strings.Contains(r.stdout, "bash completion") {
		t.Errorf("completion bash: exit %d\n%.200s", r.code, r.stdout)
	}
}

// TestProgress: --progress rewrites one line on stderr per row; stdout keeps its lines.
func TestProgress(t *testing.T) {
	plain := testRun(t, collectives.AllReduce, append(small, "-c", "0"), newFake(1))
	r := testRun(t, collectives.AllReduce, append(small, "-c", "0", "-d", "all", "--progress"), newFake(1))
	if r.code != exit.OK || plain.code != exit.OK {
		t.Fatalf("exit %d %d: %s", r.code, plain.code, r.stderr)
	}
	if strings.ContainsAny(r.stdout, "\r\x1b") || len(tableRows(r.stdout)) != 12*len(tableRows(plain.stdout)) {
		t.Errorf("stdout changed:\n%s", r.stdout)
	}
	rows := len(tableRows(r.stdout))
	for _, want := range []string{
		"\rall_reduce int8 sum 8B: row 1 of " + fmt.Sprint(rows) + ", " + fmt.Sprint(rows-1) + " left\x1b[K",
		fmt.Sprintf("\rall_reduce f8e5m2 sum 32KiB: row %d of %d, 0 left\x1b[K", rows, rows),
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%q", want, r.stderr)
		}
	}
	// Each row: the line, then cleared before the row goes to stdout; cleared once more at the end.
	if !strings.HasSuffix(r.stderr, "\r\x1b[K\r\x1b[K") || strings.Count(r.stderr, "\r") != 2*rows+1 {
		t.Errorf("want one update and one clear per row and a cleared line at the end: %q", r.stderr)
	}
	if plain.stderr != "" {
		t.Errorf("progress without --progress on a non-terminal: %q", plain.stderr)
	}
}
