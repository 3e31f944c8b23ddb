package numeric

// The hardware check: every float32 bit pattern goes through the GPU's own
// conversions (PTX cvt, JIT-compiled by the driver) and through this package,
// and the results must agree. It needs an NVIDIA GPU of compute capability
// 8.9 or newer (FP8 cvt); without one it skips.

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

// hwKernel is a PTX kernel: thread i converts the float32 with bits base+i
// (cvt leaves the result in %h1, or %r7 for wider ones) and stores it. It
// checks either encode (all float32 inputs) or decode (the 256 FP8 codes,
// through the fp16 the GPU decodes them to).
type hwKernel struct {
	name   string
	size   int    // bytes stored per thread
	cvt    string // PTX lines
	store  string // st.global.* of the result
	encode func(float32) uint32
	decode *FP8
}

var hwKernels = []hwKernel{
	{"e4m3", 1, "cvt.rn.satfinite.e4m3x2.f32 %h1, %f1, %f1;", "st.global.u8 [%rd3], %h1;",
		func(x float32) uint32 { return uint32(E4M3.Encode(x)) }, nil},
	{"e5m2", 1, "cvt.rn.satfinite.e5m2x2.f32 %h1, %f1, %f1;", "st.global.u8 [%rd3], %h1;",
		func(x float32) uint32 { return uint32(E5M2.Encode(x)) }, nil},
	{"f16", 2, "cvt.rn.f16.f32 %h1, %f1;", "st.global.b16 [%rd3], %h1;",
		func(x float32) uint32 { return uint32(F32ToF16(x)) }, nil},
	{"bf16", 2, "cvt.rn.bf16.f32 %h1, %f1;", "st.global.b16 [%rd3], %h1;",
		func(x float32) uint32 { return uint32(F32ToBF16(x)) }, nil},
	{"e4m3_to_f16x2", 4, "cvt.u16.u32 %h1, %r6; cvt.rn.f16x2.e4m3x2 %r7, %h1;", "st.global.b32 [%rd3], %r7;",
		nil, &E4M3},
	{"e5m2_to_f16x2", 4, "cvt.u16.u32 %h1, %r6; cvt.rn.f16x2.e5m2x2 %r7, %h1;", "st.global.b32 [%rd3], %r7;",
		nil, &E5M2},
}

func hwPTX() string {
	var b strings.Builder
	b.WriteString(".version 8.1\n.target sm_89\n.address_size 64\n")
	for _, k := range hwKernels {
		fmt.Fprintf(&b, `.visible .entry %s(.param .u64 p_out, .param .u32 p_base)
{
	.reg .b32 %%r<8>;
	.reg .b64 %%rd<4>;
	.reg .f32 %%f1;
	.reg .b16 %%h1;
	mov.u32 %%r1, %%ctaid.x;
	mov.u32 %%r2, %%ntid.x;
	mov.u32 %%r3, %%tid.x;
	mad.lo.u32 %%r4, %%r1, %%r2, %%r3;
	ld.param.u32 %%r5, [p_base];
	add.u32 %%r6, %%r5, %%r4;
	mov.b32 %%f1, %%r6;
	%s
	ld.param.u64 %%rd1, [p_out];
	cvta.to.global.u64 %%rd1, %%rd1;
	mul.wide.u32 %%rd2, %%r4, %d;
	add.u64 %%rd3, %%rd1, %%rd2;
	%s
	ret;
}
`, k.name, k.cvt, k.size, k.store)
	}
	return b.String()
}

// hwRunner launches the check's kernels on GPU 0.
type hwRunner struct {
	t   *testing.T
	mod *gpurt.Module
	buf gpurt.DevicePtr // device buffer for one chunk
}

const hwChunk = 1 << 28 // float32 inputs per launch

func newHWRunner(t *testing.T) *hwRunner {
	if err := gpurt.Load(); err != nil {
		t.Skipf("no CUDA driver: %v", err)
	}
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	r := &hwRunner{t: t}
	major, minor, err := gpurt.Device(0).ComputeCapability()
	r.check(err)
	if major*10+minor < 89 {
		t.Skipf("no FP8 cvt: GPU is sm_%d%d, needs sm_89+", major, minor)
	}
	ctx, err := gpurt.Device(0).RetainPrimaryContext()
	r.check(err)
	t.Cleanup(func() { ctx.Release() })
	r.check(ctx.SetCurrent())
	r.mod, err = gpurt.ModuleLoadData(append([]byte(hwPTX()), 0)) // the driver JIT-compiles PTX text
	r.check(err)
	r.buf, err = gpurt.MemAlloc(4 * hwChunk)
	r.check(err)
	t.Cleanup(func() { gpurt.MemFree(r.buf) })
	return r
}

func (r *hwRunner) check(err error) {
	if err != nil {
		r.t.Fatal(err)
	}
}

// run converts the inputs base .. base+n-1 (n a multiple of 256) with the
// kernel and copies the results into out.
func (r *hwRunner) run(k hwKernel, base uint32, n int, out []byte) {
	fn, err := r.mod.Function(k.name)
	r.check(err)
	r.check(gpurt.Launch(fn, [3]uint32{uint32(n / 256), 1, 1}, [3]uint32{256, 1, 1}, 0, 0, r.buf, base))
	r.check(gpurt.Stream(0).Synchronize())
	r.check(gpurt.MemcpyDtoH(out[:n*k.size], r.buf))
}

// hwMismatches collects disagreements from many goroutines, keeping a few.
type hwMismatches struct {
	count atomic.Int64
	mu    sync.Mutex
	first []string
}

func (m *hwMismatches) add(format string, args ...any) {
	if m.count.Add(1) <= 8 {
		m.mu.Lock()
		m.first = append(m.first, fmt.Sprintf(format, args...))
		m.mu.Unlock()
	}
}

func TestHardwareAllFloat32(t *testing.T) {
	r := newHWRunner(t)
	out := make([]byte, 4*hwChunk)
	for _, k := range hwKernels {
		if k.decode != nil {
			r.run(k, 0, 256, out)
			for c := range 256 {
				gpu, ours := F16ToF32(uint16(readCode(out, c, 4))), k.decode.Decode(uint8(c))
				if !sameFloat(float64(gpu), float64(ours)) {
					t.Errorf("%s: code %#x: gpu %g, ours %g", k.name, c, gpu, ours)
				}
			}
			continue
		}
		var bad hwMismatches
		for base := uint64(0); base < 1<<32; base += hwChunk {
			r.run(k, uint32(base), hwChunk, out)
			forChunks(hwChunk, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					u := uint32(base) + uint32(i)
					x := math.Float32frombits(u)
					if gpu, ours := readCode(out, i, k.size), k.encode(x); gpu != ours {
						bad.add("%#08x (%g): gpu %#x, ours %#x", u, x, gpu, ours)
					}
				}
			})
		}
		t.Logf("%s: %d of 2^32 inputs differ", k.name, bad.count.Load())
		if bad.count.Load() != 0 {
			t.Errorf("%s: first mismatches: %v", k.name, bad.first)
		}
	}
}

func readCode(out []byte, i, size int) uint32 {
	var v uint32
	for j := range size {
		v |= uint32(out[i*size+j]) << (8 * j)
	}
	return v
}

// forChunks splits [0, n) among the CPUs and waits for all.
func forChunks(n int, work func(lo, hi int)) {
	workers := runtime.NumCPU()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { work(n*w/workers, n*(w+1)/workers) })
	}
	wg.Wait()
}
