package hostengine

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

var errLost = errors.New("bootstrap: rank 1 died or left the run (pid 4711; its connection to rank 0 closed: EOF)")

// TestCancelStopsLongCall: Cancel (another process of the run was lost) ends a call that waits for a rank that
// never comes, with the cause and without -T; a reduction stops at its next 1 MiB piece and leaves the rest
// undone; buffer writes and reads fail from then on. Before the Cancel, the pieces give the whole reduction's
// bits.
func TestCancelStopsLongCall(t *testing.T) {
	c := openComm(t, 3, map[string]string{collectives.EnvSkipRank: "1"}, 0, 0)
	done := make(chan outcome, 1)
	go func() {
		done <- runCase(t, c, testCase{coll: collectives.AllReduce, dt: collectives.Float, op: collectives.Sum, bytes: 1 << 20}, 1)
	}()
	for start := time.Now(); !slices.Equal(c.arrivals.Missing(), []int{1}); time.Sleep(time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatal("the call did not start")
		}
	}
	time.Sleep(20 * time.Millisecond) // the ranks that came wait for rank 1
	cancelled := time.Now()
	c.Cancel(errLost)
	select {
	case out := <-done:
		if out.err != errLost {
			t.Errorf("the call returned %v, want the cause of the Cancel", out.err)
		}
		if took := time.Since(cancelled); took > 2*time.Second {
			t.Errorf("the call returned %v after the Cancel", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call still waits 10 s after the Cancel")
	}

	const n = 4 * cancelPiece
	a, b := bytes.Repeat([]byte{0, 0, 0x80, 0x3f}, n/4), bytes.Repeat([]byte{0, 0, 0, 0x40}, n/4) // 1.0, 2.0
	plain, pieces := make([]byte, n), make([]byte, n)
	live := openComm(t, 2, nil, 0, 0)
	newReducer(collectives.Float, collectives.Sum, collectives.FP8OCP).combine(plain, a, b, 1, 1)
	live.stoppable(newReducer(collectives.Float, collectives.Sum, collectives.FP8OCP)).combine(pieces, a, b, 1, 1)
	if !bytes.Equal(plain, pieces) {
		t.Error("the reduction in pieces differs from the whole one")
	}
	buf, err := live.Groups()[0].Alloc(0, n)
	if err != nil {
		t.Fatal(err)
	}
	if err := live.Groups()[0].Write(collectives.View{Buf: buf}, a); err != nil {
		t.Fatalf("write before the Cancel: %v", err)
	}
	live.Cancel(errLost)
	clear(pieces)
	live.stoppable(newReducer(collectives.Float, collectives.Sum, collectives.FP8OCP)).combine(pieces, a, b, 1, 1)
	if !bytes.Equal(pieces, make([]byte, n)) {
		t.Error("a reduction on a cancelled communicator went on")
	}
	if err := live.Groups()[0].Write(collectives.View{Buf: buf}, a); err != errLost {
		t.Errorf("write after the Cancel: %v, want the cause", err)
	}
	if err := live.Groups()[0].Read(pieces, collectives.View{Buf: buf}); err != errLost {
		t.Errorf("read after the Cancel: %v, want the cause", err)
	}
}
