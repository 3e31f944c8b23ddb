// Package vendorengine is the "vendor" engine: the collectives run by an NCCL-ABI library (NCCL, RCCL,
// RCCLX) through the nccl binding, one communicator per local rank, so that the suite can show the library's
// figures next to its own engines'.
//
// (The directory is not called vendor/: the go command reserves a module's top-level vendor directory for
// vendored dependencies, and its presence breaks every build of the module.)
package vendorengine

import (
	"errors"
	"fmt"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
	"github.com/rcclx-tests/rcclx-tests/nccl"
)

// Name is the engine's --engine name.
const Name = "vendor"

type engine struct{}

// New returns the vendor engine.
func New() collectives.Engine { return engine{} }

func (engine) Name() string { return Name }

// Available reports whether the default library loads (else a *LibraryError) and a GPU exists (else a
// *RuntimeError).
func (engine) Available() error {
	if _, err := nccl.Open(""); err != nil {
		return &collectives.LibraryError{Err: err}
	}
	if g := gpurt.FindGPUs(); g.Count == 0 {
		return runtimeError(fmt.Errorf("vendor: no GPU (%s)", g.Tried))
	}
	return nil
}

// libraryError marks a library failure (exit code 3); unsupported requests stay as they are.
func libraryError(err error) error {
	if err == nil || errors.Is(err, collectives.ErrUnsupported) {
		return err
	}
	var le *collectives.LibraryError
	var te *collectives.TimeoutError
	if errors.As(err, &le) || errors.As(err, &te) {
		return err
	}
	return &collectives.LibraryError{Err: err}
}

// Runtime names the GPU runtime the library runs on, once Open has bound it (collectives.RuntimeNamer).
func (engine) Runtime() string {
	if gpurt.Loaded() == gpurt.HIP {
		return collectives.RuntimeHIP
	}
	return collectives.RuntimeCUDA
}

// runtimeError marks a GPU runtime failure (exit code 2).
func runtimeError(err error) error {
	if err == nil {
		return nil
	}
	return &collectives.RuntimeError{Err: err}
}
