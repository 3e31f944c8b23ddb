package gpurt

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"
)

const testKernels = `
struct Pair { unsigned long long a; float b; int c; };

extern "C" __global__ void probe(unsigned long long* out, int i32, unsigned u32, long long i64,
                                 unsigned long long u64, float f32, double f64, Pair p) {
  out[0] = (unsigned long long)(long long)i32;
  out[1] = u32;
  out[2] = (unsigned long long)i64;
  out[3] = u64;
  out[4] = __float_as_uint(f32);
  out[5] = __double_as_longlong(f64);
  out[6] = p.a;
  out[7] = __float_as_uint(p.b);
  out[8] = (unsigned long long)(long long)p.c;
}

extern "C" __global__ void scale_add(float* y, const float* x, float a, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}
`

type pair struct {
	A uint64
	B float32
	C int32
}

func loadTestKernels(t *testing.T) *Module {
	t.Helper()
	if err := LoadCompiler(); err != nil {
		t.Skip("no kernel compiler: " + err.Error())
	}
	arch, err := Device(0).Arch()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("RCCLX_TESTS_KERNEL_CACHE", t.TempDir())
	cubin, err := CompileCached(testKernels, "test_kernels.cu", arch)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ModuleLoadData(cubin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Unload() })
	return m
}

func TestGPULaunchPassesEveryArgumentType(t *testing.T) {
	onGPU(t)
	f, err := loadTestKernels(t).Function("probe")
	if err != nil {
		t.Fatal(err)
	}
	out := devAlloc(t, 9*8)
	if err := MemsetD8(out, 0xEE, 9*8); err != nil {
		t.Fatal(err)
	}
	i32, u32 := -int32(rand.Uint32()>>1), rand.Uint32()
	i64, u64 := -int64(rand.Uint64()>>1), rand.Uint64()
	f32, f64 := rand.Float32()-0.5, rand.NormFloat64()
	p := &pair{A: rand.Uint64(), B: rand.Float32(), C: -int32(rand.Uint32() >> 1)}
	one := [3]uint32{1, 1, 1}
	if err := Launch(f, one, one, 0, 0, out, i32, u32, i64, u64, f32, f64, p); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 9*8)
	if err := MemcpyDtoH(got, out); err != nil {
		t.Fatal(err)
	}
	want := []uint64{uint64(int64(i32)), uint64(u32), uint64(i64), u64, uint64(math.Float32bits(f32)),
		math.Float64bits(f64), p.A, uint64(math.Float32bits(p.B)), uint64(int64(p.C))}
	for i, w := range want {
		if g := binary.LittleEndian.Uint64(got[8*i:]); g != w {
			t.Errorf("kernel saw argument %d as %#x, want %#x", i, g, w)
		}
	}
	if err := Launch(f, one, [3]uint32{4096, 1, 1}, 0, 0, out); err == nil {
		t.Error("a 4096-thread block launched")
	} else if e, ok := err.(*Error); !ok || e.Call != "cuLaunchKernel" {
		t.Errorf("bad launch error = %v", err)
	}
}

func TestGPUCompileErrorHasLog(t *testing.T) {
	onGPU(t)
	if err := LoadCompiler(); err != nil {
		t.Skip("no kernel compiler: " + err.Error())
	}
	_, log, err := Compile(`extern "C" __global__ void k() { undeclared_thing(); }`, "bad.cu", "sm_90")
	if err == nil || !strings.Contains(log, "undeclared_thing") || !strings.Contains(err.Error(), "undeclared_thing") {
		t.Fatalf("compile error = %v, log = %q", err, log)
	}
}

// floats uploads v to a new device buffer.
func floats(t *testing.T, v []float32) DevicePtr {
	t.Helper()
	p := devAlloc(t, int64(4*len(v)))
	if err := MemcpyHtoD(p, unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))); err != nil {
		t.Fatal(err)
	}
	return p
}

func download(t *testing.T, p DevicePtr, n int) []float32 {
	t.Helper()
	v := make([]float32, n)
	if err := MemcpyDtoH(unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*n), p); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestGPUGraphReplay(t *testing.T) {
	onGPU(t)
	f, err := loadTestKernels(t).Function("scale_add")
	if err != nil {
		t.Fatal(err)
	}
	const n, launches, replays = 100_003, 3, 5
	x, y := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = float32(rand.IntN(64)), float32(rand.IntN(64))
	}
	dx, dy := floats(t, x), floats(t, y)
	s, err := StreamCreate(true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	if err := s.BeginCapture(); err != nil {
		t.Fatal(err)
	}
	grid, block := [3]uint32{(n + 255) / 256, 1, 1}, [3]uint32{256, 1, 1}
	for range launches {
		if err := Launch(f, grid, block, 0, s, dy, dx, float32(2), uint32(n)); err != nil {
			t.Fatal(err)
		}
	}
	g, err := s.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Destroy()
	x2 := download(t, dy, n)
	for i := range x2 {
		if x2[i] != y[i] {
			t.Fatal("captured launches ran during capture")
		}
	}
	exec, err := g.Instantiate()
	if err != nil {
		t.Fatal(err)
	}
	defer exec.Destroy()
	for range replays {
		if err := exec.Launch(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	got := download(t, dy, n)
	for i := range got {
		if want := y[i] + launches*replays*2*x[i]; got[i] != want {
			t.Fatalf("y[%d] = %v after replays, want %v", i, got[i], want)
		}
	}
}

func TestGPUPeerCopyAndIPCHandle(t *testing.T) {
	ctx0 := onGPU(t)
	if n, _ := DeviceCount(); n < 2 {
		t.Skip("needs 2 GPUs for a peer copy")
	}
	ctx1, err := Device(1).RetainPrimaryContext()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ctx1.Release() })
	if ok, err := Device(0).CanAccessPeer(1); err != nil || !ok {
		t.Skipf("device 0 cannot access device 1: %v", err)
	}
	if err := EnablePeerAccess(ctx1); err != nil {
		t.Fatal(err)
	}
	if err := EnablePeerAccess(ctx1); err != nil {
		t.Fatalf("enabling peer access twice: %v", err)
	}
	x := make([]float32, 1<<16)
	for i := range x {
		x[i] = rand.Float32()
	}
	src := floats(t, x)
	if h, err := IpcGetMemHandle(src); err != nil || h == (IpcMemHandle{}) {
		t.Fatalf("IpcGetMemHandle = %x, %v", h[:8], err)
	}
	if err := ctx1.SetCurrent(); err != nil {
		t.Fatal(err)
	}
	dst, err := MemAlloc(int64(4 * len(x)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ctx1.SetCurrent(); _ = MemFree(dst); _ = ctx0.SetCurrent() }()
	if err := MemsetD8(dst, 0xFF, int64(4*len(x))); err != nil {
		t.Fatal(err)
	}
	if err := ctx0.SetCurrent(); err != nil {
		t.Fatal(err)
	}
	if err := MemcpyPeerAsync(dst, ctx1, src, ctx0, int64(4*len(x)), 0); err != nil {
		t.Fatal(err)
	}
	if err := Stream(0).Synchronize(); err != nil {
		t.Fatal(err)
	}
	if err := ctx1.SetCurrent(); err != nil {
		t.Fatal(err)
	}
	got := download(t, dst, len(x))
	if err := ctx0.SetCurrent(); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != x[i] {
			t.Fatalf("peer copy element %d = %v, want %v", i, got[i], x[i])
		}
	}
}
