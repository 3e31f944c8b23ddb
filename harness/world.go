package harness

import (
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
