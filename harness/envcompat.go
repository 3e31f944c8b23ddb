package harness

import (
	"fmt"

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
