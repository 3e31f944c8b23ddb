package harness

import (
	"regexp"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/hostengine"
)

// TestFP8FlavourFromComm: the harness generates and checks FP8 data in the flavour of the communicator it
// opened: the host engine told fnuz validates FNUZ products (which an OCP reading of the same codes gets
// wrong), and a bad flavour is refused in one line.
func TestFP8FlavourFromComm(t *testing.T) {
	t.Cleanup(func() { collectives.UseFP8Flavour(collectives.FP8OCP) })
	args := []string{"--engine", "host", "-g", "3", "-b", "96", "-e", "96", "-n", "1", "-w", "0", "-d", "f8e4m3", "-o", "prod"}
	r := testRun(t, collectives.AllReduce, append(args, "-E", collectives.EnvFP8+"=fnuz"), hostengine.New())
	rows := regexp.MustCompile(`(?m)^ +96 +96 +f8e4m3 +prod +-1 +\S+ +\S+ +\S+ +0 +\S+ +\S+ +\S+ +0$`)
	if r.code != exit.OK || !rows.MatchString(r.stdout) || collectives.RunFP8Flavour() != collectives.FP8FNUZ {
		t.Errorf("fnuz: exit %d, flavour %s\n%s%s", r.code, collectives.RunFP8Flavour(), r.stdout, r.stderr)
	}
	r = testRun(t, collectives.AllReduce, append(args, "-E", collectives.EnvFP8+"=e4m3"), hostengine.New())
	if r.code == exit.OK || !regexp.MustCompile(`RCCLX_TESTS_FP8="e4m3": want ocp or fnuz`).MatchString(r.stderr) {
		t.Errorf("e4m3: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
