package bench

import (
	"fmt"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
)

// localWorld is a process of a World with a local rank.
type localWorld struct {
	collectives.World
	local int
}

func (w localWorld) LocalRank() int { return w.local }

// TestSplitDevices: in a split run each process's ranks take the devices of its local rank among every process
// of its host, as nccl-tests places them; within its communicator alone, two communicators would share devices.
func TestSplitDevices(t *testing.T) {
	sp := &plan.Split{Name: plan.EnvSplit, Value: "MOD 2", Op: "mod", N: 2}
	for _, c := range []struct {
		sp    *plan.Split
		pin   bool
		first int
		want  string
	}{{sp, false, 0, "true 6"}, {sp, true, 1, "true 1"}, {nil, false, 0, "false 0"}} {
		s := &Session{world: localWorld{local: 3}, split: c.sp}
		cfg := collectives.Config{NThreads: 1, NGpus: 2, PinDevices: c.pin, FirstDevice: c.first}
		s.splitDevices(&cfg)
		if got := fmt.Sprint(cfg.PinDevices, cfg.FirstDevice); got != c.want {
			t.Errorf("split %v, NCCL_TESTS_DEVICE %v %d: %s, want %s", c.sp != nil, c.pin, c.first, got, c.want)
		}
	}
}
