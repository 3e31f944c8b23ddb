package harness

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/bench"
	"github.com/rcclx-tests/rcclx-tests/harness/cli"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/harness/report"
	"github.com/rcclx-tests/rcclx-tests/hostengine"
	"github.com/rcclx-tests/rcclx-tests/results"
)

// One test per row of docs/DIALECTS.md: each pins what the rccl-tests dialect prints (from rccl-tests' source)
// and that the nccl-tests dialect keeps nccl-tests' form.

// dialectRun runs coll with --dialect d ("" for the default) and a fresh seed on the fake engine.
func dialectRun(t *testing.T, coll *collectives.Collective, d string, args ...string) run {
	t.Helper()
	seed := rand.Uint64()
	if d != "" {
		args = append(args, "--dialect", d)
	}
	return testRun(t, coll, seedArgs(seed, append([]string{"-b", "64", "-e", "64", "-n", "1", "-w", "0"}, args...)...), newFake(seed))
}

// lineWith returns the first line of out that contains s ("" when none does).
func lineWith(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

type hipEngine struct{ *fakeEngine }

func (hipEngine) Runtime() string { return collectives.RuntimeHIP }

// TestDialectChoice: rccl-tests' dialect on a HIP engine (bench's TestPlatformDialect covers each platform);
// --dialect, else RCCLX_TESTS_DIALECT, overrides; a bad value is refused with one line naming it before anything
// runs.
func TestDialectChoice(t *testing.T) {
	seed := rand.Uint64()
	args := seedArgs(seed, "-b", "64", "-e", "64", "-n", "1", "-d", "f8e4m3")
	if r := testRun(t, collectives.AllReduce, args, hipEngine{newFake(seed)}); len(tableRows(r.stdout)) != 1 ||
		tableRows(r.stdout)[0][2] != "fp8_e4m3" {
		t.Errorf("HIP engine: exit %d\n%s", r.code, r.stdout)
	}
	if r := testRun(t, collectives.AllReduce, append(args, "--dialect", plan.DialectNCCL), hipEngine{newFake(seed)}); len(tableRows(r.stdout)) != 1 ||
		tableRows(r.stdout)[0][2] != "f8e4m3" {
		t.Errorf("HIP engine, --dialect nccl-tests: exit %d\n%s", r.code, r.stdout)
	}
	for _, c := range []struct{ env, flag, want string }{
		{plan.DialectRCCL, "", "fp8_e4m3"}, {plan.DialectRCCL, plan.DialectNCCL, "f8e4m3"}, {"", "", "f8e4m3"},
	} {
		a := args
		if c.flag != "" {
			a = append(a, "--dialect", c.flag)
		}
		r := runWith(t, collectives.AllReduce, a, fakeSource(newFake(seed)),
			func(a *app) { a.getenv = func(k string) string { return map[string]string{plan.EnvDialect: c.env}[k] } })
		if rows := tableRows(r.stdout); r.code != exit.OK || len(rows) != 1 || rows[0][2] != c.want {
			t.Errorf("%s=%q --dialect %q: exit %d\n%s%s", plan.EnvDialect, c.env, c.flag, r.code, r.stdout, r.stderr)
		}
	}
	r := runWith(t, collectives.AllReduce, args, fakeSource(newFake(seed)),
		func(a *app) {
			a.getenv = func(k string) string { return map[string]string{plan.EnvDialect: "rccl"}[k] }
		})
	if r.code != exit.Usage || r.stdout != "" || !strings.Contains(r.stderr, `invalid RCCLX_TESTS_DIALECT="rccl": want nccl-tests or rccl-tests`) {
		t.Errorf("bad variable: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = testRun(t, collectives.AllReduce, append(args, "--dialect", "amd"), newFake(seed))
	if r.code != exit.Usage || r.stdout != "" || !strings.Contains(r.stderr, `invalid value "amd" for --dialect`) {
		t.Errorf("bad flag: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestDialectFP8Names: rccl-tests names the FP8 types fp8_e4m3 and fp8_e5m2 (its test_typenames), nccl-tests
// f8e4m3 and f8e5m2; both spellings are accepted by -d.
func TestDialectFP8Names(t *testing.T) {
	for _, c := range []struct{ d, in, want string }{
		{plan.DialectRCCL, "f8e4m3", "fp8_e4m3"}, {plan.DialectRCCL, "fp8_e5m2", "fp8_e5m2"},
		{plan.DialectNCCL, "fp8_e4m3", "f8e4m3"}, {plan.DialectNCCL, "f8e5m2", "f8e5m2"},
	} {
		r := dialectRun(t, collectives.AllGather, c.d, "-d", c.in)
		if rows := tableRows(r.stdout); r.code != exit.OK || len(rows) != 1 || rows[0][2] != c.want {
			t.Errorf("%s -d %s: exit %d\n%s", c.d, c.in, r.code, r.stdout)
		}
	}
}

// TestDialectFP8Skips: rccl-tests' reducing collectives skip FP8 with prod, avg and mulsum (under -d all -o
// all too); nccl-tests runs them.
func TestDialectFP8Skips(t *testing.T) {
	ops := func(out string) string {
		var s []string
		for _, f := range tableRows(out) {
			if strings.Contains(f[2], "e4m3") || strings.Contains(f[2], "e5m2") {
				s = append(s, f[2]+" "+f[3])
			}
		}
		return strings.Join(s, ",")
	}
	r := dialectRun(t, collectives.AllReduce, plan.DialectRCCL, "-d", "all", "-o", "all")
	want := "fp8_e4m3 sum,fp8_e4m3 max,fp8_e4m3 min,fp8_e5m2 sum,fp8_e5m2 max,fp8_e5m2 min"
	if got := ops(r.stdout); r.code != exit.OK || got != want {
		t.Errorf("rccl-tests: exit %d, FP8 rows %s, want %s", r.code, got, want)
	}
	r = dialectRun(t, collectives.AllReduce, plan.DialectNCCL, "-d", "f8e4m3", "-o", "all")
	if got := ops(r.stdout); r.code != exit.OK || len(strings.Split(got, ",")) != len(collectives.AllOps()) {
		t.Errorf("nccl-tests: exit %d, FP8 rows %s", r.code, got)
	}
}

// TestDialectHypercubeRedop: rccl-tests' hypercube passes "none" as its op name; nccl-tests leaves the column
// blank.
func TestDialectHypercubeRedop(t *testing.T) {
	r := dialectRun(t, collectives.HyperCube, plan.DialectRCCL, "-g", "2")
	if rows := tableRows(r.stdout); r.code != exit.OK || len(rows) != 1 || rows[0][3] != "none" || rows[0][4] != "-1" {
		t.Errorf("rccl-tests: exit %d\n%s", r.code, r.stdout)
	}
	r = dialectRun(t, collectives.HyperCube, plan.DialectNCCL, "-g", "2")
	if rows := tableRows(r.stdout); r.code != exit.OK || len(rows) != 1 || !strings.Contains(r.stdout, "   float              -1  ") {
		t.Errorf("nccl-tests: exit %d\n%s", r.code, r.stdout)
	}
}

// TestDialectColumnHeader: rccl-tests' header format always carries its extra columns' field (" %*s", empty
// without -A), so its name and unit lines end in two spaces where nccl-tests' end in one.
func TestDialectColumnHeader(t *testing.T) {
	for _, c := range []struct {
		d    string
		tail string
	}{{plan.DialectRCCL, "#wrong  "}, {plan.DialectNCCL, "#wrong "}} {
		r := dialectRun(t, collectives.AllReduce, c.d)
		names := lineWith(r.stdout, "#       size")
		if !strings.HasSuffix(names, "busbw  "+c.tail) || strings.HasSuffix(names, c.tail+" ") {
			t.Errorf("%s: names line %q, want it to end in %q", c.d, names, c.tail)
		}
		units := lineWith(r.stdout, "#        (B)")
		if want := strings.Repeat(" ", len(names)-len(strings.TrimRight(names, " "))); !strings.HasSuffix(units, "(GB/s)  "+strings.Repeat(" ", 6)+want) ||
			len(units) != len(names) {
			t.Errorf("%s: units line %q (%d) vs names %d", c.d, units, len(units), len(names))
		}
	}
}

// TestDialectBlockingLine: -z's header line in each tool's words.
func TestDialectBlockingLine(t *testing.T) {
	for _, c := range []struct {
		d, z, want string
	}{
		{plan.DialectRCCL, "1", "# Blocking Enabled: wait for completion and barrier after each collective \n"},
		{plan.DialectRCCL, "2", "# Blocking Enabled: wait for completion after each collective (no barrier) \n"},
		{plan.DialectNCCL, "1", "# Blocking Enabled: wait and barrier after each inner iteration (-m) \n"},
		{plan.DialectNCCL, "2", "# Blocking Enabled: wait after each inner iteration (-m), no barrier \n"},
	} {
		if r := dialectRun(t, collectives.AllReduce, c.d, "-z", c.z); r.code != exit.OK || !strings.Contains(r.stdout, c.want) {
			t.Errorf("%s -z %s: exit %d, no %q in\n%s", c.d, c.z, r.code, c.want, r.stdout)
		}
	}
}

// TestDialectTimestamps: rccl-tests stamps a row after its in-place half only, so -S 1 -O 1 rows carry no
// timestamp there; nccl-tests stamps every row.
func TestDialectTimestamps(t *testing.T) {
	for _, c := range []struct {
		d, halves string
		stamped   bool
	}{{plan.DialectRCCL, "1", false}, {plan.DialectRCCL, "0", true}, {plan.DialectNCCL, "1", true}} {
		r := dialectRun(t, collectives.AllReduce, c.d, "-S", "1", "-O", c.halves)
		rows := tableRows(r.stdout)
		if r.code != exit.OK || len(rows) != 1 {
			t.Fatalf("%s -O %s: exit %d\n%s", c.d, c.halves, r.code, r.stdout)
		}
		if stamped := strings.Count(rows[0][len(rows[0])-1], ":") == 2; stamped != c.stamped {
			t.Errorf("%s -O %s: row %v, stamped %v", c.d, c.halves, rows[0], stamped)
		}
	}
}

// TestDialectAlgoColumn: with -A 1 rccl-tests asks the library only for all_reduce, all_gather, broadcast,
// reduce, reduce_scatter and alltoall, and prints N/A N/A N/A for the others (hypercube's 9-letter name never
// widens the row); nccl-tests' dialect prints this suite's algorithm wherever it is known.
func TestDialectAlgoColumn(t *testing.T) {
	for _, c := range []struct {
		coll *collectives.Collective
		d    string
		na   bool
	}{
		{collectives.HyperCube, plan.DialectRCCL, true}, {collectives.SendRecv, plan.DialectRCCL, true},
		{collectives.AllReduce, plan.DialectRCCL, false}, {collectives.HyperCube, plan.DialectNCCL, false},
	} {
		r := dialectRun(t, c.coll, c.d, "-A", "1", "-g", "2")
		rows := tableRows(r.stdout)
		if r.code != exit.OK || len(rows) != 1 {
			t.Fatalf("%s %s: exit %d\n%s", c.coll.Name, c.d, r.code, r.stdout)
		}
		f := rows[0]
		if na := f[len(f)-3] == "N/A"; na != c.na || f[len(f)-2] != "N/A" || f[len(f)-1] != "N/A" {
			t.Errorf("%s %s: row %v, want algorithm N/A %v", c.coll.Name, c.d, f, c.na)
		}
	}
}

// TestDialectBiasUnsupported: all_reduce_bias on a library (or engine) without ncclAllReduceWithBias exits
// with rccl-tests' collective-library error (3) and its message on stderr; nccl-tests' dialect notes the skip and
// exits 0.
func TestDialectBiasUnsupported(t *testing.T) {
	args := []string{"-b", "64", "-e", "64", "-n", "1", "--engine", "host", "-t", "2"}
	r := testRun(t, collectives.AllReduceBias, append(args, "--dialect", plan.DialectRCCL), hostengine.New())
	if r.code != exit.Library || r.stderr != bench.RCCLBiasMessage+"\n" || strings.Contains(r.stdout, "Out of bounds") {
		t.Errorf("rccl-tests: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = testRun(t, collectives.AllReduceBias, append(args, "--dialect", plan.DialectNCCL), hostengine.New())
	if r.code != exit.OK || !strings.Contains(r.stdout, "# all_reduce_bias skipped: ") || strings.Contains(r.stderr, "RCCL") {
		t.Errorf("nccl-tests: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestDialectNetCounters: with RCCL_TESTS_NET_COUNTER_ENABLE=1 the rccl-tests dialect announces the node's RDMA
// NICs and counters before the rows and prints NET_COUNTER_TABLE (deltas over the run) after them, reading
// what rccl-tests reads (here a planted sysfs whose counter moves during the run); without an RDMA NIC it prints
// rccl-tests' warning on stderr. The nccl-tests dialect notes the variables and reads nothing.
func TestDialectNetCounters(t *testing.T) {
	root := t.TempDir()
	old := report.SysRoot
	report.SysRoot = root
	defer func() { report.SysRoot = old }()
	env := map[string]string{"RCCL_TESTS_NET_COUNTER_ENABLE": "1"}
	run := func(d string, eng *fakeEngine) run {
		return runWith(t, collectives.AllReduce, seedArgs(1, "-b", "64", "-e", "64", "-n", "1", "--dialect", d),
			fakeSource(eng), func(a *app) { a.getenv = func(k string) string { return env[k] } })
	}
	r := run(plan.DialectRCCL, newFake(1))
	if r.code != exit.OK || r.stderr != "# Warning: no RDMA-capable NICs found, disabling net counter collection\n" ||
		strings.Contains(r.stdout, "Network counter") || strings.Contains(r.stdout, "NET_COUNTER_TABLE") {
		t.Errorf("no NIC: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, dir := range []string{"class/net/lo", "class/net/eth0/device/infiniband/bnxt_re0",
		"class/infiniband/bnxt_re0/ports/1/hw_counters", "class/infiniband/bnxt_re0/device/net/eth0"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	counter := filepath.Join(root, "class/infiniband/bnxt_re0/ports/1/hw_counters/rx_cnp_pkts")
	write := func(v string) {
		if err := os.WriteFile(counter, []byte(v+"\n"), 0o644); err != nil {
			t.Error(err)
		}
	}
	write("5")
	eng := newFake(1)
	eng.onLaunch = func(*collectives.Call) { write("105") }
	env["RCCL_TESTS_NIC_COUNTER_LIST"] = "rx_cnp_pkts,tx_cnp_pkts"
	r = run(plan.DialectRCCL, eng)
	host, _ := os.Hostname()
	announce := "# Network counter collection enabled (RCCL_TESTS_NET_COUNTER_ENABLE=1)\n" +
		"# Node " + host + ": lead rank 0 collecting 1 device(s): bnxt_re0(eth0)\n# NIC type: BNXT_RE\n" +
		"# Counters (2): rx_cnp_pkts tx_cnp_pkts\n"
	row := regexp.MustCompile(`\nbnxt_re0\(eth0\)      100  +\d+\.\d\d      0  +0\.00\n`)
	if r.code != exit.OK || r.stderr != "" || !strings.Contains(r.stdout, announce) ||
		!strings.Contains(r.stdout, "NET_COUNTER_TABLE: node="+host+"  rank=0  duration_sec=") || !row.MatchString(r.stdout) ||
		strings.Index(r.stdout, announce) < strings.Index(r.stdout, "#        (B)") ||
		strings.Index(r.stdout, "NET_COUNTER_TABLE") > strings.Index(r.stdout, "# Out of bounds") {
		t.Errorf("bnxt_re0: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	env["NCCL_IB_HCA"] = "bnxt_re1"
	if r = run(plan.DialectRCCL, newFake(1)); r.code != exit.OK || !strings.Contains(r.stdout, "# Device list from NCCL_IB_HCA\n") ||
		!strings.Contains(r.stdout, " collecting 1 device(s): bnxt_re1()\n") {
		t.Errorf("NCCL_IB_HCA: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = run(plan.DialectNCCL, newFake(1)); r.code != exit.OK || strings.Contains(r.stdout, "Network counter") ||
		!strings.Contains(r.stdout, "ignored: rccl-tests' NIC counters are read in its dialect only") {
		t.Errorf("nccl-tests: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestDialectLibraryRecord: under NCCL_DEBUG=VERSION the rccl-tests dialect prints RCCL's version banner lines
// (after the devices, as RCCL prints them at communicator creation) naming this suite's engine and binary, which
// rccl-tests' test runner records as the library it ran; the nccl-tests dialect prints none.
func TestDialectLibraryRecord(t *testing.T) {
	env := map[string]string{"NCCL_DEBUG": "VERSION"}
	self, _ := os.Executable()
	host, _ := os.Hostname()
	for _, d := range []string{plan.DialectRCCL, plan.DialectNCCL} {
		r := runWith(t, collectives.AllReduce, seedArgs(1, "-b", "8", "-e", "8", "--dialect", d), fakeSource(newFake(1)),
			func(a *app) { a.getenv = func(k string) string { return env[k] } })
		want := "[0000:00:00] Fake Device\nRCCL version : rcclx-tests-" + report.Version + ":fake-library=1\nHostname     : " + host +
			"\nLibrccl path : " + self + "\n#\n"
		if has := strings.Contains(r.stdout, want); r.code != exit.OK || has != (d == plan.DialectRCCL) ||
			d == plan.DialectNCCL && strings.Contains(r.stdout, "Librccl path") {
			t.Errorf("%s: exit %d, banner %v\n%s", d, r.code, has, r.stdout)
		}
	}
}

// TestDialectRefusals: where rccl-tests' main refuses its command line with return -1, its dialect prints
// rccl-tests' line alone on stderr and exits 255, before anything runs or is written (--dialect read even
// after the bad flag); nccl-tests' dialect, and every other refusal in both, stay one line of ours, exit 1.
func TestDialectRefusals(t *testing.T) {
	for _, c := range []struct {
		args []string
		line string
	}{
		{[]string{"-b", "12Q"}, "invalid size specified for 'minbytes'"},
		{[]string{"-e", "x"}, "invalid size specified for 'maxbytes'"},
		{[]string{"-i", "-5"}, "invalid size specified for 'stepBytes'"},
		{[]string{"-b", "2K", "-e", "1K"}, "invalid sizes for 'minbytes' and 'maxbytes': 2048 > 1024"},
		{[]string{"-Z", "xml"}, "Invalid --rccl_output_format: xml"},
		{[]string{"-D", "1", "-R", "1"}, "device implementation (-D > 0) requires enabling symmetric memory registration (-R 2)"},
		// rccl-tests reads every flag (stopping at a bad size), then checks -b against -e, -Z, -D in this order.
		{[]string{"-Z", "xml", "-b", "1x"}, "invalid size specified for 'minbytes'"},
		{[]string{"-D", "1", "-Z", "xml", "-b", "2K", "-e", "1K"}, "invalid sizes for 'minbytes' and 'maxbytes': 2048 > 1024"},
		{[]string{"-D", "1", "-Z", "xml"}, "Invalid --rccl_output_format: xml"},
		{[]string{"-o", "div"}, ""}, {[]string{"-d", "float7"}, ""}, {[]string{"-Y", "shared"}, ""}, {[]string{"-n", "0"}, ""},
	} {
		for _, d := range []string{plan.DialectRCCL, plan.DialectNCCL} {
			dir := t.TempDir()
			args := append(append([]string{"-J", filepath.Join(dir, "r.json"), "-X", filepath.Join(dir, "r.csv")}, c.args...),
				"--dialect", d)
			r := testRun(t, collectives.AllReduce, args, newFake(1))
			if d == plan.DialectNCCL || c.line == "" {
				if r.code != exit.Usage || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 ||
					!strings.HasPrefix(r.stderr, "all_reduce_perf: invalid ") {
					t.Errorf("%s %v: exit %d\n%s%s", d, c.args, r.code, r.stdout, r.stderr)
				}
			} else if r.code != exit.RCCLRefused || r.stdout != "" || r.stderr != c.line+"\n" {
				t.Errorf("%s %v: exit %d, stdout %q, stderr %q", d, c.args, r.code, r.stdout, r.stderr)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("%s %v wrote %v", d, c.args, entries)
			}
		}
	}
	r := runWith(t, collectives.AllReduce, []string{"-b", "x"}, fakeSource(newFake(1)),
		func(a *app) {
			a.getenv = func(k string) string { return map[string]string{plan.EnvDialect: plan.DialectRCCL}[k] }
		})
	if r.code != exit.RCCLRefused || r.stderr != "invalid size specified for 'minbytes'\n" {
		t.Errorf("%s: exit %d, stderr %q", plan.EnvDialect, r.code, r.stderr)
	}
}

// TestEarlyDialect: the dialect of a refusal made before any engine opens: --dialect (found after a bad flag
// too), else RCCLX_TESTS_DIALECT, else rccl-tests' on a machine with AMD's GPU driver and not NVIDIA's, or where
// --lib names an RCCL library or RCCLX_TESTS_GPU_RUNTIME is hip; else nccl-tests'.
func TestEarlyDialect(t *testing.T) {
	old := cli.DriverFiles
	defer func() { cli.DriverFiles = old }()
	dir := t.TempDir()
	kfd, nv := filepath.Join(dir, "kfd"), filepath.Join(dir, "nvidiactl")
	for _, c := range []struct {
		files []string
		args  []string
		env   map[string]string
		want  string
	}{
		{nil, nil, nil, plan.DialectNCCL},
		{[]string{kfd}, nil, nil, plan.DialectRCCL},
		{[]string{kfd, nv}, nil, nil, plan.DialectNCCL},
		{[]string{nv}, nil, nil, plan.DialectNCCL},
		{[]string{kfd}, []string{"-b", "x", "--dialect", "nccl-tests"}, nil, plan.DialectNCCL},
		{[]string{kfd}, []string{"--dialect=nccl-tests"}, nil, plan.DialectNCCL},
		{[]string{kfd}, nil, map[string]string{plan.EnvDialect: plan.DialectNCCL}, plan.DialectNCCL},
		{nil, []string{"--dialect", "rccl-tests"}, map[string]string{plan.EnvDialect: plan.DialectNCCL}, plan.DialectRCCL},
		{nil, []string{"--lib", "/opt/rocm/lib/librccl.so.1"}, nil, plan.DialectRCCL},
		{nil, []string{"--lib=libnccl.so.2"}, nil, plan.DialectNCCL},
		{nil, []string{"--", "--lib", "librccl.so"}, nil, plan.DialectNCCL},
		{[]string{nv}, nil, map[string]string{"RCCLX_TESTS_GPU_RUNTIME": "hip"}, plan.DialectRCCL},
		{nil, nil, map[string]string{"RCCLX_TESTS_GPU_RUNTIME": "cuda"}, plan.DialectNCCL},
	} {
		for _, f := range []string{kfd, nv} {
			_ = os.Remove(f)
		}
		for _, f := range c.files {
			if err := os.WriteFile(f, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cli.DriverFiles.AMD, cli.DriverFiles.NVIDIA = kfd, nv
		if got := cli.EarlyDialect(c.args, func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("files %v, args %v, env %v: %s, want %s", c.files, c.args, c.env, got, c.want)
		}
	}
}

// TestDialectHypercubeSkip: on a rank count that is not a power of two rccl-tests' hypercube prints its whole
// header, a line per thread saying it skips, no rows, and its trailer with an average of 0/0 (-nan, checked
// against nothing), and exits 0; its -J file has no results and a "nan" bandwidth, its -X file no rows. The
// dialect is the one of a refusal (here an AMD machine's); nccl-tests' dialect refuses the run before it starts.
func TestDialectHypercubeSkip(t *testing.T) {
	old := cli.DriverFiles
	defer func() { cli.DriverFiles = old }()
	dir := t.TempDir()
	cli.DriverFiles.AMD = filepath.Join(dir, "kfd")
	if err := os.WriteFile(cli.DriverFiles.AMD, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	units := "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)          \n"
	for _, c := range []struct {
		minBW, bw, okay string
	}{{"", "-nan ", "unchecked"}, {"100", "-nan OK", "false"}} {
		js, csv := filepath.Join(dir, "h"+c.minBW+".json"), filepath.Join(dir, "h"+c.minBW+".csv")
		r := runWith(t, collectives.HyperCube, seedArgs(1, "-b", "64", "-e", "64", "-t", "3", "-J", js, "-Z", "csv", "-X", csv),
			fakeSource(newFake(1)), func(a *app) {
				a.getenv = func(k string) string { return map[string]string{"NCCL_TESTS_MIN_BW": c.minBW}[k] }
			})
		skip := "nRanks 3 is not a power of 2, skipping\n"
		want := units + skip + skip + skip + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : " + c.bw +
			"\n#\n# Collective test concluded: hypercube_perf\n#\n\n"
		if r.code != exit.OK || !strings.HasSuffix(r.stdout, want) || !strings.Contains(r.stdout, "#  Rank  2 ") {
			t.Errorf("NCCL_TESTS_MIN_BW=%q: exit %d\n%s%s", c.minBW, r.code, r.stdout, r.stderr)
		}
		var rec map[string]any
		data, _ := os.ReadFile(js)
		if err := json.Unmarshal(data, &rec); err != nil || len(rec["results"].([]any)) != 0 ||
			!strings.Contains(string(data), `"average_bus_bandwidth":{"bandwidth":"nan","okay":"`+c.okay+`"}`) {
			t.Errorf("-J: %v\n%s", err, data)
		}
		if got, err := results.Load(js); err != nil || !math.IsNaN(float64(got.AverageBusBandwidth.Bandwidth)) {
			t.Errorf("-J read back: %v", err)
		}
		if data, _ := os.ReadFile(csv); string(data) != "numCycle,collective,gpus,size,type,redop,inplace,time,algbw,busbw,#wrong\n" {
			t.Errorf("-X: %q", data)
		}
	}
	js := filepath.Join(dir, "nccl.json")
	r := testRun(t, collectives.HyperCube, []string{"-t", "3", "-J", js, "--dialect", plan.DialectNCCL}, newFake(1))
	if _, err := os.Stat(js); r.code != exit.Usage || r.stdout != "" || err == nil ||
		r.stderr != "hypercube_perf: hypercube needs a power-of-two number of ranks, got 3\n" {
		t.Errorf("nccl-tests: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestDialectJSON: rccl-tests' -J writer: version 1, one line without a newline, "/" written "\/", the
// library's version under rccl_version, no per-iteration keys in config, and only the halves that ran; nccl-tests'
// dialect keeps nccl-tests' version 3 (nccl_version, per_iter_timing, per_iter_skip, null for a half not run).
// Both read back with this suite's loader.
func TestDialectJSON(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{plan.DialectRCCL, plan.DialectNCCL} {
		js := filepath.Join(dir, d+".json")
		r := dialectRun(t, collectives.AllReduce, d, "-O", "1", "-J", js)
		data, _ := os.ReadFile(js)
		s := string(data)
		var rec struct {
			Version int                        `json:"version"`
			Config  map[string]json.RawMessage `json:"config"`
			Results []map[string]json.RawMessage
		}
		if r.code != exit.OK || json.Unmarshal(data, &rec) != nil || len(rec.Results) != 1 ||
			!strings.Contains(r.stdout, "# Writing JSON output to "+js+"\n") {
			t.Fatalf("%s: exit %d\n%s\n%s", d, r.code, r.stdout, data)
		}
		_, inPlace := rec.Results[0]["in_place"]
		_, perIter := rec.Config["per_iter_timing"]
		_, perSkip := rec.Config["per_iter_skip"]
		rccl := d == plan.DialectRCCL
		if (rec.Version == 1) != rccl || (rec.Version == 3) == rccl || strings.Contains(s, `"rccl_version":`) != rccl ||
			strings.Contains(s, `"nccl_version":`) == rccl || strings.Contains(s, "\n") != !rccl ||
			strings.Contains(s, strings.ReplaceAll(js, "/", `\/`)) != rccl || inPlace == rccl || perIter == rccl ||
			perSkip == rccl || string(rec.Results[0]["root"]) != `"    -1"` || !regexp.MustCompile(`"nwrong": ?0,`).MatchString(s) {
			t.Errorf("%s:\n%s", d, data)
		}
		if _, err := results.Load(js); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
}
