package vendorengine

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
	"github.com/rcclx-tests/rcclx-tests/internal/fakehip"
	"github.com/rcclx-tests/rcclx-tests/nccl"
)

// The vendor engine's HIP control flow, on a HIP runtime written in Go (internal/fakehip) under an RCCL written
// in Go (hipNCCL): the device each communicator is made on, where -Y puts the rank buffers, the FP8 flavour
// of the devices, and the runtime the library decides.

// hipNCCL is an RCCL that records, for each communicator it makes, the device it was asked for
// (ncclCommInitAll) or the device current on the calling thread (ncclCommInitRank), as RCCL makes a
// communicator on the current device; and whether anyone called ncclMemAlloc.
type hipNCCL struct {
	mu       sync.Mutex
	hip      *fakehip.HIP
	initAll  []int32
	initRank map[int]int // rank -> current device
	memAlloc int
	// calls records each ncclGroupStart ("group{"), ncclGroupEnd ("}") and ncclAllReduce ("allreduce <comm>"),
	// with the number of kernels launched before it.
	calls []hipCall
}

type hipCall struct {
	name     string
	launched int
}

// record notes a call of the fake RCCL.
func (n *hipNCCL) record(name string) uintptr {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, hipCall{name, n.hip.LaunchCount()})
	return 0
}

var (
	rccl      = &hipNCCL{}
	rcclLib   *nccl.Library
	rcclErr   error
	rcclOnce  sync.Once
	rcclNames = []byte("fake RCCL error\x00")
)

// fakeRCCL binds hipNCCL once per process (purego never frees callbacks) and resets it for a test on h.
func fakeRCCL(t *testing.T, h *fakehip.HIP) *nccl.Library {
	t.Helper()
	rcclOnce.Do(func() {
		ok := purego.NewCallback(func() uintptr { return 0 })
		fns := map[string]uintptr{
			"ncclGetVersion":     purego.NewCallback(func(v *int32) uintptr { *v = 22803; return 0 }),
			"ncclGetErrorString": purego.NewCallback(func(uintptr) uintptr { return uintptr(unsafe.Pointer(&rcclNames[0])) }),
			"ncclGetUniqueId":    purego.NewCallback(func(uintptr) uintptr { return 0 }),
			"ncclCommInitAll": purego.NewCallback(func(comms *nccl.Comm, n int32, devs *int32) uintptr {
				rccl.mu.Lock()
				defer rccl.mu.Unlock()
				rccl.initAll = append(rccl.initAll, unsafe.Slice(devs, n)...)
				cs := unsafe.Slice(comms, n)
				for i := range cs {
					cs[i] = nccl.Comm(i + 1)
				}
				return 0
			}),
			// The 128-byte unique id goes on the stack: the registers hold the communicator, nranks and rank.
			"ncclCommInitRank": purego.NewCallback(func(comm *nccl.Comm, _, rank uintptr) uintptr {
				rccl.mu.Lock()
				defer rccl.mu.Unlock()
				rccl.initRank[int(int32(rank))] = rccl.hip.CurrentDevice()
				*comm = nccl.Comm(rank + 1)
				return 0
			}),
			"ncclCommGetAsyncError": purego.NewCallback(func(_ uintptr, state *int32) uintptr { *state = 0; return 0 }),
			"ncclAllReduce": purego.NewCallback(func(_, _, _, _, _ uintptr, comm nccl.Comm, _ uintptr) uintptr {
				return rccl.record(fmt.Sprintf("allreduce %d", comm))
			}),
			"ncclGroupStart": purego.NewCallback(func() uintptr { return rccl.record("group{") }),
			"ncclGroupEnd":   purego.NewCallback(func() uintptr { return rccl.record("}") }),
			"ncclMemAlloc": purego.NewCallback(func(uintptr, uintptr) uintptr {
				rccl.mu.Lock()
				defer rccl.mu.Unlock()
				rccl.memAlloc++
				return uintptr(nccl.InternalError)
			}),
		}
		rcclLib, rcclErr = nccl.Bind("libfake-rccl.so", func(name string) uintptr {
			if a, ok := fns[name]; ok {
				return a
			}
			switch name {
			case "ncclCommDestroy", "ncclCommAbort", "ncclAllGather",
				"ncclReduceScatter", "ncclBroadcast", "ncclReduce", "ncclMemFree":
				return ok
			}
			return 0
		})
	})
	if rcclErr != nil {
		t.Fatal(rcclErr)
	}
	rccl.mu.Lock()
	defer rccl.mu.Unlock()
	rccl.hip, rccl.initAll, rccl.initRank, rccl.memAlloc, rccl.calls = h, nil, map[int]int{}, 0, nil
	return rcclLib
}

// startHIP binds the fake HIP h for the test, which skips where a real runtime is bound already (a GPU test
// ran first).
func startHIP(t *testing.T, h *fakehip.HIP) *fakehip.HIP {
	t.Helper()
	if rt := gpurt.Loaded(); rt != gpurt.None {
		t.Skipf("%s is bound in this process; the fake HIP needs it unbound", rt.Title())
	}
	return fakehip.Start(t, h)
}

func openHIP(t *testing.T, h *fakehip.HIP, cfg collectives.Config) *comm {
	t.Helper()
	c, err := open(cfg, fakeRCCL(t, h))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*comm)
}

// Each communicator is made on its rank's device: listed to ncclCommInitAll, or current (hipSetDevice) on the
// thread that calls ncclCommInitRank; NCCL_TESTS_DEVICE's pinning moves them. The engine says it runs on HIP.
func TestHIPCommunicatorsOnTheirDevices(t *testing.T) {
	h := startHIP(t, &fakehip.HIP{Devices: []fakehip.Device{fakehip.MI300X, fakehip.MI300X, fakehip.MI300X}})
	c := openHIP(t, h, collectives.Config{NThreads: 1, NGpus: 2})
	if !slices.Equal(rccl.initAll, []int32{0, 1}) || len(rccl.initRank) != 0 {
		t.Errorf("ncclCommInitAll got devices %v (and %d ncclCommInitRank calls), want [0 1]", rccl.initAll, len(rccl.initRank))
	}
	if got := (engine{}).Runtime(); got != collectives.RuntimeHIP {
		t.Errorf("Runtime() = %q on HIP", got)
	}
	if d := c.Devices(); len(d) != 2 || d[1].Index != 1 || d[1].Name != fakehip.MI300X.Name {
		t.Errorf("devices %+v", d)
	}
	openHIP(t, h, collectives.Config{NThreads: 3, NGpus: 1, ParallelInit: true})
	if want := map[int]int{0: 0, 1: 1, 2: 2}; len(rccl.initRank) != 3 || rccl.initRank[1] != want[1] || rccl.initRank[2] != want[2] {
		t.Errorf("ncclCommInitRank: rank -> current device %v, want %v", rccl.initRank, want)
	}
	openHIP(t, h, collectives.Config{NThreads: 1, NGpus: 2, PinDevices: true, FirstDevice: 1})
	if !slices.Equal(rccl.initAll, []int32{1, 2}) {
		t.Errorf("pinned to device 1: ncclCommInitAll got devices %v, want [1 2]", rccl.initAll)
	}
}

// -Y places each rank's buffers on its device as rccl-tests does on HIP: coarse (and the default) with hipMalloc,
// not ncclMemAlloc, before HIP 7.12; fine uncached from HIP 5.7 on, fine-grained before; host pinned; managed
// attached globally. Data goes in and out through them.
func TestHIPMemoryKinds(t *testing.T) {
	for _, c := range []struct {
		kind    collectives.MemoryKind
		version int
		fn      string
		flags   uint32
	}{
		{collectives.MemoryDefault, 60200000, "hipMalloc", 0},
		{collectives.MemoryCoarse, 60200000, "hipMalloc", 0},
		{collectives.MemoryFine, 60200000, "hipExtMallocWithFlags", 3},
		{collectives.MemoryFine, 50200000, "hipExtMallocWithFlags", 1},
		{collectives.MemoryHost, 60200000, "hipHostMalloc", 3},
		{collectives.MemoryManaged, 60200000, "hipMallocManaged", 1},
	} {
		t.Run(c.fn, func(t *testing.T) {
			h := startHIP(t, &fakehip.HIP{Devices: []fakehip.Device{fakehip.MI300X, fakehip.MI300X}, Version: c.version})
			cm := openHIP(t, h, collectives.Config{NThreads: 1, NGpus: 2, Memory: c.kind})
			g := cm.Groups()[0]
			b, err := g.Alloc(1, 4096)
			if err != nil {
				t.Fatal(err)
			}
			a := h.Allocs[len(h.Allocs)-1]
			if a.Func != c.fn || a.Flags != c.flags || a.Device != 1 || a.Bytes != 4096 || rccl.memAlloc != 0 {
				t.Errorf("-Y %d on HIP %d: %+v (ncclMemAlloc called %d times); want %s flags %d on device 1", c.kind,
					c.version, a, rccl.memAlloc, c.fn, c.flags)
			}
			in := []byte("rank buffers hold data")
			out := make([]byte, len(in))
			if err := g.Write(collectives.View{Buf: b, Off: 8}, in); err != nil {
				t.Fatal(err)
			}
			if err := g.Read(out, collectives.View{Buf: b, Off: 8}); err != nil || string(out) != string(in) {
				t.Errorf("read back %q, %v", out, err)
			}
			if err := g.Free(b); err != nil {
				t.Error(err)
			}
			if note := cm.MemoryNote(); c.kind != collectives.MemoryDefault && (note == "" || strings.Contains(note, "means nothing")) {
				t.Errorf("-Y %d note on HIP: %q", c.kind, note)
			}
		})
	}
}

// The FP8 flavour follows the devices: FNUZ on gfx942, whose compute capability 9.4 no gate may take for a
// Hopper's, OCP on gfx950; devices of both in one process are refused.
func TestHIPFP8Flavour(t *testing.T) {
	mi355 := fakehip.MI355X
	for _, c := range []struct {
		devs []fakehip.Device
		want collectives.FP8Flavour
	}{
		{[]fakehip.Device{fakehip.MI300X, fakehip.MI300X}, collectives.FP8FNUZ},
		{[]fakehip.Device{mi355, mi355}, collectives.FP8OCP},
	} {
		t.Run(c.devs[0].Arch, func(t *testing.T) {
			h := startHIP(t, &fakehip.HIP{Devices: c.devs})
			cm := openHIP(t, h, collectives.Config{NThreads: 1, NGpus: 2})
			if got := collectives.FP8FlavourOf(cm); got != c.want {
				t.Errorf("FP8 flavour %s, want %s", got, c.want)
			}
			if _, err := cm.groups[0].dataType(collectives.F8E4M3); err != nil {
				t.Errorf("f8e4m3 refused on %s: %v", c.devs[0].Arch, err)
			}
		})
	}
	t.Run("mixed", func(t *testing.T) {
		h := startHIP(t, &fakehip.HIP{Devices: []fakehip.Device{fakehip.MI300X, mi355}})
		_, err := open(collectives.Config{NThreads: 1, NGpus: 2}, fakeRCCL(t, h))
		if err == nil || !strings.Contains(err.Error(), "computes FP8 in fnuz") {
			t.Errorf("gfx942 and gfx950 in one process: %v", err)
		}
	})
}

// The library decides the runtime: the libamdhip64 soname it links is the one bound (so a library linking
// another HIP than the process has is refused by that name), and a library linking none (NVIDIA's NCCL) is not
// run on HIP; neither message sends an AMD user to NVIDIA's driver.
func TestLibraryDecidesRuntime(t *testing.T) {
	if rt := gpurt.Loaded(); rt != gpurt.None {
		t.Skipf("%s is bound in this process", rt.Title())
	}
	err := loadRuntime("/opt/rcclx/librccl.so.1", "libamdhip64.so.99")
	if err == nil || !strings.Contains(err.Error(), "tried libamdhip64.so.99: ") {
		t.Errorf("a library linking libamdhip64.so.99: %v", err)
	}
	gpurt.Unload()
	startHIP(t, &fakehip.HIP{Devices: []fakehip.Device{fakehip.MI300X}})
	if err := loadRuntime("/opt/rcclx/librccl.so.1", "libamdhip64.so.6"); err != nil {
		t.Errorf("RCCL on the HIP already bound: %v", err)
	}
	err = loadRuntime("/usr/lib/libnccl.so.2", "")
	if err == nil || !strings.Contains(err.Error(), "links no libamdhip64") || !strings.Contains(err.Error(), "runs HIP") ||
		strings.Contains(err.Error(), "install") {
		t.Errorf("NVIDIA's NCCL on HIP: %v", err)
	}
}
