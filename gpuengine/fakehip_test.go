package gpuengine

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
	"github.com/rcclx-tests/rcclx-tests/internal/fakehip"
)

// cudaOnlyKernels are the kernels that only CUDA builds define (kernels/util.cu's hardware conversion checks,
// lowprec.cu's bulk-copy alltoall).
var cudaOnlyKernels = []string{"rx_e4m3_check", "rx_bf16_check", "lp_alltoall_bulk"}

// startFakeHIP binds a fake HIP of devs for the test (skipping where a real runtime is bound already) and keeps
// compiled kernels in a fresh cache.
func startFakeHIP(t *testing.T, h *fakehip.HIP) *fakehip.HIP {
	t.Helper()
	if rt := gpurt.Loaded(); rt != gpurt.None {
		t.Skipf("%s is bound in this process; the fake HIP needs it unbound", rt.Title())
	}
	t.Setenv("RCCLX_TESTS_KERNEL_CACHE", t.TempDir())
	t.Setenv(gpurt.RuntimeVariable, "")
	cubins.Clear() // compiled modules are per runtime
	t.Cleanup(cubins.Clear)
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	return fakehip.Start(t, h)
}

// On HIP the engine drives each GPU from a thread whose current device is that GPU (hipSetDevice, no contexts),
// switches off what only NVIDIA has been checked to do (early launch, bulk copies, LL128, copy engines) although
// gfx942 reports compute capability 9.4, and compiles for the full gcnArchName with FNUZ FP8 and wave64 crews.
func TestFakeHIPGPUEngineOnMI300X(t *testing.T) {
	h := startFakeHIP(t, &fakehip.HIP{Devices: []fakehip.Device{fakehip.MI300X, fakehip.MI300X}})
	c := open(t, New(), 2, nil, 0).(*comm)
	if rt := New().(collectives.RuntimeNamer).Runtime(); rt != collectives.RuntimeHIP {
		t.Errorf("the engine says it runs on %s", rt)
	}
	for _, r := range c.ranks {
		want := gpurt.Caps{Runtime: gpurt.HIP, Arch: fakehip.MI300X.Arch, WarpSize: 64, FP8: gpurt.FP8FNUZ, ICacheFlush: true}
		if r.caps != want {
			t.Errorf("rank %d: caps %+v, want %+v", r.global, r.caps, want)
		}
	}
	if want := (gates{Early: true, Bulk: true, LL128: true, CopyEngine: true}); c.gatedOff != want || c.earlyCap != 0 || c.tuning.CEBytes != -1 {
		t.Errorf("gated off %+v, early cap %d, copy-engine bytes %d; want %+v, 0, -1", c.gatedOff, c.earlyCap, c.tuning.CEBytes, want)
	}
	perDev := map[int]int{}
	for _, a := range h.Allocs {
		if a.Func == "hipMalloc" {
			perDev[a.Device]++
		}
		if a.Func == "hipHostMalloc" && a.Flags != 3 {
			t.Errorf("hipHostMalloc flags %#x, want portable|mapped", a.Flags)
		}
	}
	if perDev[0] == 0 || perDev[0] != perDev[1] || len(perDev) != 2 {
		t.Errorf("device allocations per current device %v: each rank's must be made on its own device", perDev)
	}
	if !slices.Contains(h.Peers, [2]int{0, 1}) || !slices.Contains(h.Peers, [2]int{1, 0}) {
		t.Errorf("peer access enabled %v, want both ways", h.Peers)
	}

	must(t, c.Prepare(collectives.AllReduce, []collectives.DType{collectives.Float}, []collectives.Op{collectives.Sum}, nil))
	if len(h.Compiles) != 1 {
		t.Fatalf("%d compiles, want 1 (both ranks' devices are one target)", len(h.Compiles))
	}
	opts := h.Compiles[0].Opts
	for _, want := range []string{"--offload-arch=" + fakehip.MI300X.Arch, "-std=c++17", "-ffp-contract=off", "-DRX_FP8_FNUZ=1", "-DRX_WARP_SHIFT=6"} {
		if !slices.Contains(opts, want) {
			t.Errorf("hiprtc options %q lack %s", opts, want)
		}
	}
	for _, o := range opts {
		if strings.HasPrefix(o, "--gpu-architecture") || strings.HasPrefix(o, "--fmad") || o == "-default-device" {
			t.Errorf("hiprtc given NVRTC's option %s", o)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(os.Getenv("RCCLX_TESTS_KERNEL_CACHE"), "*.hsaco")); len(m) != 1 {
		t.Errorf("cache holds %v; want one .hsaco", m)
	}

	// A DDA all_reduce of 8 bytes and one of 256 KiB (LL128's size on NVIDIA): each launch from the thread whose
	// current device is the rank's, on a stream and module of that device; no CUDA-only kernel looked up.
	for _, bytes := range []int64{8, 256 << 10} {
		h.Launches = nil
		in := make([][]byte, 2)
		for i := range in {
			in[i] = make([]byte, bytes)
		}
		run(t, c, callSpec{coll: collectives.AllReduce, dt: collectives.Float, op: collectives.Sum, bytes: bytes}, in)
		if len(h.Launches) != 2 {
			t.Fatalf("%d B: %d launches, want one per rank: %+v", bytes, len(h.Launches), h.Launches)
		}
		for _, l := range h.Launches {
			if l.Device < 0 || l.Device != l.StreamDevice || l.Device != l.ModuleDevice || !l.ParamsNonZero {
				t.Errorf("%d B: launch %+v: not on the launching thread's device", bytes, l)
			}
			if l.Kernel == ll128Kernel {
				t.Errorf("%d B: LL128 launched on HIP without %s=1", bytes, LL128Variable)
			}
		}
		if h.Launches[0].Device == h.Launches[1].Device {
			t.Errorf("%d B: both ranks launched on device %d", bytes, h.Launches[0].Device)
		}
	}
	for _, k := range cudaOnlyKernels {
		if slices.Contains(h.Lookups, k) {
			t.Errorf("the engine looked up the CUDA-only kernel %s on HIP", k)
		}
	}
}

// RCCLX_TESTS_GPU_LL128=1 lets LL128 run on HIP, RCCLX_TESTS_GPU_CE_BYTES the copy engines; a gfx90a's FP8 is OCP and its modules get no FNUZ define; a
// device that reports compute capability 9.0 on HIP still gets no early launch.
func TestFakeHIPGatesByRuntimeNotArchNumber(t *testing.T) {
	mi250 := fakehip.MI250X
	h := startFakeHIP(t, &fakehip.HIP{Devices: []fakehip.Device{mi250, mi250}, R0600: true})
	c := open(t, New(), 2, map[string]string{LL128Variable: "1", "RCCLX_TESTS_GPU_CE_BYTES": "8M"}, 0).(*comm)
	if c.tuning.CEBytes != 8<<20 {
		t.Errorf("copy-engine bytes %d with RCCLX_TESTS_GPU_CE_BYTES=8M: the variable turns them on on HIP", c.tuning.CEBytes)
	}
	if r := c.ranks[0]; r.caps.FP8 != gpurt.FP8OCP || r.caps.Arch != mi250.Arch || r.caps.EarlyLaunch || r.caps.BulkCopy {
		t.Errorf("gfx90a caps %+v", r.caps)
	}
	if c.gatedOff.LL128 || !c.gatedOff.Early {
		t.Errorf("gated off %+v; want LL128 on (the variable), early launch off", c.gatedOff)
	}
	k := collectives.AllReduce.Counts(256<<10, 2, 0, collectives.Float)
	if p, err := c.makePlan(collectives.AllReduce, collectives.DDAFlat, k, 4); err != nil || p.kernel != ll128Kernel || p.early {
		t.Errorf("256 KiB with LL128 on: %+v, %v", p, err)
	}
	must(t, c.Prepare(collectives.AllReduce, []collectives.DType{collectives.F8E4M3}, []collectives.Op{collectives.Sum}, nil))
	if opts := h.Compiles[0].Opts; slices.Contains(opts, "-DRX_FP8_FNUZ=1") || !slices.Contains(opts, "--offload-arch="+mi250.Arch) {
		t.Errorf("gfx90a options %q", opts)
	}
}

// pairWorld is one of two processes of a run, played by goroutines of the test process.
type pairWorld struct {
	rank    int
	out, in chan []byte
}

func (w pairWorld) Rank() int      { return w.rank }
func (w pairWorld) Size() int      { return 2 }
func (w pairWorld) Barrier() error { _, err := w.AllGather(nil); return err }
func (w pairWorld) AllGather(data []byte) ([][]byte, error) {
	w.out <- append([]byte(nil), data...)
	other := <-w.in
	if w.rank == 0 {
		return [][]byte{data, other}, nil
	}
	return [][]byte{other, data}, nil
}

// Two processes (goroutines with Worlds of their own) exchange their buffers' 64-byte IPC handles through HIP:
// each maps the other's buffer, which then holds what the other wrote.
func TestFakeHIPIPCBetweenProcesses(t *testing.T) {
	h := startFakeHIP(t, &fakehip.HIP{Devices: []fakehip.Device{fakehip.MI300X, fakehip.MI300X}})
	a, b := make(chan []byte, 1), make(chan []byte, 1)
	worlds := []pairWorld{{0, a, b}, {1, b, a}}
	comms := make([]*comm, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for p := range worlds {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			c, err := New().Open(collectives.Config{NThreads: 1, NGpus: 1, World: worlds[p]})
			if err == nil {
				comms[p] = c.(*comm)
			}
			errs[p] = err
		})
	}
	wg.Wait()
	for p, err := range errs {
		if err != nil {
			t.Fatalf("process %d: %v", p, err)
		}
		t.Cleanup(func() { comms[p].Close() })
	}
	if h.IpcOpened != 2 {
		t.Fatalf("%d IPC handles opened, want each process's of the other", h.IpcOpened)
	}
	r0, r1 := comms[0].ranks[0], comms[1].ranks[0]
	if r0.dev == r1.dev || len(r1.mapped) != 1 {
		t.Fatalf("devices %d and %d, process 1 mapped %d buffers", r0.dev, r1.dev, len(r1.mapped))
	}
	want := []byte("written by process 0")
	must(t, r0.ctx.SetCurrent())
	must(t, gpurt.MemcpyHtoD(r0.buf+dataOffset, want))
	must(t, r1.ctx.SetCurrent())
	got := make([]byte, len(want))
	must(t, gpurt.MemcpyDtoH(got, r1.mapped[0]+dataOffset))
	if string(got) != string(want) {
		t.Errorf("process 1 reads %q through its mapping, want %q", got, want)
	}
}
