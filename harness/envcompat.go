package harness

import (
	"fmt"
	"strings"

	"github.com/rcclx-tests/rcclx-tests/bootstrap"
	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
)

// splitWorld is the World of this process's communicator when the split variables divide the processes: a
// World of its colour's processes (nil when there is no split). Every process calls it.
func (a *app) splitWorld(world collectives.World) (*plan.Split, collectives.World, error) {
	s, err := plan.ParseSplit(a.parseEnv())
	if err != nil || s == nil || s.Communicators(world.Size()) < 2 {
		return nil, nil, err
	}
	w, ok := world.(interface {
		Split(color int64) (*bootstrap.World, error)
	})
	if !ok {
		return nil, nil, fmt.Errorf("%s=%q: this run's processes cannot be split", s.Name, s.Value)
	}
	sub, err := w.Split(s.Color(world.Rank()))
	if err != nil {
		return nil, nil, err
	}
	return s, sub, nil
}

// envNotes are the header's lines about the variables of plan/env.go: a split that changes nothing,
// NCCL_TESTS_DEVICE on the host engine, rccl-tests' kernel-timing mode, and its NIC counters outside its dialect
// (report/netcounter.go reads them in it).
func (s *session) envNotes() {
	getenv := s.a.parseEnv()
	if sp, err := plan.ParseSplit(getenv); err == nil && sp != nil {
		n := s.world.Size()
		switch groups := sp.Groups(n); {
		case len(groups) > 1:
			s.note("%s=%s: %d communicators of %d processes; the table is all of them", sp.Name, sp.Value,
				len(groups), len(groups[0]))
		case n > 1:
			s.note("%s=%s ignored: it leaves all %d processes in one communicator", sp.Name, sp.Value, n)
		default:
			s.note("%s=%s ignored: one process makes one communicator", sp.Name, sp.Value)
		}
	}
	if v := getenv(plan.EnvDevice); v != "" && s.eng.Name() == collectives.EngineHost {
		s.note("%s=%s ignored: engine host has no devices", plan.EnvDevice, v)
	}
	var counters []string
	for _, name := range plan.NetCounterVars {
		if v := getenv(name); v != "" {
			counters = append(counters, name+"="+v)
		}
	}
	if v := getenv(plan.EnvKernelTiming); v != "" {
		s.note("%s=%s ignored: no engine here keeps RCCL's dispatch records (RCCL_KERNEL_TIMING)", plan.EnvKernelTiming, v)
	}
	if len(counters) > 0 && !s.o.RCCLDialect {
		s.note("%s ignored: rccl-tests' NIC counters are read in its dialect only (--dialect rccl-tests)", strings.Join(counters, " "))
	}
}
