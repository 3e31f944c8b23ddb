package main

import (
	"bytes"
	"strings"
	"testing"
)

const mod = "github.com/rcclx-tests/rcclx-tests/"

// stream is go test -json's report of two packages, their events interleaved: gpurt passes with two tests
// skipped for want of a driver and one for want of a compiler; numeric fails one subtest.
var stream = strings.Join([]string{
	`{"Action":"start","Package":"` + mod + `gpurt"}`,
	`{"Action":"start","Package":"` + mod + `numeric"}`,
	`{"Action":"output","Package":"` + mod + `gpurt","Test":"TestGPUA","Output":"=== RUN   TestGPUA\n"}`,
	`{"Action":"output","Package":"` + mod + `gpurt","Test":"TestGPUA","Output":"    gpu_test.go:9: no CUDA driver: cuda: cannot load the CUDA driver (libcuda.so.1); tried libcuda.so.1: cannot open shared object file\n"}`,
	`{"Action":"output","Package":"` + mod + `gpurt","Test":"TestGPUA","Output":"--- SKIP: TestGPUA (0.00s)\n"}`,
	`{"Action":"skip","Package":"` + mod + `gpurt","Test":"TestGPUA"}`,
	`{"Action":"output","Package":"` + mod + `numeric","Test":"TestBad/sub","Output":"    a_test.go:7: boom\n"}`,
	`{"Action":"output","Package":"` + mod + `numeric","Test":"TestBad/sub","Output":"--- FAIL: TestBad/sub (0.00s)\n"}`,
	`{"Action":"fail","Package":"` + mod + `numeric","Test":"TestBad/sub"}`,
	`{"Action":"output","Package":"` + mod + `numeric","Test":"TestBad/good","Output":"    a_test.go:8: fine\n"}`,
	`{"Action":"pass","Package":"` + mod + `numeric","Test":"TestBad/good"}`,
	`{"Action":"output","Package":"` + mod + `numeric","Test":"TestBad","Output":"--- FAIL: TestBad (0.00s)\n"}`,
	`{"Action":"fail","Package":"` + mod + `numeric","Test":"TestBad"}`,
	`{"Action":"output","Package":"` + mod + `gpurt","Test":"TestGPUB","Output":"    gpu_test.go:19: no CUDA driver: cuda: cannot load the CUDA driver (libcuda.so.1); tried libcuda.so\n"}`,
	`{"Action":"skip","Package":"` + mod + `gpurt","Test":"TestGPUB"}`,
	`{"Action":"output","Package":"` + mod + `gpurt","Test":"TestHost","Output":"    host_test.go:3: quiet log of a passing test\n"}`,
	`{"Action":"pass","Package":"` + mod + `gpurt","Test":"TestHost"}`,
	`{"Action":"output","Package":"` + mod + `gpurt","Test":"TestCC","Output":"    cc_test.go:3: no g++: the host build needs a C++ compiler\n"}`,
	`{"Action":"skip","Package":"` + mod + `gpurt","Test":"TestCC"}`,
	`{"Action":"output","Package":"` + mod + `gpurt","Output":"PASS\n"}`,
	`{"Action":"output","Package":"` + mod + `gpurt","Output":"ok  \t` + mod + `gpurt\t0.277s\n"}`,
	`{"Action":"pass","Package":"` + mod + `gpurt"}`,
	`{"Action":"output","Package":"` + mod + `numeric","Output":"FAIL\n"}`,
	`{"Action":"output","Package":"` + mod + `numeric","Output":"FAIL\t` + mod + `numeric\t0.017s\n"}`,
	`{"Action":"fail","Package":"` + mod + `numeric"}`,
}, "\n") + "\n"

func summarize(t *testing.T, in string) (int, []string) {
	t.Helper()
	var out bytes.Buffer
	code := run(strings.NewReader(in), &out)
	return code, strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
}

// TestPlainOutputAndOneSkipLine: each package prints as plain go test prints it (ok line; failed tests'
// output and FAIL lines), a failure exits 1, and one line at the end says which tests skipped for want of a
// GPU and why, apart from the other skips.
func TestPlainOutputAndOneSkipLine(t *testing.T) {
	code, lines := summarize(t, stream)
	want := []string{
		"ok  \t" + mod + "gpurt\t0.277s",
		"    a_test.go:7: boom",
		"--- FAIL: TestBad/sub (0.00s)",
		"--- FAIL: TestBad (0.00s)",
		"FAIL",
		"FAIL\t" + mod + "numeric\t0.017s",
		"FAIL",
		`skipped: 2 GPU-only tests in gpurt (2): "no CUDA driver: cuda: cannot load the CUDA driver (libcuda.so.1)" (2); ` +
			`1 other test: "no g++: the host build needs a C++ compiler" (1)`,
	}
	if code != 1 || strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("exit %d, output:\n%s\nwant:\n%s", code, strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}

	passing := strings.ReplaceAll(stream, `"fail"`, `"pass"`)
	if code, lines := summarize(t, passing); code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[1], "skipped: 2 GPU-only") {
		t.Errorf("all passed: exit %d, output %q", code, lines)
	}
}

// TestNothingReportedFails: no result (go test could not start), a package cut off (go test killed) and a
// failed build all exit 1; a line that is not an event is passed through.
func TestNothingReportedFails(t *testing.T) {
	if code, lines := summarize(t, "go: cannot find main module\n"); code != 1 || lines[0] != "go: cannot find main module" {
		t.Errorf("no events: exit %d, %q", code, lines)
	}
	cut := stream[:strings.Index(stream, `{"Action":"output","Package":"`+mod+`numeric","Output":"FAIL\n"}`)]
	if code, lines := summarize(t, cut); code != 1 || !strings.Contains(strings.Join(lines, "\n"), "numeric: no result") {
		t.Errorf("cut off: exit %d, %q", code, lines)
	}
	build := `{"ImportPath":"x [x.test]","Action":"build-fail"}` + "\n" +
		`{"Action":"output","Package":"x","Output":"FAIL\tx [build failed]\n"}` + "\n" + `{"Action":"fail","Package":"x"}` + "\n"
	if code, lines := summarize(t, build); code != 1 || lines[0] != "FAIL\tx [build failed]" || lines[len(lines)-1] != "skipped: no GPU-only tests" {
		t.Errorf("build failure: exit %d, %q", code, lines)
	}
}
