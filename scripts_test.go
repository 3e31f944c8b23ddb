package rcclxtests_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestAMDSmokeScript checks scripts/amd-smoke.sh without an AMD GPU: it parses (and passes shellcheck where
// installed); a dry run lists rcclx-doctor, every perf binary of cmd/ on both engines with 2 and 8 GPUs, the FP8
// types on both engines, one process per GPU, and RCCLX's DDA A/B as 8 processes of one GPU with --engine vendor,
// RCCLX's library and --ab RCCL_ENABLE_DDA_ALL_REDUCE=0,1; and a run on stand-in binaries fills the table from
// their logs, archives logs and JSON, and exits 1 when one of them failed.
func TestAMDSmokeScript(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	const script = "scripts/amd-smoke.sh"
	if out, err := exec.Command(bash, "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	if sc, err := exec.LookPath("shellcheck"); err == nil {
		if out, err := exec.Command(sc, script).CombinedOutput(); err != nil {
			t.Errorf("shellcheck: %v\n%s", err, out)
		}
	} else {
		t.Log("no shellcheck: bash -n only")
	}
	perf, _ := filepath.Glob("cmd/*_perf")
	for i := range perf {
		perf[i] = filepath.Base(perf[i])
	}
	if len(perf) < 12 {
		t.Fatalf("perf binaries %v", perf)
	}

	dir := t.TempDir()
	out, err := exec.Command(bash, script, "--dry-run", "--out", filepath.Join(dir, "dry"), "--bin", "/b",
		"--rcclx", "/x/librccl.so.1").CombinedOutput()
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	cmds, err := os.ReadFile(filepath.Join(dir, "dry", "commands.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(cmds), "\n")
	has := func(re string) bool {
		return slices.ContainsFunc(lines, regexp.MustCompile(re).MatchString)
	}
	want := []string{`^/b/rcclx-doctor$`,
		`^N=8: RANK=r WORLD_SIZE=8 .* /b/all_reduce_perf -g 1 --engine vendor --lib /x/librccl.so.1 --ab RCCL_ENABLE_DDA_ALL_REDUCE=0,1 `,
		`^N=8: .* /b/all_reduce_perf --engine vendor -g 1 `, `^N=8: .* /b/all_reduce_perf --engine gpu -g 1 `}
	for _, d := range []string{"f8e4m3", "f8e5m2"} {
		for _, e := range []string{"vendor", "gpu"} {
			want = append(want, `^/b/all_reduce_perf --engine `+e+` (--lib \S+ )?-g 2 -d `+d+` -o all `)
		}
	}
	for _, b := range perf {
		for _, e := range []string{"vendor", "gpu"} {
			for _, g := range []string{"2", "8"} {
				want = append(want, `^/b/`+b+` --engine `+e+` -g `+g+` .* -J \S+/`+b+`\.`+e+`\.g`+g+`\.json$`)
			}
		}
	}
	for _, re := range want {
		if !has(re) {
			t.Errorf("dry run lists no command matching %s", re)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "dry.tgz")); err != nil {
		t.Errorf("dry run: no archive: %v", err)
	}

	// Stand-ins: each prints a result's trailer; all_reduce_bias_perf fails; rcclx-doctor knows --require.
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	stub := "#!/bin/sh\necho \"rank ${RANK:-single} of ${WORLD_SIZE:-1}: $*\"\necho '# Out of bounds values : 0 OK'\n" +
		"echo '# Avg bus bandwidth    : 12.5 '\n"
	for _, b := range append(perf, "rcclx-doctor") {
		s := stub
		switch b {
		case "all_reduce_bias_perf":
			s += "exit 3\n"
		case "rcclx-doctor":
			s = "#!/bin/sh\necho \"doctor $*\"\n[ \"$1\" = --help ] && echo '  --require strings'\nexit 0\n"
		}
		os.WriteFile(filepath.Join(bin, b), []byte(s), 0o755)
	}
	run := filepath.Join(dir, "run")
	out, err = exec.Command(bash, script, "--out", run, "--bin", bin, "--gpus", "2").CombinedOutput()
	if e, ok := err.(*exec.ExitError); !ok || e.ExitCode() != 1 {
		t.Fatalf("a run with a failing binary: %v, want exit 1\n%s", err, out)
	}
	table, _ := os.ReadFile(filepath.Join(run, "table.txt"))
	for _, re := range []string{`(?m)^all_reduce_perf\.vendor\.g2 +0 +0 +12\.5$`, `(?m)^all_reduce_bias_perf\.gpu\.g2 +3 +0 +12\.5$`,
		`(?m)^procs\.gpu\.n2 +0 +0 +12\.5$`, `(?m)^doctor +0 `} {
		if !regexp.MustCompile(re).Match(table) {
			t.Errorf("table lacks %s:\n%s", re, table)
		}
	}
	if regexp.MustCompile(`\.g8 |rcclx`).Match(table) || !strings.Contains(string(out), "RCCLX DDA A/B left out: no --rcclx") {
		t.Errorf("2 GPUs and no RCCLX: 8-GPU or RCCLX rows ran:\n%s%s", table, out)
	}
	logs := map[string]string{"doctor.log": "doctor --require hip", "procs.gpu.n2.rank1.log": "rank 1 of 2: --engine gpu -g 1"}
	for name, want := range logs {
		if b, _ := os.ReadFile(filepath.Join(run, "logs", name)); !strings.Contains(string(b), want) {
			t.Errorf("logs/%s: %q, want %q", name, b, want)
		}
	}
	out, err = exec.Command("tar", "tzf", run+".tgz").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "run/logs/procs.vendor.n2.rank0.log") {
		t.Errorf("archive: %v\n%s", err, out)
	}
}
