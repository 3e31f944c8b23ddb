package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"github.com/rcclx-tests/rcclx-tests/results"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

const kernels = `
extern "C" __global__ void nop() {}
extern "C" __global__ void nop5(void* a, void* b, unsigned c, long long d, float e) {}
extern "C" __global__ void add_iota(unsigned* y, unsigned base, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += base + i;
}
`

// gpu is one device with its context current on the main thread when used.
type gpu struct {
	dev                gpurt.Device
	ctx                *gpurt.Context
	nop, nop5, addIota gpurt.Function
}

func (g *gpu) use() error { return g.ctx.SetCurrent() }

// runChecks runs every functional check; gpus is nil if no device is usable.
func runChecks() ([]result, []*gpu) {
	var out []result
	add := func(step, detail string, err error, provides ...string) bool {
		out = append(out, result{step: step, detail: detail, err: err, provides: provides})
		return err == nil
	}
	// absent: a piece that is not there is said, not failed.
	absent := func(step, detail string, err error) bool {
		out = append(out, result{step: step, detail: detail, err: err, absent: err != nil})
		return err == nil
	}
	err := gpurt.Load()
	s := stepsOf(gpurt.Loaded(), gpuVendors(pciRoot))
	if !absent(s.driver, runtimeDetail(), err) {
		return out, nil
	}
	v, err := gpurt.DriverVersion()
	n, err2 := gpurt.DeviceCount()
	if err == nil && err2 == nil && n == 0 {
		absent(s.devices, "", fmt.Errorf("the %s (driver version %d) sees no GPU", gpurt.Loaded().Title(), v))
		return out, nil
	}
	if !add(s.devices, fmt.Sprintf("driver version %d, %d device(s)", v, n), firstErr(err, err2), gpurt.Loaded().String()) {
		return out, nil
	}
	if !absent(s.compiler, "", gpurt.LoadCompiler()) {
		return out, nil
	}
	cv, err := gpurt.CompilerVersion()
	add(s.compiler+" version", cv, err)
	cubin, detail, err := compileTwice()
	if !add(stepCompile, detail, err) {
		return out, nil
	}
	var gpus []*gpu
	for i := range n {
		g, detail, err := openGPU(gpurt.Device(i), cubin)
		if !add(fmt.Sprintf("device %d", i), detail, err) {
			return out, nil
		}
		gpus = append(gpus, g)
		detail, err = copyRoundTrip(g)
		add(fmt.Sprintf("copy round trip dev%d", i), detail, err)
		detail, err = launchAndCheck(g)
		add(fmt.Sprintf("%s kernel dev%d", s.compiler, i), detail, err, "gpu")
	}
	detail, err = memoryKinds(gpus[0])
	add(stepMemory+" dev0", detail, err)
	detail, err = copyBandwidth(gpus[0])
	add("DtoD bandwidth dev0", detail, err)
	detail, err = graphReplay(gpus[0])
	add("graph capture/replay", detail, err)
	peer := gpus[len(gpus)-1]
	detail, err = ipcRoundTrip(gpus[0], peer)
	add(fmt.Sprintf("%s dev0 -> child dev%d", stepIPC, peer.dev), detail, err)
	if len(gpus) > 1 {
		detail, err = peerCopy(gpus[0], gpus[1])
		add(stepPeer+" dev0 -> dev1", detail, err)
	}
	return out, gpus
}

// sizeShift shrinks the checks' buffers (1 GiB, 64 MiB, 16 MiB) by this power of two: tests that run every
// check on a fake runtime, whose device memory is host memory, set it.
var sizeShift uint

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func compileTwice() ([]byte, string, error) {
	dir, err := os.MkdirTemp("", "rcclx-doctor-cache-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(dir)
	os.Setenv("RCCLX_TESTS_KERNEL_CACHE", dir)
	arch, err := gpurt.Device(0).Arch()
	if err != nil {
		return nil, "", err
	}
	t0 := time.Now()
	cold, err := gpurt.CompileCached(kernels, "smoke.cu", arch)
	if err != nil {
		return nil, "", err
	}
	t1 := time.Now()
	warm, err := gpurt.CompileCached(kernels, "smoke.cu", arch)
	if err != nil {
		return nil, "", err
	}
	t2 := time.Now()
	if !bytes.Equal(cold, warm) {
		return nil, "", fmt.Errorf("the cached code object differs from the compiled one")
	}
	return cold, fmt.Sprintf("%s, %d B code object, compiled in %v, from the cache in %v", arch, len(cold),
		t1.Sub(t0).Round(time.Millisecond), t2.Sub(t1).Round(time.Microsecond)), nil
}

func openGPU(d gpurt.Device, cubin []byte) (*gpu, string, error) {
	name, err := d.Name()
	bus, err2 := d.PCIBusID()
	sms, err4 := d.Attribute(gpurt.MultiprocessorCount)
	mem, err5 := d.TotalMem()
	if err := firstErr(err, err2, err4, err5); err != nil {
		return nil, "", err
	}
	detail, err := deviceDetail(d, name, bus, sms, mem)
	if err != nil {
		return nil, "", err
	}
	g := &gpu{dev: d}
	if g.ctx, err = d.RetainPrimaryContext(); err != nil {
		return nil, "", err
	}
	if err := g.use(); err != nil {
		return nil, "", err
	}
	m, err := gpurt.ModuleLoadData(cubin)
	if err != nil {
		return nil, "", err
	}
	for name, f := range map[string]*gpurt.Function{"nop": &g.nop, "nop5": &g.nop5, "add_iota": &g.addIota} {
		if *f, err = m.Function(name); err != nil {
			return nil, "", err
		}
	}
	return g, detail, nil
}

func copyRoundTrip(g *gpu) (string, error) {
	if err := g.use(); err != nil {
		return "", err
	}
	n := int64(64<<20) >> sizeShift
	in := make([]byte, n)
	for i := int64(0); i < n; i += 8 {
		binary.LittleEndian.PutUint64(in[i:], rand.Uint64())
	}
	a, b, free, err := alloc2(n)
	if err != nil {
		return "", err
	}
	defer free()
	out := bytes.Repeat([]byte{0xCD}, int(n))
	err = firstErr(gpurt.MemsetD8(b, 0xAB, n), gpurt.MemcpyHtoD(a, in), gpurt.MemcpyDtoD(b, a, n), gpurt.MemcpyDtoH(out, b))
	if err != nil {
		return "", err
	}
	if !bytes.Equal(in, out) {
		return "", fmt.Errorf("%s HtoD/DtoD/DtoH round trip changed the data", results.FormatSize(n))
	}
	return results.FormatSize(n) + " random bytes HtoD, DtoD, DtoH", nil
}

// alloc2 allocates two device buffers in the current context.
func alloc2(n int64) (a, b gpurt.DevicePtr, free func(), err error) {
	if a, err = gpurt.MemAlloc(n); err != nil {
		return 0, 0, nil, err
	}
	if b, err = gpurt.MemAlloc(n); err != nil {
		gpurt.MemFree(a)
		return 0, 0, nil, err
	}
	return a, b, func() { gpurt.MemFree(a); gpurt.MemFree(b) }, nil
}

// fillIota zeroes y and adds base+i to each of its n words on s.
func fillIota(g *gpu, y gpurt.DevicePtr, base uint32, n int, s gpurt.Stream) error {
	if err := gpurt.MemsetD32Async(y, 0, int64(n), s); err != nil {
		return err
	}
	return gpurt.Launch(g.addIota, [3]uint32{uint32((n + 255) / 256), 1, 1}, [3]uint32{256, 1, 1}, 0, s, y, base, uint32(n))
}

// checkIota downloads n words of y and checks y[i] == k*(base+i).
func checkIota(y gpurt.DevicePtr, base uint32, k uint32, n int) error {
	buf := make([]byte, 4*n)
	if err := gpurt.MemcpyDtoH(buf, y); err != nil {
		return err
	}
	for i := range n {
		if got, want := binary.LittleEndian.Uint32(buf[4*i:]), k*(base+uint32(i)); got != want {
			return fmt.Errorf("word %d = %d, want %d", i, got, want)
		}
	}
	return nil
}

func launchAndCheck(g *gpu) (string, error) {
	if err := g.use(); err != nil {
		return "", err
	}
	const n = 1<<20 + 3
	y, err := gpurt.MemAlloc(4 * n)
	if err != nil {
		return "", err
	}
	defer gpurt.MemFree(y)
	base := rand.Uint32() >> 4
	if err := firstErr(fillIota(g, y, base, n, 0), gpurt.Stream(0).Synchronize()); err != nil {
		return "", err
	}
	return fmt.Sprintf("add_iota over %d words checked", n), checkIota(y, base, 1, n)
}

func copyBandwidth(g *gpu) (string, error) {
	if err := g.use(); err != nil {
		return "", err
	}
	const reps = 5
	n := int64(1<<30) >> sizeShift
	a, b, free, err := alloc2(n)
	if err != nil {
		return "", err
	}
	defer free()
	dt, err := timeOnStream(func(s gpurt.Stream) error {
		for range reps {
			if err := gpurt.MemcpyDtoDAsync(b, a, n, s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d x %s in %v: %.0f GB/s read+write", reps, results.FormatSize(n), dt.Round(time.Microsecond),
		2*reps*float64(n)/dt.Seconds()/1e9), nil
}

// timeOnStream times the work that enqueue puts on a fresh stream with events.
func timeOnStream(enqueue func(s gpurt.Stream) error) (time.Duration, error) {
	s, err := gpurt.StreamCreate(true)
	if err != nil {
		return 0, err
	}
	defer s.Destroy()
	start, err := gpurt.EventCreate(true)
	if err != nil {
		return 0, err
	}
	defer start.Destroy()
	end, err := gpurt.EventCreate(true)
	if err != nil {
		return 0, err
	}
	defer end.Destroy()
	if err := firstErr(start.Record(s), enqueue(s), end.Record(s), end.Synchronize()); err != nil {
		return 0, err
	}
	return gpurt.EventElapsed(start, end)
}

func graphReplay(g *gpu) (string, error) {
	if err := g.use(); err != nil {
		return "", err
	}
	const n, launches, replays = 1 << 16, 4, 3
	y, err := gpurt.MemAlloc(4 * n)
	if err != nil {
		return "", err
	}
	defer gpurt.MemFree(y)
	base := rand.Uint32() >> 8
	if err := firstErr(gpurt.MemsetD32Async(y, 0, n, 0), gpurt.Stream(0).Synchronize()); err != nil {
		return "", err
	}
	exec, err := capture(func(s gpurt.Stream) error {
		for range launches {
			err := gpurt.Launch(g.addIota, [3]uint32{n / 256, 1, 1}, [3]uint32{256, 1, 1}, 0, s, y, base, uint32(n))
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	defer exec.Destroy()
	for range replays {
		if err := exec.Launch(0); err != nil {
			return "", err
		}
	}
	if err := gpurt.Stream(0).Synchronize(); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d launches captured, replayed %d times, result checked", launches, replays), checkIota(y, base, launches*replays, n)
}

// capture records what enqueue puts on a capture stream and instantiates it.
func capture(enqueue func(s gpurt.Stream) error) (gpurt.GraphExec, error) {
	s, err := gpurt.StreamCreate(true)
	if err != nil {
		return 0, err
	}
	defer s.Destroy()
	if err := s.BeginCapture(); err != nil {
		return 0, err
	}
	err = enqueue(s)
	graph, endErr := s.EndCapture()
	if err := firstErr(err, endErr); err != nil {
		return 0, err
	}
	defer graph.Destroy()
	return graph.Instantiate()
}

func ipcRoundTrip(owner, peer *gpu) (string, error) {
	if err := owner.use(); err != nil {
		return "", err
	}
	n := int64(16<<20) >> sizeShift
	in := make([]byte, n)
	for i := int64(0); i < n; i += 8 {
		binary.LittleEndian.PutUint64(in[i:], rand.Uint64())
	}
	p, err := gpurt.MemAlloc(n)
	if err != nil {
		return "", err
	}
	defer gpurt.MemFree(p)
	if err := gpurt.MemcpyHtoD(p, in); err != nil {
		return "", err
	}
	h, err := gpurt.IpcGetMemHandle(p)
	if err != nil {
		return "", err
	}
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(self, "--ipc-child", hex.EncodeToString(h[:]), "--ipc-device", fmt.Sprint(peer.dev), "--ipc-bytes", fmt.Sprint(n))
	cmd.Env = append(os.Environ(), gpurt.RuntimeVariable+"="+gpurt.Loaded().String()) // the child binds this runtime too
	cmd.Stderr = os.Stderr
	got, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("child: %w", err)
	}
	sum := sha256.Sum256(in)
	if want := hex.EncodeToString(sum[:]); strings.TrimSpace(string(got)) != want {
		return "", fmt.Errorf("child read %q, want SHA-256 %s", strings.TrimSpace(string(got)), want)
	}
	return results.FormatSize(n) + " opened and read by a second process", nil
}

func runIPCChild(handleHex string, dev int, n int64) error {
	raw, err := hex.DecodeString(handleHex)
	if err != nil || len(raw) != len(gpurt.IpcMemHandle{}) {
		return fmt.Errorf("bad handle %q: %v", handleHex, err)
	}
	var h gpurt.IpcMemHandle
	copy(h[:], raw)
	if err := gpurt.Load(); err != nil {
		return err
	}
	ctx, err := gpurt.Device(dev).RetainPrimaryContext()
	if err != nil {
		return err
	}
	defer ctx.Release()
	if err := ctx.SetCurrent(); err != nil {
		return err
	}
	p, err := gpurt.IpcOpenMemHandle(h)
	if err != nil {
		return err
	}
	defer gpurt.IpcCloseMemHandle(p)
	buf := make([]byte, n)
	if err := gpurt.MemcpyDtoH(buf, p); err != nil {
		return err
	}
	sum := sha256.Sum256(buf)
	fmt.Println(hex.EncodeToString(sum[:]))
	return nil
}

func peerCopy(src, dst *gpu) (string, error) {
	n := int64(1<<30) >> sizeShift
	words := int(n / 4)
	if err := dst.use(); err != nil {
		return "", err
	}
	to, err := gpurt.MemAlloc(n)
	if err != nil {
		return "", err
	}
	defer func() { _ = dst.use(); gpurt.MemFree(to); _ = src.use() }()
	if err := gpurt.MemsetD8(to, 0xFF, n); err != nil {
		return "", err
	}
	if err := src.use(); err != nil {
		return "", err
	}
	if err := gpurt.EnablePeerAccess(dst.ctx); err != nil {
		return "", err
	}
	from, err := gpurt.MemAlloc(n)
	if err != nil {
		return "", err
	}
	defer gpurt.MemFree(from)
	base := rand.Uint32() >> 4
	if err := firstErr(fillIota(src, from, base, words, 0), gpurt.Stream(0).Synchronize()); err != nil {
		return "", err
	}
	dt, err := timeOnStream(func(s gpurt.Stream) error { return gpurt.MemcpyPeerAsync(to, dst.ctx, from, src.ctx, n, s) })
	if err != nil {
		return "", err
	}
	if err := dst.use(); err != nil {
		return "", err
	}
	if err := checkIota(to, base, 1, words); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s in %v: %.0f GB/s, checked", results.FormatSize(n), dt.Round(time.Microsecond),
		float64(n)/dt.Seconds()/1e9), src.use()
}
