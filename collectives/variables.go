package collectives

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Engine names whose every environment variable is in Variables: for them a name outside the registry reads
// nothing. The vendor engine's library reads variables of its own (see LibraryScanner).
const (
	EngineHost   = "host"
	EngineGPU    = "gpu"
	EngineVendor = "vendor"
)

// Variable is one environment variable this suite reads.
type Variable struct {
	Name string
	// Engines are the engines whose communicators read it (Config.Env first, so -E and --ab reach it); none:
	// the process reads it from its own environment (a launcher's or a test's setting, not a communicator's).
	Engines []string
	// Check validates a value; nil takes any.
	Check func(value string) error
}

// LibraryScanner is an engine that loads a library of its own, which may read any variable. It can search the
// file that Open would load for a variable's name before anything is opened: NCCL_PARAM and RCCL_PARAM build
// the whole name ("NCCL_" or "RCCL_" and the rest) as one string constant, so a library that reads a variable
// contains its name.
type LibraryScanner interface {
	LibraryReads(cfg Config, name string) (read bool, library string, err error)
}

// ReadBy reports whether engine reads v.
func (v Variable) ReadBy(engine string) bool { return slices.Contains(v.Engines, engine) }

var (
	ours     = []string{EngineHost, EngineGPU}
	everyOne = []string{EngineHost, EngineGPU, EngineVendor}
	gpuOnly  = []string{EngineGPU}
)

// Variables is every environment variable the suite reads, with the engines that read it. A test walks the
// source for names of the suite's prefixes, so a reader cannot add one without adding it here.
var Variables = buildVariables()

func buildVariables() []Variable {
	var vs []Variable
	policyVar := func(name string) Variable { return Variable{name, ours, policyCheck(name)} }
	for _, name := range []string{EnvDDA, EnvLP, EnvDDANRanks, "RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES",
		"RCCL_DDA_MAX_BLOCKS", "RCCL_DDA_SENDBUF_BYTES", "RCCLX_TESTS_LP_MIN_BYTES", "RCCLX_TESTS_LP_BLOCK",
		"RCCLX_TESTS_LP_MODE"} {
		vs = append(vs, policyVar(name))
	}
	for _, c := range policyColls {
		n := policyEnv[c]
		vs = append(vs, policyVar(n.dda), policyVar(n.ddaMax), policyVar(n.lp))
	}
	rank := func(s string) error {
		if r, err := strconv.Atoi(s); err != nil || r < 0 {
			return fmt.Errorf("want a rank (0 or more)")
		}
		return nil
	}
	size := func(s string) error { _, err := ParseSize(s); return err }
	vs = append(vs,
		Variable{EnvSkipRank, everyOne, rank},
		Variable{EnvCorruptRank, everyOne, rank},
		Variable{EnvDelayUS, nil, ValidateDelay},
		Variable{"RCCLX_TESTS_SEED", nil, nil},
		Variable{"RCCLX_TESTS_BOOTSTRAP", nil, nil},
		Variable{"RCCLX_TESTS_AB_WORKER", nil, nil}, // set by --ab in its workers
		Variable{"NCCL_TESTS_ALLTOALLV_SPREAD", nil, nil},
		Variable{"NCCL_TESTS_ALLTOALLV_MATRIX_FILE", nil, nil},
		Variable{"NCCL_TESTS_ALLTOALLV_MATRIX_SCALE", nil, nil},
		Variable{"NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY", nil, nil},
		Variable{"NCCL_TESTS_MIN_BW", nil, func(s string) error {
			_, err := strconv.ParseFloat(s, 64)
			return err
		}},
		Variable{"RCCLX_TESTS_VENDOR_ALLTOALL", []string{EngineVendor}, oneOf("native", "sendrecv")},
		Variable{"RCCLX_TESTS_LIBCUDA", gpuOnly, nil},
		Variable{"RCCLX_TESTS_LIBNVRTC", gpuOnly, nil},
		Variable{"RCCLX_TESTS_KERNEL_CACHE", gpuOnly, nil},
		Variable{"RCCLX_TESTS_GPU_RING_BLOCKS", gpuOnly, blocks},
		Variable{"RCCLX_TESTS_GPU_LP_BLOCKS", gpuOnly, blocks},
		Variable{"RCCLX_TESTS_GPU_CE_BYTES", gpuOnly, func(s string) error {
			if s == "off" {
				return nil
			}
			return size(s)
		}},
		Variable{"RCCLX_TESTS_GPU_CE_CHUNK", gpuOnly, size},
		Variable{"RCCLX_TESTS_GPU_LL_BYTES", gpuOnly, size},
		Variable{"RCCLX_TESTS_GPU_LAUNCHERS", gpuOnly, oneOf("on", "off", "1", "0")},
	)
	return vs
}

// MaxGPUBlocks is the most blocks a GPU engine kernel may be given (RCCLX_TESTS_GPU_*_BLOCKS).
const MaxGPUBlocks = 128

func blocks(s string) error {
	if n, err := strconv.Atoi(s); err != nil || n < 1 || n > MaxGPUBlocks {
		return fmt.Errorf("want 1..%d", MaxGPUBlocks)
	}
	return nil
}

func oneOf(vals ...string) func(string) error {
	return func(s string) error {
		if !slices.Contains(vals, s) {
			return fmt.Errorf("want %s", strings.Join(vals, ", "))
		}
		return nil
	}
}

// policyCheck checks a value by reading the policy with only that variable set: the reader is the check.
func policyCheck(name string) func(string) error {
	return func(v string) error {
		_, err := PolicyFromEnv(func(k string) string {
			if k == name {
				return v
			}
			return ""
		})
		return err
	}
}

// LookupVariable finds name in Variables.
func LookupVariable(name string) (Variable, bool) {
	i := slices.IndexFunc(Variables, func(v Variable) bool { return v.Name == name })
	if i < 0 {
		return Variable{}, false
	}
	return Variables[i], true
}

// CheckVariable says whether engine reads name, and checks value where it does: an error names the variable,
// the closest known name for an unknown one ("did you mean RCCL_DDA_ENABLE?"), or the engines that read it.
func CheckVariable(engine, name, value string) error {
	v, ok := LookupVariable(name)
	if !ok {
		return fmt.Errorf("%s is not a variable the %s engine reads: did you mean %s?", name, engine, ClosestVariable(name))
	}
	if len(v.Engines) > 0 && !v.ReadBy(engine) {
		return fmt.Errorf("%s is read by the %s engine, not %s", name, strings.Join(v.Engines, " and "), engine)
	}
	if v.Check != nil {
		if err := v.Check(value); err != nil {
			return fmt.Errorf("%s=%q: %v", name, value, err)
		}
	}
	return nil
}

// ClosestVariable is the registered name nearest to name by edit distance (ties: the first registered).
func ClosestVariable(name string) string {
	best, dist := "", -1
	for _, v := range Variables {
		if d := editDistance(name, v.Name); dist < 0 || d < dist {
			best, dist = v.Name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b: the fewest inserted, deleted or replaced bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
