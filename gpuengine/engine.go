// Package gpuengine is the "gpu" engine: RCCLX's algorithms (ring, direct alltoall, DDA flat and tree, FP8 low
// precision) as this suite's own CUDA kernels (package kernels), compiled at first use with NVRTC and driven
// from Go through package gpurt. Each rank has one peer-visible buffer, allocated once per communicator: control
// words (barrier mailboxes, ring flags, counters that persist across calls), the ring FIFOs, and two data
// halves for DDA, LP and direct alltoall. Peers reach it through peer access (one process) or CUDA IPC
// handles exchanged through the World (several processes). The bits each algorithm produces are those of
// package hostengine for the same algorithm (see each kernel file's reduction order).
package gpuengine

import (
	"errors"
	"fmt"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

// Name is the engine's --engine name.
const Name = "gpu"

// version is the engine's version in the report header ("rcclx-gpu=1").
const version = 1

type engine struct{}

// New returns the GPU engine.
func New() collectives.Engine { return engine{} }

func (engine) Name() string { return Name }

// Available reports whether a GPU is seen (CUDA or HIP) and the runtime's compiler (NVRTC or hiprtc), which
// compiles the kernels, loads.
func (engine) Available() error {
	if g := gpurt.FindGPUs(); g.Count == 0 {
		return fmt.Errorf("gpu: no GPU (%s)", g.Tried)
	}
	return gpurt.LoadCompiler()
}

// runtimeError marks a CUDA failure (exit code 2), naming the rank and device; timeouts and unsupported
// requests pass through.
func runtimeError(r *rank, err error) error {
	if err == nil {
		return nil
	}
	var te *collectives.TimeoutError
	var re *collectives.RuntimeError
	if errors.Is(err, collectives.ErrUnsupported) || errors.As(err, &te) || errors.As(err, &re) {
		return err
	}
	if r != nil {
		err = fmt.Errorf("gpu: rank %d on device %d: %w", r.global, r.dev, err)
	}
	return &collectives.RuntimeError{Err: err}
}
