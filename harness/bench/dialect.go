package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/harness/report"
)

// platformDialect is the dialect of the user's tool for an open engine: rccl-tests' on the HIP runtime or over
// an RCCL library (its file name says so), nccl-tests' otherwise.
func platformDialect(eng collectives.Engine, comm collectives.Comm) string {
	for _, v := range []any{eng, comm} {
		if rn, ok := v.(collectives.RuntimeNamer); ok && rn.Runtime() == collectives.RuntimeHIP {
			return plan.DialectRCCL
		}
	}
	if lp, ok := comm.(collectives.LibraryPather); ok &&
		strings.Contains(strings.ToLower(filepath.Base(lp.LibraryPath())), "rccl") {
		return plan.DialectRCCL
	}
	return plan.DialectNCCL
}

// setDialect fixes the session's dialect once its engine is open.
func (s *Session) setDialect() {
	d := s.o.ChosenDialect
	if d == "" {
		d = platformDialect(s.eng, s.comm)
	}
	s.o.RCCLDialect = d == plan.DialectRCCL
	// rccl-tests asks RCCL for the algorithm, protocol and channels (-A) of these collectives only; the
	// others print N/A.
	s.o.RCCLAlgo = map[string]bool{"all_reduce": true, "all_gather": true, "broadcast": true, "reduce": true,
		"reduce_scatter": true, "alltoall": true}[s.Coll.Base().Name]
}

// RCCLBiasMessage is rccl-tests' line (stderr) when the library has no ncclAllReduceWithBias; it then exits
// with its collective-library error code.
const RCCLBiasMessage = "[ERROR] This version of RCCL doesn't support ncclAllReduceWithBias"

// SaidError is an error whose line is already printed: failAt prints nothing more and exits with code.
type SaidError struct {
	msg  string
	code int
}

func (e *SaidError) Error() string { return e.msg }
func (e *SaidError) ExitCode() int { return e.code }

// libraryBanner is what RCCL prints under NCCL_DEBUG=VERSION when a communicator is created, and what rccl-tests'
// test runner reads (its version, hostname and "Librccl path"): in the rccl-tests dialect, where this suite's
// own engine runs the collectives instead of a library, its lines name the engine and this binary, so that the
// runner records the code that ran. A loaded library prints its own banner.
func (s *Session) libraryBanner() []string {
	if !s.o.RCCLDialect || !strings.EqualFold(strings.TrimSpace(s.Getenv("NCCL_DEBUG")), "VERSION") {
		return nil
	}
	if _, ok := s.comm.(collectives.LibraryPather); ok {
		return nil
	}
	host, _ := os.Hostname()
	self, err := os.Executable()
	if err != nil {
		self = "Unknown" // RCCL's word when it cannot find its file
	}
	line := func(k, v string) string { return fmt.Sprintf("%-12s : %s", k, v) }
	return []string{line("RCCL version", "rcclx-tests-"+report.Version+":"+s.comm.Library()), line("Hostname", host),
		line("Librccl path", self)}
}
