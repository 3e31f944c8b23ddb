package plan

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// nccl-tests' and rccl-tests' environment variables outside the engines: NCCL_TESTS_DEVICE, which pins the
// devices, and those this suite does not implement. None is ignored silently: one that changes what a run
// measures is refused before anything runs, the others get a "#" line.

// Split variables of nccl-tests' (and rccl-tests') MPI build: processes whose colors differ form separate
// communicators.
const (
	EnvSplitMask = "NCCL_TESTS_SPLIT_MASK" // a hex mask ANDed with the process rank; read before envSplit
	EnvSplit     = "NCCL_TESTS_SPLIT"      // AND n, OR n, MOD n or DIV n (also & | % /) applied to the process rank
	EnvDevice    = "NCCL_TESTS_DEVICE"     // the device of the first local rank, the others following it
)

// NetCounterVars are rccl-tests' NIC counter variables (its collector reads these three): counters of the
// RDMA NICs read before and after the run.
var NetCounterVars = []string{"RCCL_TESTS_NET_COUNTER_ENABLE", "RCCL_TESTS_NET_COUNTER_NIC_PREFIX",
	"RCCL_TESTS_NIC_COUNTER_LIST"}

// EnvKernelTiming is rccl-tests' kernel-timing mode: every kernel dispatch's device start and end, written to
// PREFIX_pidPID.csv when the run ends (harness/bench/kerneltiming.go).
const EnvKernelTiming = "RCCL_TESTS_KERNEL_TIMING"

// EnvROCTX is rccl-tests' rocTX mode: a range named as kernel timing's Config around each timed loop, for a
// profiler's marker trace. Any value but 0 turns it on.
const EnvROCTX = "RCCL_TESTS_ROCTX"

// UnsupportedVars are all of the above: an --ab arm cannot vary them (the run would be the same, refused, or on
// other devices).
var UnsupportedVars = append([]string{EnvSplitMask, EnvSplit, EnvDevice, EnvKernelTiming}, NetCounterVars...)

// Split is a parsed NCCL_TESTS_SPLIT_MASK or NCCL_TESTS_SPLIT.
type Split struct {
	Name, Value string
	Op          string // "and", "or", "mod", "div"
	N           int64
}

// splitOps are NCCL_TESTS_SPLIT's operations by their prefixes, as nccl-tests matches them (any case).
var splitOps = []struct{ prefix, op string }{
	{"AND", "and"}, {"&", "and"}, {"OR", "or"}, {"|", "or"}, {"MOD", "mod"}, {"%", "mod"}, {"DIV", "div"}, {"/", "div"},
}

// ParseSplit reads the split variables as nccl-tests does (NCCL_TESTS_SPLIT_MASK first); nil when neither is
// set. A value nccl-tests would not understand, or a division by zero, is an error.
func ParseSplit(getenv func(string) string) (*Split, error) {
	if v := getenv(EnvSplitMask); v != "" {
		t := strings.TrimSpace(v)
		t = strings.TrimPrefix(strings.TrimPrefix(t, "0x"), "0X")
		n, err := strconv.ParseUint(t, 16, 63)
		if err != nil {
			return nil, fmt.Errorf("invalid %s=%q: want a hex mask", EnvSplitMask, v)
		}
		return &Split{Name: EnvSplitMask, Value: v, Op: "and", N: int64(n)}, nil
	}
	v := getenv(EnvSplit)
	if v == "" {
		return nil, nil
	}
	bad := fmt.Errorf("invalid %s=%q: want AND, OR, MOD or DIV (or & | %% /) and a number", EnvSplit, v)
	for _, o := range splitOps {
		if len(v) < len(o.prefix) || !strings.EqualFold(v[:len(o.prefix)], o.prefix) {
			continue
		}
		rest := strings.TrimSpace(v[len(o.prefix):])
		base := 0
		if len(rest) > 2 && strings.EqualFold(rest[:2], "0b") {
			rest, base = rest[2:], 2
		}
		n, err := strconv.ParseInt(rest, base, 32)
		if err != nil || n < 0 {
			return nil, bad
		}
		if n == 0 && (o.op == "mod" || o.op == "div") {
			return nil, fmt.Errorf("invalid %s=%q: divides by zero", EnvSplit, v)
		}
		return &Split{Name: EnvSplit, Value: v, Op: o.op, N: n}, nil
	}
	return nil, bad
}

// Color is the communicator color of process proc.
func (s *Split) Color(proc int) int64 {
	p := int64(proc)
	switch s.Op {
	case "and":
		return p & s.N
	case "or":
		return p | s.N
	case "mod":
		return p % s.N
	}
	return p / s.N
}

// Groups is the processes of each communicator the split makes of nprocs processes, in the order of their
// colours' first processes.
func (s *Split) Groups(nprocs int) [][]int {
	var colors []int64
	var out [][]int
	for p := range max(nprocs, 1) {
		c := s.Color(p)
		i := slices.Index(colors, c)
		if i < 0 {
			colors, out, i = append(colors, c), append(out, nil), len(colors)
		}
		out[i] = append(out[i], p)
	}
	return out
}

// Communicators counts the communicators the split makes of nprocs processes.
func (s *Split) Communicators(nprocs int) int { return len(s.Groups(nprocs)) }

// CheckSplit refuses a split this suite cannot run: communicators of unequal sizes (one table's bus bandwidth,
// and every size's calls, assume one communicator size), or a split in an A/B comparison.
func CheckSplit(getenv func(string) string, nprocs int, ab bool) error {
	s, err := ParseSplit(getenv)
	if err != nil || s == nil {
		return err
	}
	groups := s.Groups(nprocs)
	if len(groups) < 2 {
		return nil
	}
	var sizes []string
	for _, g := range groups {
		sizes = append(sizes, strconv.Itoa(len(g)))
	}
	switch {
	case slices.ContainsFunc(groups, func(g []int) bool { return len(g) != len(groups[0]) }):
		return fmt.Errorf("%s=%q splits the %d processes into communicators of unequal sizes (%s): not supported "+
			"here (one table's bus bandwidth assumes one communicator size)", s.Name, s.Value, nprocs,
			strings.Join(sizes, ", "))
	case ab:
		return fmt.Errorf("%s=%q splits the processes into %d communicators: not supported with --ab", s.Name,
			s.Value, len(groups))
	}
	return nil
}

// FirstDevice reads NCCL_TESTS_DEVICE: the device of this process's first rank (ok false when unset).
func FirstDevice(getenv func(string) string) (dev int, ok bool, err error) {
	v := strings.TrimSpace(getenv(EnvDevice))
	if v == "" {
		return 0, false, nil
	}
	if dev, err = strconv.Atoi(v); err != nil || dev < 0 {
		return 0, false, fmt.Errorf("invalid %s=%q: want a device index, at least 0", EnvDevice, getenv(EnvDevice))
	}
	return dev, true, nil
}

// ArmEnvs lists the communicator overrides of every communicator the run opens: one, or the two A/B arms.
func ArmEnvs(o *Options) []map[string]string {
	if o.ABKey == "" {
		return []map[string]string{o.CommEnv}
	}
	var out []map[string]string
	for _, v := range o.ABValues {
		arm := map[string]string{o.ABKey: v}
		for k, x := range o.CommEnv {
			arm[k] = x
		}
		out = append(out, arm)
	}
	return out
}

// Overlay reads env first, then the process environment, as engines do (collectives.Config.Getenv).
func Overlay(env map[string]string, getenv func(string) string) func(string) string {
	return func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return getenv(k)
	}
}

// LowPrecisionOn reports whether any collective of the run would take the low-precision path.
func LowPrecisionOn(env map[string]string, getenv func(string) string) bool {
	p, err := collectives.PolicyFromEnv(Overlay(env, getenv))
	return err == nil && slices.Contains(slices.Collect(maps.Values(p.LP)), true)
}

// The output dialects: the text, exit codes and messages of nccl-tests or of rccl-tests. By default the platform
// decides: rccl-tests' where the HIP runtime or an RCCL library is in use, nccl-tests' elsewhere (CUDA, NCCL, the
// host engine); --dialect or RCCLX_TESTS_DIALECT (for test suites that cannot add flags) picks one. Every
// difference is listed in docs/DIALECTS.md and pinned by harness/dialect_test.go.
const (
	DialectNCCL = "nccl-tests"
	DialectRCCL = "rccl-tests"
	EnvDialect  = "RCCLX_TESTS_DIALECT"
)

// WantDialect reads --dialect, else RCCLX_TESTS_DIALECT: "" lets the platform decide.
func WantDialect(flag string, getenv func(string) string) (string, error) {
	name, v := "--dialect", flag
	if v == "" {
		name, v = EnvDialect, getenv(EnvDialect)
	}
	switch v {
	case "", DialectNCCL, DialectRCCL:
		return v, nil
	}
	if name == EnvDialect {
		return "", fmt.Errorf("invalid %s=%q: want %s or %s", EnvDialect, v, DialectNCCL, DialectRCCL)
	}
	return "", fmt.Errorf("invalid value %q for --dialect: want %s or %s", v, DialectNCCL, DialectRCCL)
}
