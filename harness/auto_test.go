package harness

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/report"
)

// withChoice is fakeSource whose --engine auto answers as engines.Choose would: eng and note, or err.
func withChoice(eng collectives.Engine, note string, err error) engineSource {
	src := fakeSource(newFake(1))
	src.choose = func(string) (collectives.Engine, string, error) { return eng, note, err }
	return src
}

// onCUDA is a fake engine that says it runs on CUDA.
type onCUDA struct{ *fakeEngine }

func (onCUDA) Runtime() string { return collectives.RuntimeCUDA }

// What auto picked other than the library is one stderr line; the header names the engine and its runtime.
func TestAutoNote(t *testing.T) {
	seed := rand.Uint64()
	f := onCUDA{newFake(seed)}
	r := runWith(t, collectives.AllReduce, seedArgs(seed, append(small, "-g", "2")...), withChoice(f, "no GPU found (tried x): measuring the CPU", nil), nil)
	if r.code != exit.OK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if want := "all_reduce_perf: --engine auto: no GPU found (tried x): measuring the CPU\n"; r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
	for _, want := range []string{"# rcclx-tests version " + report.Version + " fake-library=1 engine=fake runtime=cuda\n",
		"# Engine: fake (auto) on CUDA: 2 x Fake Device\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
}

// A GPU that no engine can use ends the run with the library's exit code and nothing measured.
func TestAutoRefusal(t *testing.T) {
	refusal := &collectives.LibraryError{Err: errors.New("8 cuda GPU(s) seen, but no engine can use them")}
	r := runWith(t, collectives.AllReduce, small, withChoice(nil, "", refusal), nil)
	if r.code != exit.Library || r.stdout != "" || !strings.Contains(r.stderr, "no engine can use them") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, the reason, no output", r.code, r.stdout, r.stderr, exit.Library)
	}
}
