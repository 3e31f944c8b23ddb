package bench

import (
	"strings"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
)

// envNotes are the header's lines about the variables of plan/env.go: a split that changes nothing,
// NCCL_TESTS_DEVICE on the host engine, rccl-tests' kernel-timing mode, and its NIC counters outside its dialect
// (report/netcounter.go reads them in it).
func (s *Session) envNotes() {
	getenv := s.Getenv
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
	if len(counters) > 0 && !s.o.RCCLDialect {
		s.note("%s ignored: rccl-tests' NIC counters are read in its dialect only (--dialect rccl-tests)", strings.Join(counters, " "))
	}
}
