package harness

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// harnessLayout is which packages of the harness each one may import: imports run one way, from the leaves
// (exit) to the root package (harness), which may import all of them and is imported by none.
var harnessLayout = map[string][]string{
	"exit":   nil,
	"plan":   {"exit"},
	"cli":    {"plan", "exit"},
	"report": {"plan", "exit"},
	"world":  {"plan", "exit"},
	"bench":  {"plan", "report", "world", "exit"},
}

// TestHarnessLayout holds the import direction of the harness's packages, read from their source.
func TestHarnessLayout(t *testing.T) {
	const module = "github.com/rcclx-tests/rcclx-tests/harness"
	dirs, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, d := range dirs {
		if !d.IsDir() || d.Name() == "testdata" {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(d.Name(), "*.go"))
		allowed, ok := harnessLayout[d.Name()]
		if !ok && len(files) > 0 {
			t.Errorf("harness/%s is not in harnessLayout: add it with the packages it may import", d.Name())
			continue
		}
		seen++
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range file.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if path != module && !strings.HasPrefix(path, module+"/") {
					continue
				}
				if name := strings.TrimPrefix(path, module+"/"); path == module || !slices.Contains(allowed, name) {
					t.Errorf("harness/%s imports %s: the layout allows only %v", f, path, allowed)
				}
			}
		}
	}
	if seen != len(harnessLayout) {
		t.Errorf("found %d of the %d packages in harnessLayout", seen, len(harnessLayout))
	}
}
