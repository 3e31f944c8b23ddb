package harness

import (
	"encoding/json"
	"fmt"
	"time"

	"rcclx-tests/collectives"
)

// openWorld returns the processes of this run. It is the one place that knows how processes find each other:
// swap it for the bootstrap package's launcher detection when multi-process runs land.
var openWorld = func(timeout time.Duration) (collectives.World, error) { return singleProcess{}, nil }

// singleProcess is the world of a run in one process.
type singleProcess struct{}

func (singleProcess) Rank() int                               { return 0 }
func (singleProcess) Size() int                               { return 1 }
func (singleProcess) AllGather(data []byte) ([][]byte, error) { return [][]byte{data}, nil }
func (singleProcess) Barrier() error                          { return nil }

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
