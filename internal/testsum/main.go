// Command testsum reads the events of `go test -json` on stdin and prints what plain `go test` prints for each
// package: the ok line of a package that passed, the output of the tests that failed and the FAIL lines of one
// that did not. It ends with one line naming the tests skipped for want of a GPU, by package, and why. It
// exits 1 when a package failed or none reported. `make test` pipes `go test -json` into it.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
)

func main() {
	os.Exit(run(os.Stdin, os.Stdout))
}

// event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// pkgState is what a package printed so far, kept until it ends (packages run in parallel and their events
// interleave; plain `go test` prints each package whole).
type pkgState struct {
	lines  []event
	failed map[string]bool
	logged map[string]string // the last line each test logged: a skipped test's reason
}

// skip is a test that skipped, and why.
type skip struct{ pkg, test, reason string }

func run(in io.Reader, out io.Writer) int {
	pkgs := map[string]*pkgState{}
	var skips []skip
	ended, failed := 0, false
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Fprintln(out, sc.Text()) // not an event: go test's own message
			continue
		}
		if e.Package == "" { // build output: go test prints it on stderr itself
			failed = failed || e.Action == "build-fail"
			continue
		}
		p := pkgs[e.Package]
		if p == nil {
			p = &pkgState{failed: map[string]bool{}, logged: map[string]string{}}
			pkgs[e.Package] = p
		}
		switch {
		case e.Action == "output":
			p.lines = append(p.lines, e)
			if m := logLine.FindStringSubmatch(strings.TrimRight(e.Output, "\n")); e.Test != "" && m != nil {
				p.logged[e.Test] = strings.TrimSpace(m[1])
			}
		case e.Test != "" && e.Action == "fail":
			p.failed[e.Test] = true
		case e.Test != "" && e.Action == "skip":
			skips = append(skips, skip{e.Package, e.Test, cmp.Or(p.logged[e.Test], "no reason given")})
		case e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
			ended++
			failed = failed || e.Action == "fail"
			p.print(out, e.Action == "fail")
			delete(pkgs, e.Package)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(out, "testsum: reading go test -json: %v\n", err)
		failed = true
	}
	for name, p := range pkgs { // a package that never ended: go test was killed
		fmt.Fprintf(out, "FAIL\t%s: no result (go test stopped)\n", name)
		p.print(out, true)
		failed = true
	}
	if ended == 0 {
		fmt.Fprintln(out, "testsum: no package reported a result")
		failed = true
	}
	if failed {
		fmt.Fprintln(out, "FAIL")
	}
	fmt.Fprintln(out, summary(skips))
	if failed {
		return 1
	}
	return 0
}

// logLine is a line a test logged (t.Log, t.Skip): "    file_test.go:12: text".
var logLine = regexp.MustCompile(`^\s+\S+\.go:\d+: (.*)$`)

// print writes what plain `go test` shows of a package: its ok (or "no test files") line where it passed, the
// output of its failed tests and its own lines where it failed; the run/pass/skip framing of -json's verbose
// mode never.
func (p *pkgState) print(out io.Writer, failed bool) {
	for _, e := range p.lines {
		text := e.Output
		switch {
		case strings.HasPrefix(text, "=== "), text == "PASS\n":
		case !failed:
			if strings.HasPrefix(text, "ok  \t") || strings.HasPrefix(text, "?   \t") {
				fmt.Fprint(out, text)
			}
		case e.Test == "" || p.failed[e.Test]:
			fmt.Fprint(out, text)
		}
	}
}

// gpuReason tells a skip for want of a GPU, its driver, runtime or collective library from others (no C
// compiler, -short, a planted condition).
var gpuReason = regexp.MustCompile(`(?i)\b(gpus?|cuda|nvrtc|hiprtc|nccl|rccl|driver|devices?)\b|libcuda|libamdhip|libnccl|librccl|\bsm_\d`)

// summary is the closing line: how many tests skipped for want of a GPU, in which packages, and why (each
// reason once, up to its first "; ", with its count), then the other skips the same way.
func summary(skips []skip) string {
	var gpu, other []skip
	for _, s := range skips {
		if gpuReason.MatchString(s.reason) {
			gpu = append(gpu, s)
		} else {
			other = append(other, s)
		}
	}
	line := "skipped: no GPU-only tests"
	if len(gpu) > 0 {
		line = fmt.Sprintf("skipped: %s in %s: %s", tests(len(gpu), "GPU-only "), counts(gpu, pkgName), counts(gpu, shortReason))
	}
	if len(other) > 0 {
		line += fmt.Sprintf("; %s: %s", tests(len(other), "other "), counts(other, shortReason))
	}
	return line
}

func tests(n int, what string) string {
	if n == 1 {
		return "1 " + what + "test"
	}
	return fmt.Sprintf("%d %stests", n, what)
}

// counts lists the distinct keys of skips with their counts, most first: `gpurt (8), nccl (6)`.
func counts(skips []skip, key func(skip) string) string {
	n := map[string]int{}
	var keys []string
	for _, s := range skips {
		k := key(s)
		if n[k] == 0 {
			keys = append(keys, k)
		}
		n[k]++
	}
	slices.SortStableFunc(keys, func(a, b string) int { return cmp.Or(n[b]-n[a], strings.Compare(a, b)) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s (%d)", k, n[k])
	}
	return strings.Join(parts, ", ")
}

// pkgName is a package's path within this module: gpurt, cmd/rcclx-doctor.
func pkgName(s skip) string {
	return strings.TrimPrefix(s.pkg, "github.com/rcclx-tests/rcclx-tests/")
}

// shortReason is a skip's reason up to its first "; " (a loader's error lists every path it tried), quoted.
func shortReason(s skip) string {
	r, _, _ := strings.Cut(s.reason, "; ")
	return fmt.Sprintf("%q", r)
}
