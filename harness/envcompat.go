package harness

import (
	"fmt"
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
	envSplitMask = "NCCL_TESTS_SPLIT_MASK" // a hex mask ANDed with the process rank; read before envSplit
	envSplit     = "NCCL_TESTS_SPLIT"      // AND n, OR n, MOD n or DIV n (also & | % /) applied to the process rank
	envDevice    = "NCCL_TESTS_DEVICE"     // the device of the first local rank, the others following it
)

// netCounterVars are rccl-tests' NIC counter variables (its collector reads these three): counters of the
// RDMA NICs read before and after the run.
var netCounterVars = []string{"RCCL_TESTS_NET_COUNTER_ENABLE", "RCCL_TESTS_NET_COUNTER_NIC_PREFIX",
	"RCCL_TESTS_NIC_COUNTER_LIST"}

// envKernelTiming is rccl-tests' kernel-timing mode: it writes the dispatch records RCCL itself keeps
// (RCCL_KERNEL_TIMING=1) to PREFIX_pidPID.csv. No engine here keeps them: a "#" line says so.
const envKernelTiming = "RCCL_TESTS_KERNEL_TIMING"

// unsupportedVars are all of the above: an --ab arm cannot vary them (the run would be the same, refused, or on
// other devices).
var unsupportedVars = append([]string{envSplitMask, envSplit, envDevice, envKernelTiming}, netCounterVars...)

// split is a parsed NCCL_TESTS_SPLIT_MASK or NCCL_TESTS_SPLIT.
type split struct {
	name, value string
	op          string // "and", "or", "mod", "div"
	n           int64
}

// splitOps are NCCL_TESTS_SPLIT's operations by their prefixes, as nccl-tests matches them (any case).
var splitOps = []struct{ prefix, op string }{
	{"AND", "and"}, {"&", "and"}, {"OR", "or"}, {"|", "or"}, {"MOD", "mod"}, {"%", "mod"}, {"DIV", "div"}, {"/", "div"},
}

// parseSplit reads the split variables as nccl-tests does (NCCL_TESTS_SPLIT_MASK first); nil when neither is
// set. A value nccl-tests would not understand, or a division by zero, is an error.
func parseSplit(getenv func(string) string) (*split, error) {
	if v := getenv(envSplitMask); v != "" {
		t := strings.TrimSpace(v)
		t = strings.TrimPrefix(strings.TrimPrefix(t, "0x"), "0X")
		n, err := strconv.ParseUint(t, 16, 63)
		if err != nil {
			return nil, fmt.Errorf("invalid %s=%q: want a hex mask", envSplitMask, v)
		}
		return &split{name: envSplitMask, value: v, op: "and", n: int64(n)}, nil
	}
	v := getenv(envSplit)
	if v == "" {
		return nil, nil
	}
	bad := fmt.Errorf("invalid %s=%q: want AND, OR, MOD or DIV (or & | %% /) and a number", envSplit, v)
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
			return nil, fmt.Errorf("invalid %s=%q: divides by zero", envSplit, v)
		}
		return &split{name: envSplit, value: v, op: o.op, n: n}, nil
	}
	return nil, bad
}

// color is the communicator color of process proc.
func (s *split) color(proc int) int64 {
	p := int64(proc)
	switch s.op {
	case "and":
		return p & s.n
	case "or":
		return p | s.n
	case "mod":
		return p % s.n
	}
	return p / s.n
}

// communicators counts the communicators the split makes of nprocs processes.
func (s *split) communicators(nprocs int) int {
	colors := map[int64]bool{}
	for p := range max(nprocs, 1) {
		colors[s.color(p)] = true
	}
	return len(colors)
}

// checkSplit refuses a split into several communicators: this suite runs one communicator of every process,
// which would measure something else. A split that leaves every process in one communicator changes nothing
// (splitNote says so).
func checkSplit(getenv func(string) string, nprocs int) error {
	s, err := parseSplit(getenv)
	if err != nil || s == nil {
		return err
	}
	if n := s.communicators(nprocs); n > 1 {
		return fmt.Errorf("%s=%q splits the %d processes into %d communicators: not supported here (one "+
			"communicator spans every process; run each group as a run of its own)", s.name, s.value, nprocs, n)
	}
	return nil
}

// envNotes are the header's lines about these variables: a split that changes nothing, NCCL_TESTS_DEVICE on
// the host engine, rccl-tests' kernel-timing mode, and its NIC counters outside its dialect (netcounter.go reads
// them in it).
func (s *session) envNotes() {
	getenv := s.a.parseEnv()
	if sp, err := parseSplit(getenv); err == nil && sp != nil {
		why := "one process makes one communicator"
		if n := s.world.Size(); n > 1 {
			why = fmt.Sprintf("it leaves all %d processes in one communicator", n)
		}
		s.note("%s=%s ignored: %s", sp.name, sp.value, why)
	}
	if v := getenv(envDevice); v != "" && s.eng.Name() == collectives.EngineHost {
		s.note("%s=%s ignored: engine host has no devices", envDevice, v)
	}
	var counters []string
	for _, name := range netCounterVars {
		if v := getenv(name); v != "" {
			counters = append(counters, name+"="+v)
		}
	}
	if v := getenv(envKernelTiming); v != "" {
		s.note("%s=%s ignored: no engine here keeps RCCL's dispatch records (RCCL_KERNEL_TIMING)", envKernelTiming, v)
	}
	if len(counters) > 0 && !s.o.rccl {
		s.note("%s ignored: rccl-tests' NIC counters are read in its dialect only (--dialect rccl-tests)", strings.Join(counters, " "))
	}
}

// firstDevice reads NCCL_TESTS_DEVICE: the device of this process's first rank (ok false when unset).
func firstDevice(getenv func(string) string) (dev int, ok bool, err error) {
	v := strings.TrimSpace(getenv(envDevice))
	if v == "" {
		return 0, false, nil
	}
	if dev, err = strconv.Atoi(v); err != nil || dev < 0 {
		return 0, false, fmt.Errorf("invalid %s=%q: want a device index, at least 0", envDevice, getenv(envDevice))
	}
	return dev, true, nil
}
