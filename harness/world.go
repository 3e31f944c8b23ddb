package harness

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/rcclx-tests/rcclx-tests/bootstrap"
	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// openWorld returns the processes of this run: one, or those an mpirun, srun or torchrun launch started
// (the bootstrap package detects the launcher and meets the others at a rendezvous).
var openWorld = func(timeout time.Duration) (collectives.World, error) { return bootstrap.FromEnv(timeout) }

// gatherJSON gives every process the values of all processes, in rank order; what names them in errors.
func gatherJSON[T any](w collectives.World, what string, local T) ([]T, error) {
	if w.Size() == 1 {
		return []T{local}, nil
	}
	data, err := json.Marshal(local)
	if err != nil {
		return nil, fmt.Errorf("gathering %s: %w", what, err)
	}
	all, err := w.AllGather(data)
	if err != nil {
		return nil, fmt.Errorf("gathering %s: %w", what, err)
	}
	out := make([]T, len(all))
	for i, d := range all {
		if err := json.Unmarshal(d, &out[i]); err != nil {
			return nil, fmt.Errorf("gathering %s from process %d: %w", what, i, err)
		}
	}
	return out, nil
}
