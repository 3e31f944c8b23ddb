package results

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestLoadTextAnchor(t *testing.T) {
	rec, err := Load(filepath.Join("testdata", "nccl-tests-all_reduce.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Results) != 28 {
		t.Fatalf("%d rows, want 28", len(rec.Results))
	}
	last := rec.Results[27]
	if us, _ := last.InPlace.Micros(); last.Size != 1<<30 || last.Count != 1<<28 || us != 3252.77 || last.OutOfPlace.BusBW != 329.40 || last.Root != "    -1" {
		t.Errorf("last row %+v", last)
	}
	c := rec.Config
	if c.NGpus != 2 || c.MaximumBytes != 1<<30 || c.StepFactor == nil || *c.StepFactor != 2 || c.WarmupIters != 20 || c.Iterations != 50 || len(c.Devices) != 2 {
		t.Errorf("config %+v", c)
	}
	if d := c.Devices[1]; d.Rank != 1 || d.Pid != 1329 || d.Hostname != "vm" || d.DeviceHex != "0000:00:07" || d.DeviceInfo != "NVIDIA H200" {
		t.Errorf("device %+v", d)
	}
	if rec.NcclVersion != 22803 || rec.AverageBusBandwidth.Bandwidth != 86.5652 || rec.OutOfBounds.Okay != "true" || rec.Args[0] != "all_reduce_perf" {
		t.Errorf("header/footer: version %d avg %+v oob %+v args %v", rec.NcclVersion, rec.AverageBusBandwidth, rec.OutOfBounds, rec.Args)
	}
}

func TestLoadTextUncheckedAndRepeatedRows(t *testing.T) {
	rec, err := Load(filepath.Join("testdata", "nccl-tests-alltoall.txt"))
	if err != nil {
		t.Fatal(err)
	}
	first := rec.Results[0]
	// 8 B and 16 B both round down to 0 B per peer: one row with two rounds.
	if first.Size != 0 || len(first.OutOfPlace.Rounds) != 2 || first.InPlace.NWrong != nil || first.OutOfPlace.NWrong == nil {
		t.Errorf("first row %+v", first)
	}
}

func TestLoadTextVariants(t *testing.T) {
	in := strings.Join([]string{
		"#       size   count  type redop root  cputime algbw busbw #wrong i_min i_max i_p99 i_cv%  cputime algbw busbw #wrong i_min i_max i_p99 i_cv%",
		"vm:12:12 [0] NCCL INFO Bootstrap: using eth0",
		"  1024  256  float  sum  -1   5.5 0.19 0.19 0  5.1 5.9 5.8 2.5   5.6 0.18 0.18 0  5.2 6.1 6.0 3.0",
		"  2048  512  half   max   0   6.5 0.31 0.31 N/A  6.1 6.9 6.8 1.5",
	}, "\n")
	rec, err := Parse("variants.txt", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	r0, r1 := rec.Results[0], rec.Results[1]
	if r0.OutOfPlace.CPUTime == nil || *r0.OutOfPlace.CPUTime != 5.5 || r0.OutOfPlace.Time != nil || r0.InPlacePerIter == nil || r0.InPlacePerIter.CVPct != 3.0 {
		t.Errorf("cputime/per-iteration row %+v", r0)
	}
	if _, ok := r1.OutOfPlace.Micros(); ok || r1.InPlace.CPUTime == nil || r1.Root != "     0" || r1.InPlace.NWrong != nil {
		t.Errorf("in-place-only row %+v", r1)
	}
}

// TestLoadTextOneHalf: rccl-tests' -O prints one half's columns, and its top header line names which.
func TestLoadTextOneHalf(t *testing.T) {
	for top, outOfPlace := range map[string]bool{"out-of-place": true, "in-place": false} {
		in := strings.Join([]string{
			"#                                                              " + top + "          ",
			"#       size         count      type   redop    root     time   algbw   busbw  #wrong algo      proto      nchannels ",
			"        1024           256     float     sum      -1     5.50    0.19    0.19       0    ring       N/A         N/A",
		}, "\n")
		rec, err := Parse("one-half.txt", []byte(in))
		if err != nil {
			t.Fatal(err)
		}
		r := rec.Results[0]
		_, oop := r.OutOfPlace.Micros()
		_, ip := r.InPlace.Micros()
		if oop != outOfPlace || ip == outOfPlace {
			t.Errorf("%s: row %+v", top, r)
		}
	}
}

func TestLoadCSV(t *testing.T) {
	rec, err := Load(filepath.Join("testdata", "rccl-tests-mpi.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Results) != 2 || rec.Args[0] != "all_reduce_perf" {
		t.Fatalf("results %+v args %v", rec.Results, rec.Args)
	}
	r := rec.Results[0]
	if r.Size != 1<<20 || r.Type != "float" || len(r.OutOfPlace.Rounds) != 2 || *r.OutOfPlace.Time != 30 || *r.InPlace.NWrong != 0 {
		t.Errorf("cycles not merged into rounds: %+v", r)
	}
	if w := rec.Results[1].OutOfPlace.NWrong; w == nil || *w != 2 || rec.OutOfBounds.Count != 1 || rec.OutOfBounds.Okay != "false" {
		t.Errorf("wrong count lost: %+v %+v", rec.Results[1], rec.OutOfBounds)
	}
}

func TestMalformedInputsGiveOneLineErrors(t *testing.T) {
	cases := map[string]struct{ data, want string }{
		"broken.json":    {"{\n \"version\": 3,\n \"results\": [\n  {\"size\": \"big\"}\n ]\n}", "broken.json: line 4"},
		"truncated.json": {"{\n \"version\": 3,\n \"results\": [", "truncated.json"},
		"notours.json":   {"{\"hello\": 1}", "notours.json: line 1"},
		"short.txt":      {"# header\n 1024 256 float sum -1 5.5 0.19\n", "short.txt: line 2"},
		"badnum.txt":     {" 1024 256 float sum -1 5.5 x 0.19 0 5.6 0.18 0.18 0\n", "badnum.txt: line 1"},
		"nan.txt":        {" 1024 256 float sum -1 NaN 1 0.19 0 5.6 0.18 0.18 0\n", "nan.txt: line 1"},
		"empty.txt":      {"", "empty.txt: no result rows"},
		"nosize.csv":     {"a,b,time\n1,2,3\n", "nosize.csv: line 1"},
		"short.csv":      {"size,type,time,busbw\n8,float\n", "short.csv: line 2"},
		"quote.csv":      {"size,time\n8,1\n8,\"2\n", "quote.csv: line 3"},
		"badbool.csv":    {"size,time,inplace\n8,1,maybe\n", "badbool.csv: line 2"},
		// Rows no run writes: compared, they would read as a speedup.
		"negtime.json": {`{"version": 3, "results": [{"size": 8, "out_of_place": {"time": -5}}]}`,
			"negtime.json: result 1 (size 8, out-of-place): time -5: want a time above 0"},
		"zerotime.csv": {"size,time,inplace\n8,0,0\n", "zerotime.csv: result 1 (size 8, out-of-place): time 0"},
		"negsize.json": {`{"version": 3, "results": [{"size": -8, "out_of_place": {"time": 5}}]}`,
			"negsize.json: result 1: size -8"},
		"negcount.json": {`{"version": 3, "results": [{"size": 8, "count": -2, "out_of_place": {"time": 5}}]}`,
			"negcount.json: result 1: size 8, count -2: want 0 or more"},
		// A negative wrong count would let wrong results pass the gate.
		"negwrong.json": {`{"version": 3, "results": [{"size": 8, "in_place": {"time": 5, "nwrong": -1}}]}`,
			"negwrong.json: result 1 (size 8, in-place): nwrong -1: want 0 or more"},
		"negbw.json": {`{"version": 3, "results": [{"size": 8, "out_of_place": {"time": 5, "bus_bw": -1}}]}`,
			"negbw.json: result 1 (size 8, out-of-place): bus_bw -1"},
		"neground.json": {`{"version": 3, "results": [{"size": 8, "out_of_place": {"time": 5, "rounds": [5, -5]}}]}`,
			"neground.json: result 1 (size 8, out-of-place): rounds[1] -5: want a time above 0"},
		"negoob.json": {`{"version": 3, "results": [{"size": 8, "out_of_place": {"time": 5}}], "out_of_bounds": {"count": -3}}`,
			"negoob.json: out_of_bounds count -3"},
		"negab.json": {`{"version": 3, "results": [{"size": 8, "out_of_place": {"time": 5}}], "ab": {"rows": [{"size": 8, "times_a": [1], "times_b": [-1]}]}}`,
			"negab.json: ab row 1 (size 8): times_b[0] -1"},
		"nanwrong.txt": {" 1024 256 float sum -1 5.5 0.19 0.19 nan 5.6 0.18 0.18 0\n",
			"nanwrong.txt: line 1: bad #wrong \"nan\""},
		"negwrong.csv": {"size,time,nwrong\n8,1,-4\n", "negwrong.csv: line 2: bad #wrong \"-4\""},
	}
	for name, c := range cases {
		_, err := Parse(name, []byte(c.data))
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, c.want) || strings.Contains(msg, "\n") {
			t.Errorf("%s: error %q, want one line starting %q", name, msg, c.want)
		}
	}
	// A byte order mark before the JSON is skipped, not read as text without rows.
	if rec, err := Parse("bom.json", []byte("\xef\xbb\xbf"+`{"version": 3, "results": [{"size": 8, "out_of_place": {"time": 5}}]}`)); err != nil || len(rec.Results) != 1 {
		t.Errorf("JSON after a BOM: %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json")); err == nil || !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
}

// TestReadFileBounds: an input that is no result file is refused, naming it, without being read whole:
// /dev/zero (endless) and binary data at the first NUL byte, a text file above the size bound at the bound.
func TestReadFileBounds(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.txt")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// Text first, then a hole past the bound (sparse: no disk taken).
	if _, err := f.WriteString(strings.Repeat("# text\n", 20000)); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxFileBytes + 1<<20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for path, want := range map[string]string{"/dev/zero": "binary data", "/dev/urandom": "binary data",
		big: "larger than 256 MiB"} {
		start := time.Now()
		_, err := Load(path)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) ||
			time.Since(start) > 5*time.Second {
			t.Errorf("%s: %v after %v", path, err, time.Since(start))
		}
	}
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	start := time.Now()
	if _, err := Load(fifo); err == nil || !strings.Contains(err.Error(), fifo) || time.Since(start) > 2*time.Second {
		t.Errorf("named pipe without a writer: %v after %v", err, time.Since(start))
	}
}
