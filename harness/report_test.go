package harness

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/harness/report"
)

// anchor is a real nccl-tests output (testdata/anchors, a copy of docs/data/h200x2-nccl-2.28.3).
type anchor struct {
	name  string
	lines []string
}

func loadAnchors(t *testing.T) []anchor {
	t.Helper()
	files, err := filepath.Glob("testdata/anchors/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no anchors in testdata/anchors: %v", err)
	}
	var out []anchor
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, anchor{filepath.Base(f), strings.Split(string(data), "\n")})
	}
	return out
}

// anchorRow rebuilds a row from an anchor's numbers.
func anchorRow(t *testing.T, f []string) report.Row {
	t.Helper()
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("bad number %q", s)
		}
		return v
	}
	r := report.Row{Size: int64(num(f[0])), Count: int64(num(f[1])), DType: f[2], Redop: f[3], Root: int(num(f[4]))}
	for i := range 2 {
		h := f[5+4*i : 9+4*i]
		r.Halves[i] = report.Half{Ran: true, Sec: num(h[0]) / 1e6, AlgBW: num(h[1]), BusBW: num(h[2]),
			Checked: h[3] != "N/A"}
		if r.Halves[i].Checked {
			r.Halves[i].Wrong = int64(num(h[3]))
		}
	}
	return r
}

// TestRowsMatchAnchors renders every anchor row from its numbers and compares it byte for byte.
func TestRowsMatchAnchors(t *testing.T) {
	o := &plan.Options{Halves: plan.BothHalves}
	n := 0
	for _, a := range loadAnchors(t) {
		for _, line := range a.lines {
			f := strings.Fields(line)
			if len(f) != 13 || strings.HasPrefix(line, "#") {
				continue
			}
			if got := report.FormatRow(anchorRow(t, f), o); got != line {
				t.Errorf("%s:\n got %q\nwant %q", a.name, got, line)
			}
			n++
		}
	}
	if n < 100 {
		t.Fatalf("only %d anchor rows compared", n)
	}
}

// anchorOptions are the command lines the anchors were taken with (see docs/data/h200x2-nccl-2.28.3/README.md).
func anchorOptions() *plan.Options {
	return &plan.Options{NThreads: 1, NGpus: 2, MinBytes: 8, MaxBytes: 1 << 30, StepFactor: 2, StepBytes: 1 << 20,
		Warmup: 20, Iters: 50, AggIters: 1, Check: 1, Halves: plan.BothHalves}
}

// TestHeaderAndTrailerMatchAnchors prints the lines around the table for each anchor's run and compares them with
// the anchor, our suite name and version standing in for nccl-tests'.
func TestHeaderAndTrailerMatchAnchors(t *testing.T) {
	for _, a := range loadAnchors(t) {
		graph := 0
		if strings.Contains(a.lines[2], "graph: 20") {
			graph = 20
		}
		var devices []collectives.Device
		var pid int
		for _, line := range a.lines {
			if strings.HasPrefix(line, "#  Rank") {
				f := strings.Fields(line)
				pid, _ = strconv.Atoi(f[6])
				r, _ := strconv.Atoi(f[2])
				devices = append(devices, collectives.Device{Rank: r, Pid: pid, Hostname: f[8], Index: r,
					BusID: strings.Trim(f[11], "[]"), Name: strings.Join(f[12:], " ")})
			}
		}
		binary := strings.TrimPrefix(a.lines[1], "# Collective test starting: ")
		var buf bytes.Buffer
		report.WriteHeader(&buf, anchorOptions(),
			report.Header{Binary: binary, Library: "nccl-headers=22803 nccl-library=22803", Graph: graph, Devices: devices})
		want := append([]string{}, a.lines...)
		want[0] = strings.Replace(want[0], "nccl-tests version 2.19.6", "rcclx-tests version "+report.Version, 1)
		got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		compareLines(t, a.name+" header", got, want[:len(got)])

		avg := strings.TrimSpace(strings.Split(a.lines[len(a.lines)-6], ":")[1])
		bw, _ := strconv.ParseFloat(avg, 64)
		buf.Reset()
		report.WriteTrailer(&buf, report.Trailer{Binary: binary, AvgBusBW: bw, MinBW: -1})
		got = strings.Split(buf.String(), "\n")
		compareLines(t, a.name+" trailer", got, a.lines[len(a.lines)-len(got):])
	}
}

func compareLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d lines, want %d:\n%s", what, len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s line %d:\n got %q\nwant %q", what, i+1, got[i], want[i])
		}
	}
}

func TestColumnHeaderVariants(t *testing.T) {
	o := &plan.Options{PerIter: 1, Timestamps: 1, CPUTime: 1}
	h := report.ColumnHeader(o)
	if !strings.Contains(h[1], "cputime") || !strings.Contains(h[1], "i_cv%") || !strings.HasSuffix(h[1], " timestamp") {
		t.Errorf("names line %q", h[1])
	}
	if !strings.HasSuffix(h[2], " %Y-%m-%d %H:%M:%S") {
		t.Errorf("units line %q", h[2])
	}
	// Every name ends where its unit ends (columns are right-aligned).
	if len(h[1]) != len(h[2]) {
		t.Errorf("names and units lines differ in length: %d, %d", len(h[1]), len(h[2]))
	}
	// rccl-tests' layout (-O, -A): the same, except that -A's 30-character label overflows its 28-wide field.
	for _, o := range []*plan.Options{{Halves: plan.InPlaceOnly}, {Halves: plan.OutOfPlaceOnly, Timestamps: 1}, {Halves: plan.BothHalves,
		RCCL: plan.RCCLOptions{AlgoColumns: 1}}, {Halves: plan.InPlaceOnly, PerIter: 1, RCCL: plan.RCCLOptions{AlgoColumns: 1}}} {
		h := report.ColumnHeader(o)
		if len(h[1]) != len(h[2])+2*o.RCCL.AlgoColumns {
			t.Errorf("-O %d -A %d: names and units lines:\n%q\n%q", o.Halves, o.RCCL.AlgoColumns, h[1], h[2])
		}
	}
}

func TestMemoryString(t *testing.T) {
	for v, want := range map[float64]string{512: "512 B", 1536: "1.50 KB", 50 << 20: "50.0 MB", 3 << 30: "3.00 GB"} {
		if got := report.MemoryString(v); got != want {
			t.Errorf("MemoryString(%v) = %q, want %q", v, got, want)
		}
	}
}

// TestProgramNameFromArgv0: the header and trailer name the program as it was started (nccl-tests prints the
// base name of argv[0]), so a renamed binary keeps its name there.
func TestProgramNameFromArgv0(t *testing.T) {
	r := runWith(t, collectives.AllReduce, seedArgs(1, small...), fakeSource(newFake(1)), func(a *app) {
		a.argv[0] = "/opt/tests/bin/ar_perf_mpi"
	})
	for _, want := range []string{"# Collective test starting: ar_perf_mpi\n", "# Collective test concluded: ar_perf_mpi\n"} {
		if r.code != exit.OK || !strings.Contains(r.stdout, want) {
			t.Errorf("exit %d, output lacks %q:\n%s%s", r.code, want, r.stdout, r.stderr)
		}
	}
}
