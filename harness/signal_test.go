package harness

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/harness/exit"
)

// TestSignalStuckRunEndsOnFirstSIGTERM: a run stuck in a collective without -T ends within 2 s of the first
// SIGTERM, with the trailer, partial JSON marked incomplete, and exit 143 as a shell expects.
func TestSignalStuckRunEndsOnFirstSIGTERM(t *testing.T) {
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGTERM, 143}, {syscall.SIGINT, 130}} {
		file := filepath.Join(t.TempDir(), "r.json")
		p := startChild(t, "all_reduce", []string{"RCCLX_TESTS_SKIP_RANK=1"}, "--engine", "host", "-g", "2",
			"-b", "8", "-e", "8", "-J", file)
		code, took := p.signalOnceStarted(t, "1", 100*time.Millisecond, c.sig, 10*time.Second)
		if code != c.code || took > 2*time.Second || !strings.Contains(p.stdout.String(), "# Collective test concluded") {
			t.Errorf("%v: exit %d %v after the signal\nstdout:\n%s\nstderr:\n%s", c.sig, code, took, p.stdout.String(),
				p.stderr.String())
		}
		if rec := loadRecord(t, file); !rec.Incomplete {
			t.Errorf("%v: JSON not marked incomplete", c.sig)
		}
	}
}

// TestSignalStopsBetweenIterations: SIGINT during a long measurement on the host engine (many large
// iterations) stops it after the iteration in progress, not after the whole half. The half would take an hour
// and the child's grace period is 10 minutes, so only a stop between iterations ends the run in time, however
// slow or loaded the machine.
func TestSignalStopsBetweenIterations(t *testing.T) {
	file := filepath.Join(t.TempDir(), "r.json")
	p := startChild(t, "all_reduce", []string{childGraceEnv + "=10m"}, "--engine", "host", "-g", "2", "-b", "64M",
		"-e", "64M", "-n", "1000000", "-w", "1", "-c", "0", "-J", file)
	code, took := p.signalOnceStarted(t, "1", 500*time.Millisecond, os.Interrupt, 60*time.Second) // into the timed iterations
	if code != exit.Interrupted || !strings.Contains(p.stdout.String(), "# Collective test concluded") {
		t.Errorf("exit %d %v after SIGINT\nstdout:\n%s\nstderr:\n%s", code, took, p.stdout.String(), p.stderr.String())
	}
	t.Logf("stopped %v after SIGINT", took)
	if rec := loadRecord(t, file); !rec.Incomplete {
		t.Errorf("JSON not marked incomplete")
	}
}
