package gpuengine

import (
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// The registry's value check of each tuning variable accepts exactly what readTuning accepts.
func TestTuningVariablesAgreeWithRegistry(t *testing.T) {
	values := []string{"0", "1", "-1", "64", "128", "129", "8M", "16K", "off", "on", "yes", "x", "1.5"}
	n := 0
	for _, v := range collectives.Variables {
		if len(v.Engines) != 1 || v.Engines[0] != collectives.EngineGPU || v.Check == nil {
			continue
		}
		n++
		for _, val := range values {
			_, readErr := readTuning(func(k string) string {
				if k == v.Name {
					return val
				}
				return ""
			})
			if checkErr := v.Check(val); (readErr == nil) != (checkErr == nil) {
				t.Errorf("%s=%q: readTuning %v, registry %v", v.Name, val, readErr, checkErr)
			}
		}
	}
	if n < 6 {
		t.Fatalf("only %d tuning variables checked", n)
	}
}

// Two values of a tuning variable mean the same in the registry (Variable.Same, an empty value the default)
// exactly when readTuning reads them alike.
func TestTuningMeaningsAgreeWithReader(t *testing.T) {
	values := []string{"", "0", "1", "01", "64", "064", "128", "8M", "8388608", "16M", "1M", "1024K", "off", "on"}
	for _, v := range collectives.Variables {
		if len(v.Engines) != 1 || v.Engines[0] != collectives.EngineGPU || v.Check == nil {
			continue
		}
		read := func(val string) (tuning, error) {
			return readTuning(func(k string) string {
				if k == v.Name {
					return val
				}
				return ""
			})
		}
		for _, a := range values {
			for _, b := range values {
				ta, errA := read(a)
				tb, errB := read(b)
				if errA == nil && errB == nil && v.Same(a, b) != (ta == tb) {
					t.Errorf("%s: Same(%q, %q) = %v, readTuning reads them alike: %v", v.Name, a, b, v.Same(a, b), ta == tb)
				}
			}
		}
	}
}
