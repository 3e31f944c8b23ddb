package harness

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
)

// layoutRuns are the command lines of testdata/layouts/<name>.txt: the output nccl-tests 2.19.6 prints for them,
// written from its source (counts, in-place offsets, root and redop columns, which halves it checks), with
// made-up times.
var layoutRuns = map[*collectives.Collective][]string{
	collectives.Broadcast: {"-g", "3", "-b", "8", "-e", "4096", "-f", "8", "-r", "-1"},
	collectives.Reduce:    {"-g", "3", "-b", "64", "-e", "64", "-o", "all", "-r", "-1"},
	collectives.Gather:    {"-g", "3", "-b", "8", "-e", "4096", "-f", "8", "-r", "2"},
	collectives.Scatter:   {"-g", "3", "-b", "8", "-e", "4096", "-f", "8", "-r", "1"},
	collectives.SendRecv:  {"-g", "3", "-b", "1024", "-e", "1024", "-o", "all", "-d", "int32"},
	collectives.AllToAllV: {"-g", "3", "-b", "8", "-e", "4096", "-f", "8"},
	collectives.HyperCube: {"-g", "4", "-b", "8", "-e", "4096", "-f", "8"},
}

// measured are both halves' time, algbw and busbw columns (whatever the numbers) and #wrong.
var measured = regexp.MustCompile(`^(  [ 0-9.e+]{7}  [ 0-9.e+]{6}  [ 0-9.e+]{6}( {7}0|    N/A)){2}$`)

// TestNewBinariesMatchNcclTestsLayout runs each binary on the host engine and compares its output with the
// layout: the header and trailer lines nccl-tests prints, every row's size, count, type, redop and root
// columns byte for byte in the same order (nccl-tests' nesting of type, op, root, size), and each half's
// numbers in their columns with the same #wrong (N/A where nccl-tests leaves a half unchecked).
func TestNewBinariesMatchNcclTestsLayout(t *testing.T) {
	const preamble = 52 // "%12li  %12li  %8s  %6s  %6s"
	for coll, args := range layoutRuns {
		t.Run(coll.Name, func(t *testing.T) {
			data, err := os.ReadFile("testdata/layouts/" + coll.Name + ".txt")
			if err != nil {
				t.Fatal(err)
			}
			want := strings.Split(string(data), "\n")
			r := hostRun(t, coll, append([]string{"-w", "1", "-n", "2"}, args...)...)
			if r.code != exit.OK {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			got := strings.Split(r.stdout, "\n")
			for _, line := range want {
				if strings.HasPrefix(line, "# Collective test") || strings.HasPrefix(line, "# nThread") ||
					strings.HasPrefix(line, "#   ") || strings.HasPrefix(line, "# Out of bounds") {
					if !contains(got, line) {
						t.Errorf("no line %q in\n%s", line, r.stdout)
					}
				}
			}
			var wantRows, gotRows []string
			for _, line := range want {
				if len(line) > 0 && line[0] != '#' {
					wantRows = append(wantRows, line)
				}
			}
			for _, line := range got {
				if len(line) > 0 && line[0] != '#' {
					gotRows = append(gotRows, line)
				}
			}
			if len(gotRows) != len(wantRows) {
				t.Fatalf("%d rows, want %d\n%s", len(gotRows), len(wantRows), r.stdout)
			}
			for i, g := range gotRows {
				w := wantRows[i]
				gw, ww := measured.FindStringSubmatch(g[min(len(g), preamble):]), measured.FindStringSubmatch(w[preamble:])
				if len(g) != len(w) || g[:preamble] != w[:preamble] || gw == nil || ww == nil ||
					strings.Count(g, "N/A") != strings.Count(w, "N/A") {
					t.Errorf("row %d:\n got %q\nwant %q", i, g, w)
				}
			}
		})
	}
}

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}
