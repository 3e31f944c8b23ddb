// Package exit holds the perf binaries' exit codes and the one place that maps an error to its code. Its input is
// an error from any layer; its output is the process's exit status. It imports no other package of the harness.
package exit

import (
	"errors"

	"github.com/rcclx-tests/rcclx-tests/bootstrap"
	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// Exit codes, as nccl-tests and this suite's SPEC define them.
const (
	OK          = 0
	Usage       = 1
	Runtime     = 2
	Library     = 3
	Timeout     = 4
	TestFailed  = 7
	Interrupted = 130
	// RCCLRefused is rccl-tests' status for the command lines its main refuses with return -1 (UsageError.RCCL).
	RCCLRefused = 255
)

// ErrInterrupted ends a run stopped by a signal: a sweep between two iterations, or by abandoning threads stuck
// in the engine, or a wait on the other processes (bootstrap's, the same error). The session reports a
// stopped sweep as an interrupted run, with its trailer.
var ErrInterrupted = bootstrap.ErrInterrupted

// UsageError is bad command-line input: one line naming the flag and the value, exit code 1. RCCL is
// rccl-tests' own line where rccl-tests refuses the same input (exit RCCLRefused), "" where it does not.
type UsageError struct{ Msg, RCCL string }

func (e *UsageError) Error() string { return e.Msg }

// Coder is an error that carries its own exit code: a worker's error relayed by its launcher, or a line that is
// already printed.
type Coder interface {
	error
	ExitCode() int
}

// Code maps an error that ended a run to nccl-tests' exit codes.
func Code(err error) int {
	var te *collectives.TimeoutError
	var le *collectives.LibraryError
	var c Coder
	switch {
	case err == nil:
		return OK
	case errors.As(err, &c):
		return c.ExitCode()
	case errors.As(err, &te):
		return Timeout
	case errors.Is(err, ErrInterrupted):
		return Interrupted
	case errors.As(err, &le):
		return Library
	}
	return Runtime
}

// Worse keeps the exit code that matters most: errors over an interruption over test failures over success.
func Worse(a, b int) int {
	rank := func(c int) int {
		switch c {
		case OK:
			return 0
		case TestFailed:
			return 1
		case Interrupted:
			return 2
		}
		return 3
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}
