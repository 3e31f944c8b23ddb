package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/results"
)

// TestOutputFilesBeforeTheRun: a -J or --csv path that cannot be created fails at once with one line naming
// the flag and the user's path (exit 1, nothing measured, nothing written); a directory is refused.
func TestOutputFilesBeforeTheRun(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		flag, path, text string
	}{
		{"-J", "/proc/rcclx-tests-out.json", "-J/--output_file"},
		{"-J", filepath.Join(plain, "r.json"), "not a directory"},
		{"-J", filepath.Join(dir, "missing", "r.json"), "no such file or directory"},
		{"-J", filepath.Join(dir, "sub.json"), "is a directory"},
		{"--csv", dir, "is a directory"},
		{"--csv", "/proc/rcclx-tests-out.csv", "--csv"},
	} {
		if strings.HasSuffix(c.path, "sub.json") {
			if err := os.Mkdir(c.path, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		// A sweep long enough that failing after it would show: 2 GiB of host-engine work.
		r := hostRun(t, collectives.AllReduce, c.flag, c.path, "-b", "1M", "-e", "64M", "-f", "2", "-n", "20")
		took := time.Since(start)
		if r.code != exit.Usage || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 ||
			!strings.Contains(r.stderr, fmt.Sprintf("%q", c.path)) || !strings.Contains(r.stderr, c.text) || took > time.Second {
			t.Errorf("%s %s: exit %d after %v, stdout %q, stderr %q", c.flag, c.path, r.code, took, r.stdout, r.stderr)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 { // plain and sub.json
		t.Errorf("files left: %v", entries)
	}
}

// TestOutputFilesNeverOverwrite: runs sharing one -J name each write their own file (path, path.0, path.1 ...),
// as nccl-tests does, created 0644 less the umask, and each prints the name it really wrote. (rccl-tests'
// -X file is opened as given, truncated: TestRCCLFileOpenedAsGiven.)
func TestOutputFilesNeverOverwrite(t *testing.T) {
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "r.json")
	if err := os.WriteFile(jsonPath, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	const n = 4
	var wg sync.WaitGroup
	outs := make([]run, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = hostRun(t, collectives.AllReduce, "-J", jsonPath, "-b", "8", "-e", "64", "-f", "2", "-n", "1")
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	umask := syscall.Umask(0)
	syscall.Umask(umask)
	for _, r := range outs {
		if r.code != exit.OK {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		for _, prefix := range []string{"# Writing JSON output to "} {
			i := strings.Index(r.stdout, prefix)
			if i < 0 {
				t.Fatalf("no %q line:\n%s", prefix, r.stdout)
			}
			name := strings.SplitN(r.stdout[i+len(prefix):], "\n", 2)[0]
			if seen[name] {
				t.Errorf("two runs printed %s", name)
			}
			seen[name] = true
			st, err := os.Stat(name)
			if err != nil || st.Mode().Perm() != 0o644&^os.FileMode(umask) {
				t.Errorf("%s: %v, mode %v", name, err, st.Mode())
			}
			if rec, err := results.Load(name); err != nil || len(rec.Results) != 4 {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
	if data, _ := os.ReadFile(jsonPath); string(data) != "keep" {
		t.Errorf("the existing %s was replaced", jsonPath)
	}
	if !seen[jsonPath+".0"] || !seen[jsonPath+".3"] || len(seen) != n {
		t.Errorf("names %v", seen)
	}
}

// TestJSONNameExtension: -J writes JSON where nccl-tests does, a name whose extension is json in any case;
// another name writes nothing and gets one # line before the header (nccl-tests says nothing there).
func TestJSONNameExtension(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name  string
		write bool
	}{{"r.json", true}, {"R.JSON", true}, {"r.Json", true}, {"r.txt", false}, {"r", false}, {"r.json.bak", false}} {
		path := filepath.Join(dir, c.name)
		r := hostRun(t, collectives.AllReduce, "-J", path, "-b", "8", "-e", "8", "-n", "1")
		_, err := os.Stat(path)
		ignored := "# -J " + path + " ignored: only .json output is written\n"
		if r.code != exit.OK || (err == nil) != c.write || strings.HasPrefix(r.stdout, ignored) == c.write ||
			strings.Contains(r.stdout, "# Writing JSON output to "+path+"\n") != c.write {
			t.Errorf("-J %s: exit %d, file %v, stdout %q", c.name, r.code, err, r.stdout)
		}
	}
}
