package world

import (
	"encoding/json"
	"errors"
	"github.com/rcclx-tests/rcclx-tests/collectives"
	"strings"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
)

// others is a World of which this process is rank 0: AllGather returns this process's data followed by the
// others' canned answers, and keeps what it was sent.
type others struct {
	answers [][]byte
	sent    []byte
}

func (w *others) Rank() int      { return 0 }
func (w *others) Size() int      { return 1 + len(w.answers) }
func (w *others) Barrier() error { return nil }
func (w *others) AllGather(data []byte) ([][]byte, error) {
	w.sent = data
	return append([][]byte{data}, w.answers...), nil
}

func jsonOf(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMinAndSeed(t *testing.T) {
	w := &others{answers: [][]byte{jsonOf(t, int64(7)), jsonOf(t, int64(900))}}
	if got, err := Min(w, 40); err != nil || got != 7 {
		t.Errorf("Min = %d, %v; want 7", got, err)
	}
	w.answers = [][]byte{jsonOf(t, uint64(5))}
	if got, err := Seed(w, 99); err != nil || got != 99 {
		t.Errorf("Seed on rank 0 = %d, %v; want its own 99", got, err)
	}
}

func TestExchangeNamesTheProcess(t *testing.T) {
	w := &others{answers: [][]byte{jsonOf(t, int64(1)), []byte("{not json")}}
	_, err := collectives.Exchange(w, "free memory", int64(3))
	if err == nil || !strings.Contains(err.Error(), "gathering free memory from process 2") {
		t.Errorf("err %v, want one naming free memory and process 2", err)
	}
}

func TestAgreeArgs(t *testing.T) {
	local := plan.Args{Binary: "all_reduce_perf", Flags: [][2]string{{"-b/--minbytes", "8"}},
		Free: []string{"-J", "--csv"}}
	other := local
	other.Flags = [][2]string{{"-b/--minbytes", "16"}}
	w := &others{answers: [][]byte{jsonOf(t, local), jsonOf(t, other)}}
	err := AgreeArgs(w, local)
	var ue *exit.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), `process 2 runs -b/--minbytes "16", process 0 "8"`) ||
		!strings.Contains(err.Error(), "-J and --csv may differ") {
		t.Errorf("err %v, want a usage error naming process 2's -b and the flags that may differ", err)
	}
	if strings.Contains(string(w.sent), "--csv") {
		t.Errorf("sent %s: the per-process flags are not the others' business", w.sent)
	}
	w.answers = [][]byte{jsonOf(t, local)}
	if err := AgreeArgs(w, local); err != nil {
		t.Errorf("same arguments: %v", err)
	}
}
