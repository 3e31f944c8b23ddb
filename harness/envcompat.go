package harness

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rcclx-tests/rcclx-tests/bootstrap"
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

// groups is the processes of each communicator the split makes of nprocs processes, in the order of their
// colours' first processes.
func (s *split) groups(nprocs int) [][]int {
	var colors []int64
	var out [][]int
	for p := range max(nprocs, 1) {
		c := s.color(p)
		i := slices.Index(colors, c)
		if i < 0 {
			colors, out, i = append(colors, c), append(out, nil), len(colors)
		}
		out[i] = append(out[i], p)
	}
	return out
}

// communicators counts the communicators the split makes of nprocs processes.
func (s *split) communicators(nprocs int) int { return len(s.groups(nprocs)) }

// checkSplit refuses a split this suite cannot run: communicators of unequal sizes (one table's bus bandwidth,
// and every size's calls, assume one communicator size), or a split in an A/B comparison.
func checkSplit(getenv func(string) string, nprocs int, ab bool) error {
	s, err := parseSplit(getenv)
	if err != nil || s == nil {
		return err
	}
	groups := s.groups(nprocs)
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
			"here (one table's bus bandwidth assumes one communicator size)", s.name, s.value, nprocs,
			strings.Join(sizes, ", "))
	case ab:
		return fmt.Errorf("%s=%q splits the processes into %d communicators: not supported with --ab", s.name,
			s.value, len(groups))
	}
	return nil
}

// splitWorld is the World of this process's communicator when the split variables divide the processes: a
// World of its colour's processes (nil when there is no split). Every process calls it.
func (a *app) splitWorld(world collectives.World) (*split, collectives.World, error) {
	s, err := parseSplit(a.parseEnv())
	if err != nil || s == nil || s.communicators(world.Size()) < 2 {
		return nil, nil, err
	}
	w, ok := world.(interface {
		Split(color int64) (*bootstrap.World, error)
	})
	if !ok {
		return nil, nil, fmt.Errorf("%s=%q: this run's processes cannot be split", s.name, s.value)
	}
	sub, err := w.Split(s.color(world.Rank()))
	if err != nil {
		return nil, nil, err
	}
	return s, sub, nil
}

// envNotes are the header's lines about these variables: a split that changes nothing, NCCL_TESTS_DEVICE on
// the host engine, rccl-tests' kernel-timing mode, and its NIC counters outside its dialect (netcounter.go reads
// them in it).
func (s *session) envNotes() {
	getenv := s.a.parseEnv()
	if sp, err := parseSplit(getenv); err == nil && sp != nil {
		n := s.world.Size()
		switch groups := sp.groups(n); {
		case len(groups) > 1:
			s.note("%s=%s: %d communicators of %d processes; the table is all of them", sp.name, sp.value,
				len(groups), len(groups[0]))
		case n > 1:
			s.note("%s=%s ignored: it leaves all %d processes in one communicator", sp.name, sp.value, n)
		default:
			s.note("%s=%s ignored: one process makes one communicator", sp.name, sp.value)
		}
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
	if len(counters) > 0 && !s.o.RCCLDialect {
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
