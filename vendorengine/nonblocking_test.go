package vendorengine

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
	"github.com/rcclx-tests/rcclx-tests/nccl"
)

// fakeNCCL is an NCCL written in Go and bound through purego callbacks, with the rule of non-blocking
// communicators that NCCL 2.28 enforces: a group's end answers ncclInProgress and leaves each communicator it
// used busy for a few polls of ncclCommGetAsyncError, and a call on a busy communicator fails with
// ncclInvalidArgument. Made blocking, every group ends at once. It records the calls it took.
type fakeNCCL struct {
	mu          sync.Mutex
	nonBlocking bool
	depth       int
	used        []nccl.Comm       // the open group's communicators
	busy        map[nccl.Comm]int // polls each communicator stays in progress
	steps       [][]fakeCall      // the calls of each group ended
	open        []fakeCall        // the calls of the open group
	refused     []string
}

type fakeCall struct {
	name string
	comm nccl.Comm
	peer int
}

// fakeBusyPolls is how many polls of ncclCommGetAsyncError a communicator stays in progress after a group.
const fakeBusyPolls = 3

var (
	fake     = &fakeNCCL{busy: map[nccl.Comm]int{}}
	fakeLib  *nccl.Library
	fakeErr  error
	fakeOnce sync.Once
	fakeText = []byte("fake NCCL error\x00")
)

// fakeLibrary binds fake's functions once per process (purego's callbacks are never freed) and resets its state.
func fakeLibrary(t *testing.T, nonBlocking bool) *nccl.Library {
	t.Helper()
	fakeOnce.Do(func() {
		stub := purego.NewCallback(func() uintptr { return uintptr(nccl.InternalError) })
		fns := map[string]uintptr{
			"ncclGetVersion":        purego.NewCallback(func(v *int32) uintptr { *v = 22803; return 0 }),
			"ncclGetErrorString":    purego.NewCallback(func(uintptr) uintptr { return uintptr(unsafe.Pointer(&fakeText[0])) }),
			"ncclGroupStart":        purego.NewCallback(fake.groupStart),
			"ncclGroupEnd":          purego.NewCallback(fake.groupEnd),
			"ncclCommGetAsyncError": purego.NewCallback(fake.asyncError),
			"ncclSend":              purego.NewCallback(fake.p2p("ncclSend")),
			"ncclRecv":              purego.NewCallback(fake.p2p("ncclRecv")),
			"ncclAllReduce":         purego.NewCallback(fake.allReduce),
		}
		fakeLib, fakeErr = nccl.Bind("libfake-nccl.so", func(name string) uintptr {
			if a, ok := fns[name]; ok {
				return a
			}
			switch name {
			case "ncclGetUniqueId", "ncclCommInitAll", "ncclCommDestroy", "ncclCommAbort", "ncclAllGather",
				"ncclReduceScatter", "ncclBroadcast", "ncclReduce", "ncclCommInitRank":
				return stub
			}
			return 0
		})
	})
	if fakeErr != nil {
		t.Fatal(fakeErr)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	fake.nonBlocking, fake.depth, fake.busy = nonBlocking, 0, map[nccl.Comm]int{}
	fake.used, fake.steps, fake.open, fake.refused = nil, nil, nil, nil
	return fakeLib
}

func (f *fakeNCCL) groupStart() uintptr {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.depth++
	return 0
}

func (f *fakeNCCL) groupEnd() uintptr {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.depth--; f.depth > 0 {
		return 0
	}
	f.steps = append(f.steps, f.open)
	f.open = nil
	used := f.used
	f.used = nil
	if !f.nonBlocking {
		return 0
	}
	for _, c := range used {
		f.busy[c] = fakeBusyPolls
	}
	return uintptr(nccl.InProgress)
}

// enter takes a call on comm, or refuses it while comm is busy.
func (f *fakeNCCL) enter(name string, comm nccl.Comm, peer int) uintptr {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.busy[comm] > 0 {
		f.refused = append(f.refused, fmt.Sprintf("%s on communicator %d while its last group is in progress", name, comm))
		return uintptr(nccl.InvalidArgument)
	}
	f.open = append(f.open, fakeCall{name, comm, peer})
	if !slices.Contains(f.used, comm) {
		f.used = append(f.used, comm)
	}
	if f.depth == 0 && f.nonBlocking { // a call outside a group is a group of its own
		f.steps, f.open, f.used = append(f.steps, f.open), nil, nil
		f.busy[comm] = fakeBusyPolls
		return uintptr(nccl.InProgress)
	}
	return 0
}

func (f *fakeNCCL) p2p(name string) func(buf, count, dtype, peer, comm, stream uintptr) uintptr {
	return func(_, _, _, peer, comm, _ uintptr) uintptr { return f.enter(name, nccl.Comm(comm), int(int32(peer))) }
}

func (f *fakeNCCL) allReduce(_, _, _, _, _, comm, _ uintptr) uintptr {
	return f.enter("ncclAllReduce", nccl.Comm(comm), -1)
}

func (f *fakeNCCL) asyncError(comm uintptr, state *int32) uintptr {
	f.mu.Lock()
	defer f.mu.Unlock()
	*state = int32(nccl.Success)
	if f.busy[nccl.Comm(comm)] > 0 {
		f.busy[nccl.Comm(comm)]--
		*state = int32(nccl.InProgress)
	}
	return 0
}

// fakeGroup is a group of n local ranks on the fake library, communicator i+1 for rank i, and a call of coll
// over fake device buffers.
func fakeGroup(t *testing.T, n int, nonBlocking bool, skip int, coll *collectives.Collective) (*group, *collectives.Call) {
	lib := fakeLibrary(t, nonBlocking)
	c := &comm{lib: lib, nranks: n, timeout: time.Minute, nonBlocking: nonBlocking,
		hooks: collectives.Hooks{SkipRank: skip, CorruptRank: -1}, arrivals: collectives.NewArrivals(0, n)}
	g := &group{c: c, calls: lib.NewCalls(), ops: make([]nccl.RedOp, n)}
	call := &collectives.Call{Coll: coll, DType: collectives.Float, Op: collectives.Sum}
	for r := range n {
		g.ranks = append(g.ranks, &rank{global: r, comm: nccl.Comm(r + 1)})
		g.global = append(g.global, r)
		k := coll.Counts(1<<20, n, r, collectives.Float)
		call.Counts = append(call.Counts, k)
		send := &buffer{ptr: gpurt.DevicePtr(2*r+1) << 32, n: 4 * k.Send}
		recv := &buffer{ptr: gpurt.DevicePtr(2*r+2) << 32, n: 4 * k.Recv}
		call.Send = append(call.Send, collectives.View{Buf: send})
		call.Recv = append(call.Recv, collectives.View{Buf: recv})
	}
	return g, call
}

// On non-blocking communicators no call reaches a communicator whose last group is still in progress: each
// Launch, and each of hypercube's steps (a group of its own), is awaited before the next call.
func TestNonBlockingCallsAwaitTheLastGroup(t *testing.T) {
	for _, coll := range []*collectives.Collective{collectives.AllReduce, collectives.AllToAll, collectives.SendRecv,
		collectives.HyperCube} {
		for _, n := range []int{2, 4, 8} {
			t.Run(fmt.Sprintf("%s/%d", coll.Name, n), func(t *testing.T) {
				g, call := fakeGroup(t, n, true, -1, coll)
				for i := range 3 {
					if err := g.Launch(call); err != nil {
						t.Fatalf("launch %d: %v; the library refused %q", i, err, fake.refused)
					}
				}
				steps := 1
				if coll == collectives.HyperCube {
					steps = len(hyperCubeMasks(n))
				}
				if len(fake.steps) != 3*steps {
					t.Errorf("%d groups ended, want %d", len(fake.steps), 3*steps)
				}
				for c, left := range fake.busy {
					if left > 0 {
						t.Errorf("communicator %d still in progress after Launch returned", c)
					}
				}
				if coll == collectives.HyperCube {
					for s, step := range fake.steps {
						mask := hyperCubeMasks(n)[s%steps]
						for _, fc := range step {
							if me := int(fc.comm - 1); fc.peer != me^mask && !(mask == 1 && fc.peer == me) {
								t.Errorf("group %d: %s of rank %d with %d, want its partner %d", s, fc.name, me, fc.peer, me^mask)
							}
						}
					}
				}
			})
		}
	}
}

// Blocking communicators take hypercube's steps in one crossing; every rank but the skip hook's counts as
// arrived, so that a timeout names the rank that never came.
func TestHyperCubeBlockingAndArrivals(t *testing.T) {
	g, call := fakeGroup(t, 4, false, 2, collectives.HyperCube)
	if err := g.Launch(call); err != nil {
		t.Fatal(err)
	}
	if len(fake.steps) != 2 {
		t.Errorf("%d groups, want hypercube's 2 steps at 4 ranks", len(fake.steps))
	}
	for _, step := range fake.steps {
		for _, fc := range step {
			if fc.comm == 3 {
				t.Errorf("the skipped rank 2 made %s", fc.name)
			}
		}
	}
	if got := g.c.arrivals.Missing(); !slices.Equal(got, []int{2}) {
		t.Errorf("ranks missing after a hypercube call with rank 2 skipped: %v, want [2]", got)
	}
}
