package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/cli"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
)

// TestBadInput gives each flag a bad value: one line on stderr naming the flag and the value, exit code 1,
// nothing on stdout and no JSON file.
func TestBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		name string // text the message must contain besides the value
		val  string
	}{
		{[]string{"-b", "12Q"}, "minbytes", "12Q"},
		{[]string{"-e", "-5"}, "maxbytes", "-5"},
		{[]string{"-e", "99999999999G"}, "maxbytes", "99999999999G"},
		{[]string{"-i", "1.5Q"}, "stepbytes", "1.5Q"},
		{[]string{"-b", "64M", "-e", "1M"}, "minbytes", "64M"},
		{[]string{"-f", "0"}, "stepfactor", "0"},
		{[]string{"-f", "x"}, "stepfactor", "x"},
		{[]string{"-b", "0", "-e", "1M", "-f", "2"}, "minbytes", "0"},
		{[]string{"-i", "0", "-b", "1", "-e", "8"}, "stepbytes", "0"},
		{[]string{"-n", "0"}, "iters", "0"},
		{[]string{"-n", "99999999999999999999"}, "iters", "99999999999999999999"},
		{[]string{"-m", "-1"}, "agg_iters", "-1"},
		{[]string{"-w", "-1"}, "warmup_iters", "-1"},
		{[]string{"-N", "-2"}, "run_cycles", "-2"},
		{[]string{"-t", "0"}, "nthreads", "0"},
		{[]string{"-g", "abc"}, "ngpus", "abc"},
		{[]string{"-c", "-1"}, "check", "-1"},
		{[]string{"-d", "float7"}, "datatype", "float7"},
		{[]string{"-o", "xor"}, "op", "xor"},
		{[]string{"-r", "any"}, "root", "any"},
		{[]string{"-r", "-2"}, "root", "-2"},
		{[]string{"-z", "4"}, "blocking", "4"},
		{[]string{"-y", "2"}, "stream_null", "2"},
		{[]string{"-T", "-1"}, "timeout", "-1"},
		{[]string{"-G", "-1"}, "cudagraph", "-1"},
		{[]string{"-C", "2"}, "report_cputime", "2"},
		{[]string{"-S", "7"}, "report_timestamps", "7"},
		{[]string{"-a", "4"}, "average", "4"},
		{[]string{"-u", "-3"}, "unalign", "-3"},
		{[]string{"-I", "2"}, "per_iter_timing", "2"},
		{[]string{"-I", "1", "-K", "20"}, "per_iter_skip", "20"},
		{[]string{"-I", "1", "-G", "2"}, "per_iter_timing", "1"},
		{[]string{"-M", "3"}, "memory", "3"},
		{[]string{"-p", "5"}, "parallel_init", "5"},
		{[]string{"-R", "3"}, "local_register", "3"},
		{[]string{"-O", "x"}, "out_of_place", "x"},
		{[]string{"--engine", "cuda9"}, "engine", "cuda9"},
		{[]string{"--engine", "fake,fake"}, "engine", "fake,fake"},
		{[]string{"--seed", "-1"}, "seed", "-1"},
		{[]string{"--ab", "KEY"}, "ab", "KEY"},
		{[]string{"--ab", "K=1,2,3"}, "ab", "K=1,2,3"},
		{[]string{"--ab-rounds", "0"}, "ab-rounds", "0"},
		{[]string{"--ab", "K=0,1", "--ab", "L=0,1"}, "--ab", "L=0,1"},
		{[]string{"-E", "NOVALUE"}, "env", "NOVALUE"},
		{[]string{"--lp-mode", "fp4"}, "lp-mode", "fp4"},
		{[]string{"--bogus"}, "bogus", ""},
		{[]string{"-q", "-1"}, "delay_inout_place", "-1"},
		{[]string{"-q", "0x10"}, "delay_inout_place", "0x10"},
		{[]string{"stray"}, "stray", ""},
	} {
		dir := t.TempDir()
		file := filepath.Join(dir, "out.json")
		r := testRun(t, collectives.AllReduce, append(c.args, "-J", file), newFake(1))
		wantRefused(t, r, c.args, c.name, c.val, dir)
	}
}

// wantRefused: bad input is one line on stderr naming the flag and its value, exit 1, nothing on stdout and
// nothing written into dir.
func wantRefused(t *testing.T, r run, args []string, name, val, dir string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	if r.code != exit.Usage || r.stdout != "" || len(lines) != 1 || !strings.Contains(r.stderr, name) ||
		!strings.Contains(r.stderr, val) {
		t.Errorf("%v: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("%v wrote %v", args, entries)
	}
}

// TestHelp lists every flag with its default and exits 0.
func TestHelp(t *testing.T) {
	r := testRun(t, collectives.AllGather, []string{"--help"}, newFake(1))
	if r.code != exit.OK || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	cli.RegisterFlags(fs, &plan.Options{})
	fs.VisitAll(func(f *pflag.Flag) {
		if !strings.Contains(r.stdout, "--"+f.Name) {
			t.Errorf("help lacks --%s", f.Name)
		}
	})
	for _, want := range []string{"-n, --iters int", "(default 20)", "-c, --check int", "(default 1)",
		"-z, --blocking int", "(default 0)", "(default 32M)", "--engine string", `(default "auto")`, "Exit codes"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	// -X opens the path given and empties it (rccl-tests' fopen "w"); only -J never overwrites.
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.Contains(line, "--rccl_output_file") && strings.Contains(line, "never overwrites") {
			t.Errorf("-X help says it never overwrites: %q", line)
		}
	}
}

// TestFlagLettersAndDefaults pins nccl-tests' letters, long names and defaults.
func TestFlagLettersAndDefaults(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	cli.RegisterFlags(fs, &plan.Options{})
	for _, c := range []struct{ short, long, def string }{
		{"t", "nthreads", "1"}, {"g", "ngpus", "1"}, {"b", "minbytes", "32M"}, {"e", "maxbytes", "32M"},
		{"i", "stepbytes", "1M"}, {"f", "stepfactor", "1"}, {"n", "iters", "20"}, {"m", "agg_iters", "1"},
		{"w", "warmup_iters", "1"}, {"N", "run_cycles", "1"}, {"c", "check", "1"}, {"o", "op", "sum"},
		{"d", "datatype", "float"}, {"r", "root", "0"}, {"z", "blocking", "0"}, {"y", "stream_null", "0"},
		{"T", "timeout", "0"}, {"G", "cudagraph", "0"}, {"C", "report_cputime", "0"},
		{"S", "report_timestamps", "0"}, {"a", "average", "1"}, {"u", "unalign", "0"},
		{"I", "per_iter_timing", "0"}, {"K", "per_iter_skip", "0"}, {"M", "memory", "0"},
		{"J", "output_file", ""}, {"p", "parallel_init", "0"}, {"R", "local_register", "0"},
		{"O", "out_of_place", "both"}, {"E", "env", ""},
		{"Y", "memory_type", ""}, {"q", "delay_inout_place", "0"}, {"F", "cache_flush", "0"},
		{"Z", "rccl_output_format", ""}, {"X", "rccl_output_file", ""}, {"A", "output_algo_proto_channels", "0"},
		{"x", "cta_policy", "-1"}, {"D", "device_implementation", "0"}, {"V", "device_cta_count", "16"},
	} {
		f := fs.ShorthandLookup(c.short)
		if f == nil || f.Name != c.long || f.DefValue != c.def {
			t.Errorf("-%s: got %+v, want --%s default %q", c.short, f, c.long, c.def)
		}
	}
}

// TestParseValues checks that good values land where they belong.
func TestParseValues(t *testing.T) {
	a := &app{coll: collectives.AllReduce, engines: engineSource{names: func() []string { return []string{"auto", "host"} }}}
	o, run, err := a.parse([]string{"-b", "4K", "-e", "16M", "-f", "2", "-d", "fp8_e4m3", "-o", "all", "-O", "0",
		"-E", "A=1", "-E", "B=x=y", "--dda", "--lp", "--lp-mode", "scaled", "--ab", "RCCL_X=0,1", "--seed", "0x2a", "-r", "0x3"})
	if err != nil || !run {
		t.Fatalf("parse: %v", err)
	}
	if o.MinBytes != 4096 || o.MaxBytes != 16<<20 || o.DTypes[0] != collectives.F8E4M3 || len(o.Ops) != 6 ||
		o.RunOutOfPlace() || !o.RunInPlace() || o.Seed.Value != 42 || o.Root != 3 || o.ABKey != "RCCL_X" || o.ABValues[1] != "1" {
		t.Errorf("parsed %+v", o)
	}
	want := map[string]string{"A": "1", "B": "x=y", "RCCL_DDA_ENABLE": "1", "RCCL_LOW_PRECISION_ENABLE": "1",
		"RCCLX_TESTS_LP_MODE": "scaled"}
	for k, v := range want {
		if o.CommEnv[k] != v {
			t.Errorf("env %s = %q, want %q", k, o.CommEnv[k], v)
		}
	}
}
