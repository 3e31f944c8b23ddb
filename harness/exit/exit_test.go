package exit

import (
	"errors"
	"fmt"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/bootstrap"
	"github.com/rcclx-tests/rcclx-tests/collectives"
)

type coded struct{ code int }

func (c coded) Error() string { return "coded" }
func (c coded) ExitCode() int { return c.code }

func TestCode(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, OK},
		{errors.New("device lost"), Runtime},
		{fmt.Errorf("rank 1: %w", &collectives.TimeoutError{}), Timeout},
		{fmt.Errorf("stop: %w", bootstrap.ErrInterrupted), Interrupted},
		{fmt.Errorf("load: %w", &collectives.LibraryError{}), Library},
		{fmt.Errorf("arm: %w", coded{TestFailed}), TestFailed},
		{&UsageError{Msg: "bad -b"}, Runtime}, // the command line reports usage errors itself, before a run
	} {
		if got := Code(c.err); got != c.want {
			t.Errorf("Code(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

func TestWorse(t *testing.T) {
	order := []int{OK, TestFailed, Interrupted, Runtime}
	for i, a := range order {
		for j, b := range order {
			want := order[max(i, j)]
			if got := Worse(a, b); got != want {
				t.Errorf("Worse(%d, %d) = %d, want %d", a, b, got, want)
			}
		}
	}
	if got := Worse(Timeout, Library); got != Timeout {
		t.Errorf("Worse of two errors = %d, want the first, %d", got, Timeout)
	}
}
