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
	// Colls are the collectives whose runs it can change; none: every collective.
	Colls []*Collective
	// Overridable: read by the process (no Engines), but with -E's overrides over its environment.
	Overridable bool
	// Check validates a value; nil takes any.
	Check func(value string) error
	// Meaning is what a value means to the suite's reader, an empty value its default, so that two spellings
	// of one setting compare equal ("0" and "00"); nil: only the text is known.
	Meaning func(value string) any
	policy  bool // PolicyFromEnv reads it
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

// Policy reports whether the RCCLX policy (PolicyFromEnv) reads it.
func (v Variable) Policy() bool { return v.policy }

// ReadFor reports whether v can change a run of c.
func (v Variable) ReadFor(c *Collective) bool {
	return len(v.Colls) == 0 || slices.Contains(v.Colls, c.Base())
}

// Same reports whether two values of v certainly mean the same to the suite's reader: the same text, or the
// same Meaning.
func (v Variable) Same(a, b string) bool {
	return a == b || v.Meaning != nil && v.Meaning(a) == v.Meaning(b)
}

var (
	ours     = []string{EngineHost, EngineGPU}
	everyOne = []string{EngineHost, EngineGPU, EngineVendor}
	gpuOnly  = []string{EngineGPU}
)

// Variables is every environment variable the suite reads, with the engines that read it. A test walks the
// source for names of the suite's prefixes, so a reader cannot add one without adding it here.
var Variables = buildVariables()

func buildVariables() []Variable {
	policyVar := func(name string, colls []*Collective, meaning func(string) any) Variable {
		return Variable{Name: name, Engines: ours, Colls: colls, Check: policyCheck(name), Meaning: meaning, policy: true}
	}
	vs := []Variable{
		policyVar(EnvDDA, policyColls, meaning(strconv.ParseBool, false)),
		policyVar(EnvLP, policyColls, meaning(strconv.ParseBool, false)),
		policyVar(EnvDDANRanks, policyColls, meaning(strconv.Atoi, 0)),
		policyVar("RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES", []*Collective{AllReduce}, meaning(ParseSize, defaultFlatMax)),
		policyVar("RCCL_DDA_MAX_BLOCKS", policyColls, meaning(ParseSize, defaultMaxBlocks)),
		// Every collective: the GPU engine cuts every transfer to half this buffer.
		policyVar("RCCL_DDA_SENDBUF_BYTES", nil, meaning(ParseSize, defaultSendBuf)),
		policyVar("RCCLX_TESTS_LP_MIN_BYTES", policyColls, meaning(ParseSize, defaultLPMinBytes)),
		policyVar("RCCLX_TESTS_LP_BLOCK", policyColls, meaning(ParseSize, defaultLPBlock)),
		policyVar("RCCLX_TESTS_LP_MODE", policyColls, meaning(word, LPModeRCCLX)),
	}
	for _, c := range policyColls {
		n, only := policyEnv[c], []*Collective{c}
		vs = append(vs, policyVar(n.dda, only, switchMeaning),
			policyVar(n.ddaMax, only, meaning(ParseSize, ddaMaxDefault[c])), policyVar(n.lp, only, switchMeaning))
	}
	rank := func(s string) error {
		if r, err := strconv.Atoi(s); err != nil || r < 0 {
			return fmt.Errorf("want a rank (0 or more)")
		}
		return nil
	}
	alltoallv := []*Collective{AllToAllV}
	vs = append(vs,
		Variable{Name: EnvSkipRank, Engines: everyOne, Check: rank, Meaning: meaning(strconv.Atoi, -1)},
		Variable{Name: EnvCorruptRank, Engines: everyOne, Check: rank, Meaning: meaning(strconv.Atoi, -1)},
		Variable{Name: EnvDelayUS, Check: ValidateDelay, Meaning: meaning(parseDelay, 0)},
		Variable{Name: "RCCLX_TESTS_SEED"},
		Variable{Name: "RCCLX_TESTS_BOOTSTRAP"},
		Variable{Name: "RCCLX_TESTS_RUN_ID"},
		Variable{Name: "RCCLX_TESTS_DIALECT", Check: oneOf("nccl-tests", "rccl-tests")},
		Variable{Name: "RCCLX_TESTS_AB_WORKER"}, // set by --ab in its workers
		Variable{Name: envVSpread, Colls: alltoallv, Overridable: true, Check: checkOf(vSpread), Meaning: meaning(vSpread, 1)},
		Variable{Name: envVMatrix, Colls: alltoallv, Overridable: true},
		Variable{Name: envVScale, Colls: alltoallv, Overridable: true, Check: checkOf(vScale), Meaning: meaning(vScale, 1)},
		Variable{Name: envVSummary, Colls: alltoallv, Overridable: true, Check: checkOf(vSummary), Meaning: meaning(vSummary, false)},
		Variable{Name: "NCCL_TESTS_MIN_BW", Check: func(s string) error {
			_, err := strconv.ParseFloat(s, 64)
			return err
		}},
		Variable{Name: "RCCLX_TESTS_VENDOR_ALLTOALL", Engines: []string{EngineVendor}, Colls: []*Collective{AllToAll},
			Check: oneOf("native", "sendrecv")},
		Variable{Name: EnvFP8, Engines: []string{EngineHost}, Check: checkOf(ParseFP8Flavour),
			Meaning: meaning(ParseFP8Flavour, FP8OCP)},
		Variable{Name: "RCCLX_TESTS_LIBCUDA", Engines: gpuOnly},
		Variable{Name: "RCCLX_TESTS_LIBNVRTC", Engines: gpuOnly},
		Variable{Name: "RCCLX_TESTS_GPU_RUNTIME", Engines: []string{EngineGPU, EngineVendor}, Check: oneOf("cuda", "hip")},
		Variable{Name: "RCCLX_TESTS_LIBAMDHIP64", Engines: []string{EngineGPU, EngineVendor}},
		Variable{Name: "RCCLX_TESTS_LIBHIPRTC", Engines: gpuOnly},
		Variable{Name: "RCCLX_TESTS_KERNEL_CACHE", Engines: gpuOnly},
	)
	// nccl-tests' and rccl-tests' variables the harness reads itself (harness/plan/env.go, harness/report/netcounter.go,
	// harness/bench/kerneltiming.go).
	for _, name := range []string{"NCCL_TESTS_SPLIT", "NCCL_TESTS_SPLIT_MASK", "NCCL_TESTS_DEVICE",
		"RCCL_TESTS_NET_COUNTER_ENABLE", "RCCL_TESTS_NET_COUNTER_NIC_PREFIX", "RCCL_TESTS_NIC_COUNTER_LIST",
		"RCCL_TESTS_KERNEL_TIMING", "RCCL_TESTS_ROCTX"} {
		vs = append(vs, Variable{Name: name})
	}
	return append(vs, gpuTuningVariables()...)
}

// meaning is a Meaning that parses a value with parse and reads an empty one as def, the reader's default.
func meaning[T comparable](parse func(string) (T, error), def T) func(string) any {
	return func(s string) any {
		if s == "" {
			return def
		}
		return parsed(parse, s)
	}
}

// switchMeaning is a per-collective switch's Meaning: unset, it follows its master switch, which no value
// spells.
func switchMeaning(s string) any {
	if s == "" {
		return nil
	}
	return parsed(strconv.ParseBool, s)
}

// parsed is what s means to parse; a value parse refuses (Check refuses it too) means only itself.
func parsed[T comparable](parse func(string) (T, error), s string) any {
	if v, err := parse(s); err == nil {
		return v
	}
	return s
}

func word(s string) (string, error) { return s, nil }

// checkOf is a Check from a reader that refuses what it cannot read.
func checkOf[T any](read func(string) (T, error)) func(string) error {
	return func(s string) error {
		_, err := read(s)
		return err
	}
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
	if v.Check != nil && value != "" { // every reader takes an empty value as unset
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
