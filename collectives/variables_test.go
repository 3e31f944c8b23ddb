package collectives

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestClosestVariable(t *testing.T) {
	for typo, want := range map[string]string{
		"RCCL_DDA_ENABLED":           "RCCL_DDA_ENABLE",
		"RCCL_ENABLE_DDA_ALLREDUCE":  "RCCL_ENABLE_DDA_ALL_REDUCE",
		"RCCLX_TESTS_DELAY":          "RCCLX_TESTS_DELAY_US",
		"RCCL_DDA_NRANK":             "RCCL_DDA_NRANKS",
		"RCCL_LOW_PRECISION_ENABLED": "RCCL_LOW_PRECISION_ENABLE",
	} {
		if got := ClosestVariable(typo); got != want {
			t.Errorf("ClosestVariable(%s) = %s, want %s", typo, got, want)
		}
	}
	err := CheckVariable(EngineHost, "RCCL_DDA_ENABLED", "1")
	if err == nil || err.Error() != "RCCL_DDA_ENABLED is not a variable the host engine reads: did you mean RCCL_DDA_ENABLE?" {
		t.Fatalf("unknown name: %v", err)
	}
	if d := editDistance("kitten", "sitting"); d != 3 {
		t.Errorf("editDistance(kitten, sitting) = %d", d)
	}
}

func TestCheckVariable(t *testing.T) {
	for _, tc := range []struct {
		engine, name, value string
		ok                  bool
	}{
		{EngineHost, EnvDDA, "1", true},
		{EngineGPU, "RCCL_ENABLE_DDA_ALL_REDUCE", "0", true},
		{EngineHost, EnvDDA, "yes", false},
		{EngineHost, EnvDDANRanks, "8", true},
		{EngineHost, EnvDDANRanks, "0", false},
		{EngineGPU, "RCCL_DDA_ALL_REDUCE_TREE_MAX_BYTES", "16M", true},
		{EngineGPU, "RCCL_DDA_ALL_REDUCE_TREE_MAX_BYTES", "lots", false},
		{EngineHost, EnvDelayUS, "2000", true}, // read by the process, whatever the engine
		{EngineHost, EnvDelayUS, "-1", false},
		{EngineHost, "RCCLX_TESTS_GPU_CE_BYTES", "off", false}, // the GPU engine's only
		{EngineGPU, "RCCLX_TESTS_GPU_CE_BYTES", "off", true},
		{EngineGPU, "RCCLX_TESTS_GPU_RING_BLOCKS", "0", false},
		{EngineHost, "NCCL_MAX_NCHANNELS", "1", false},
		{EngineHost, EnvSkipRank, "", true}, // unset
		{EngineGPU, "RCCLX_TESTS_GPU_RING_BLOCKS", "", true},
	} {
		if err := CheckVariable(tc.engine, tc.name, tc.value); (err == nil) != tc.ok {
			t.Errorf("CheckVariable(%s, %s, %q) = %v, want ok %v", tc.engine, tc.name, tc.value, err, tc.ok)
		}
	}
}

// suiteName is a name of the suite's own environment variables.
var suiteName = regexp.MustCompile(`^(RCCL|RCCLX_TESTS|NCCL_TESTS)_[A-Z0-9_]+$`)

// The registry is every variable the code reads: every string constant of the suite's prefixes in the module's
// non-test Go files is registered, and every registered name occurs in them.
func TestVariablesCoverSource(t *testing.T) {
	inCode := map[string]string{}
	root := ".."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && suiteName.MatchString(s) {
					inCode[s] = path
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(inCode) < 30 {
		t.Fatalf("found only %d names: is the walk looking at the module?", len(inCode))
	}
	for name, path := range inCode {
		if _, ok := LookupVariable(name); !ok {
			t.Errorf("%s (%s) is not in Variables", name, path)
		}
	}
	for _, v := range Variables {
		if _, ok := inCode[v.Name]; !ok {
			t.Errorf("%s is in Variables but no code names it", v.Name)
		}
	}
	var names []string
	for _, v := range Variables {
		names = append(names, v.Name)
	}
	slices.Sort(names)
	if len(slices.Compact(names)) != len(Variables) {
		t.Error("a variable is registered twice")
	}
}

// Two values of a policy variable mean the same (Variable.Same) exactly when the policy read with either is the
// same, with the master switches off and on: an empty value is the reader's default, and a per-collective
// switch left empty follows its master, as no value does.
func TestPolicyMeaningsAgreeWithReader(t *testing.T) {
	values := []string{"", "0", "00", "1", "01", "true", "false", "8", "08", "24", "128", "200K", "204800", "1M",
		"16M", "29M", "rcclx", "scaled", "x"}
	n := 0
	for _, v := range Variables {
		if !slices.Equal(v.Engines, ours) {
			continue
		}
		n++
		// read is the policy with v set to val and the master switches set to master (where v is not one).
		read := func(val, master string) (Policy, error) {
			return PolicyFromEnv(func(k string) string {
				switch k {
				case v.Name:
					return val
				case EnvDDA, EnvLP:
					return master
				}
				return ""
			})
		}
		for _, a := range values {
			for _, b := range values {
				alike, ok := true, true
				for _, master := range []string{"", "1"} {
					pa, errA := read(a, master)
					pb, errB := read(b, master)
					ok = ok && errA == nil && errB == nil
					alike = alike && reflect.DeepEqual(pa, pb)
				}
				if ok && v.Same(a, b) != alike {
					t.Errorf("%s: Same(%q, %q) = %v, but the reader reads them alike: %v", v.Name, a, b, v.Same(a, b), alike)
				}
			}
		}
	}
	if n < 20 {
		t.Fatalf("only %d policy variables checked", n)
	}
}

func TestMeanings(t *testing.T) {
	for _, c := range []struct {
		name, a, b string
		same       bool
	}{
		{EnvDelayUS, "0", "00", true},
		{EnvDelayUS, "", "0", true},
		{EnvDelayUS, "1", "0", false},
		{EnvSkipRank, "", "0", false},
		{EnvSkipRank, "1", "01", true},
		{"NCCL_TESTS_ALLTOALLV_SPREAD", "", "1", true},
		{"NCCL_TESTS_ALLTOALLV_SPREAD", "1.0", "1", true},
		{"NCCL_TESTS_ALLTOALLV_SPREAD", "2", "1", false}, // refused: means only itself
		{"NCCL_TESTS_ALLTOALLV_SPREAD", "0.5", "1", false},
		{"NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY", "", "0", true},
		{"NCCL_TESTS_ALLTOALLV_MATRIX_FILE", "m.txt", "./m.txt", false}, // only the text is known
		{"NCCL_ALGO", "Ring", "ring", false},                            // not the suite's: only the text
		{"NCCL_ALGO", "1", "01", false},
	} {
		v, _ := LookupVariable(c.name)
		if got := v.Same(c.a, c.b); got != c.same {
			t.Errorf("%s: Same(%q, %q) = %v", c.name, c.a, c.b, got)
		}
	}
}
