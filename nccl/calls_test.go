package nccl

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ebitengine/purego"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

// fakeLibrary stands libc's labs in for the group calls and ncclAllReduce: each returns the absolute value
// of its first argument as its status, so a test chooses which call fails and how.
func fakeLibrary(t *testing.T) *Library {
	h, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW)
	if err != nil {
		t.Skip("no libc to stand in for a library:", err)
	}
	sym := func(name string) uintptr {
		a, err := purego.Dlsym(h, name)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	l := &Library{Path: "libfake.so"}
	for f, name := range map[*cfunc]string{&l.groupStart: "ncclGroupStart", &l.groupEnd: "ncclGroupEnd",
		&l.allReduce: "ncclAllReduce"} {
		f.names, f.addr = []string{name}, sym("labs")
	}
	l.getErrorString.names, l.getErrorString.addr = []string{"ncclGetErrorString"}, sym("strerror")
	l.send.names = []string{"ncclSend"}
	l.gather.names, l.scatter.names = []string{"ncclGather"}, []string{"ncclScatter"}
	l.allReduceWithBias.names = []string{"ncclAllReduceWithBias"}
	return l
}

func TestCallsRun(t *testing.T) {
	l := fakeLibrary(t)
	q := l.NewCalls()
	ar := func(status gpurt.DevicePtr) {
		q.AllReduce(0, 0, 1, Float32, OpSum, 0, 0)
		q.AllReduce(status, 0, 1, Float32, OpSum, 0, 0)
	}
	n := 1 + rand.IntN(20)
	q.GroupStart()
	for range n {
		ar(0)
	}
	if err := q.GroupEnd().Run(); err != nil {
		t.Fatalf("every call succeeds: %v", err)
	}

	// ncclInProgress from one call does not stop the others, and is what Run reports.
	q.Reset()
	q.GroupStart()
	ar(gpurt.DevicePtr(InProgress))
	ar(0)
	if err := q.GroupEnd().Run(); !IsInProgress(err) {
		t.Fatalf("a call in progress: Run = %v", err)
	}

	// A failure stops the calls and names the one that failed.
	q.Reset()
	q.GroupStart()
	ar(0)
	ar(gpurt.DevicePtr(InvalidUsage))
	var e *Error
	if err := q.GroupEnd().Run(); !errors.As(err, &e) || e.Call != "ncclAllReduce" || e.Code != InvalidUsage {
		t.Fatalf("a failing call: Run = %v", err)
	}

	// A function the library lacks: no call at all.
	for name, add := range map[string]func(){
		"ncclSend":              func() { q.Send(0, 1, Float32, 1, 0, 0) },
		"ncclGather":            func() { q.Gather(0, 0, 1, Float32, 0, 0, 0) },
		"ncclScatter":           func() { q.Scatter(0, 0, 1, Float32, 0, 0, 0) },
		"ncclAllReduceWithBias": func() { q.AllReduceWithBias(0, 0, 1, Float32, OpSum, 0, 0, 0) },
	} {
		q.Reset()
		q.GroupStart()
		add()
		if err := q.GroupEnd().Run(); !errors.Is(err, collectives.ErrUnsupported) || !strings.Contains(err.Error(), name) {
			t.Fatalf("a missing %s: Run = %v", name, err)
		}
	}
}

// A Foreign call (a kernel launch between the library's) is made in order; its failure, whatever the status
// (ncclInProgress's number too), stops the calls, ends the open group, and is reported by its own error.
func TestCallsForeign(t *testing.T) {
	l := fakeLibrary(t)
	launch := NewForeign("hipModuleLaunchKernel", l.allReduce.addr, func(status int) error {
		return fmt.Errorf("launch failed: %d", status)
	})
	q := l.NewCalls()
	q.GroupStart().Call(launch, 0).AllReduce(0, 0, 1, Float32, OpSum, 0, 0).GroupEnd()
	if err := q.Run(); err != nil {
		t.Fatalf("every call succeeds: %v", err)
	}
	q.Reset()
	q.GroupStart().Call(launch, uintptr(InProgress)).AllReduce(0, 0, 1, Float32, OpSum, 0, 0).GroupEnd()
	if err := q.Run(); err == nil || err.Error() != fmt.Sprintf("launch failed: %d", InProgress) {
		t.Fatalf("a failing launch: Run = %v", err)
	}
	if got := q.openGroups(1); got != 1 {
		t.Errorf("a failing launch leaves %d groups open, want 1", got)
	}
}

func TestOpenGroupsAfterFailure(t *testing.T) {
	l := fakeLibrary(t)
	q := l.NewCalls()
	q.GroupStart().GroupStart().AllReduce(0, 0, 1, Float32, OpSum, 0, 0).GroupEnd().AllReduce(5, 0, 1, Float32, OpSum, 0, 0)
	for at, want := range []int{0, 1, 2, 1, 1} {
		if got := q.openGroups(at); got != want {
			t.Errorf("call %d failing leaves %d groups open, want %d", at, got, want)
		}
	}
}
