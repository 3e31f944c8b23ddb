package gpurt

import (
	"bytes"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"
)

// onGPU skips without a driver or device, else makes device 0's primary
// context current on a locked thread for the rest of the test.
func onGPU(t *testing.T) *Context {
	t.Helper()
	if err := Load(); err != nil {
		t.Skip("no CUDA driver: " + err.Error())
	}
	if n, err := DeviceCount(); err != nil || n == 0 {
		t.Skipf("no CUDA device: n=%d err=%v", n, err)
	}
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	ctx, err := Device(0).RetainPrimaryContext()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ctx.Release() })
	if err := ctx.SetCurrent(); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// devAlloc allocates n bytes in the current context, freed when the test ends.
func devAlloc(t *testing.T, n int64) DevicePtr {
	t.Helper()
	p, err := MemAlloc(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = MemFree(p) })
	return p
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return b
}

func TestGPUDeviceQueries(t *testing.T) {
	ctx := onGPU(t)
	d := ctx.Device()
	name, err := d.Name()
	if err != nil || name == "" {
		t.Fatalf("Name = %q, %v", name, err)
	}
	bus, err := d.PCIBusID()
	if err != nil || len(bus) < 7 {
		t.Fatalf("PCIBusID = %q, %v", bus, err)
	}
	major, _, err := d.ComputeCapability()
	if err != nil || major < 3 {
		t.Fatalf("ComputeCapability major = %d, %v", major, err)
	}
	if sms, err := d.Attribute(MultiprocessorCount); err != nil || sms <= 0 {
		t.Fatalf("SM count = %d, %v", sms, err)
	}
	total, err := d.TotalMem()
	if err != nil || total <= 0 {
		t.Fatalf("TotalMem = %d, %v", total, err)
	}
	free, total2, err := MemGetInfo()
	if err != nil || free <= 0 || total2 != total {
		t.Fatalf("MemGetInfo = %d, %d, %v (TotalMem %d)", free, total2, err, total)
	}
	if v, err := DriverVersion(); err != nil || v < 10000 {
		t.Fatalf("DriverVersion = %d, %v", v, err)
	}
	if _, err := Device(1 << 20).Name(); err == nil {
		t.Error("a nonexistent device has a name")
	}
}

func TestGPUCopyRoundTrip(t *testing.T) {
	onGPU(t)
	const n = 1<<20 + 12
	in := randomBytes(n)
	a := devAlloc(t, n)
	b := devAlloc(t, n)
	if err := MemsetD8(b, 0xA5, n); err != nil {
		t.Fatal(err)
	}
	if err := MemcpyHtoD(a, in); err != nil {
		t.Fatal(err)
	}
	if err := MemcpyDtoD(b, a, n); err != nil {
		t.Fatal(err)
	}
	out := bytes.Repeat([]byte{0x5A}, n)
	if err := MemcpyDtoH(out, b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(in, out) {
		t.Fatal("HtoD, DtoD, DtoH round trip changed the data")
	}
	s, err := StreamCreate(true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	if err := MemsetD32Async(b, 0x01020304, n/4, s); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if err := MemcpyDtoH(out, b); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n/4*4; i++ {
		if out[i] != byte(4-i%4) {
			t.Fatalf("MemsetD32Async byte %d = %#x", i, out[i])
		}
	}
	if _, err := MemAlloc(1 << 60); err == nil {
		t.Error("allocating 1 EiB succeeded")
	} else if e, ok := err.(*Error); !ok || e.Call != strings.TrimSuffix(cuMemAlloc.name, "_v2") || e.Code != 2 { // out of memory in both
		t.Errorf("huge MemAlloc error = %v", err)
	}
}

func TestGPUEventsAndStreams(t *testing.T) {
	onGPU(t)
	s, err := StreamCreate(false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	start, err := EventCreate(true)
	if err != nil {
		t.Fatal(err)
	}
	defer start.Destroy()
	end, err := EventCreate(true)
	if err != nil {
		t.Fatal(err)
	}
	defer end.Destroy()
	const n = 256 << 20
	a := devAlloc(t, n)
	b := devAlloc(t, n)
	if err := start.Record(s); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if err := MemcpyDtoDAsync(b, a, n, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := end.Record(s); err != nil {
		t.Fatal(err)
	}
	if err := end.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if done, err := end.Query(); !done || err != nil {
		t.Fatalf("event Query after Synchronize = %v, %v", done, err)
	}
	if done, err := s.Query(); !done || err != nil {
		t.Fatalf("stream Query after the last event = %v, %v", done, err)
	}
	dt, err := EventElapsed(start, end)
	if err != nil || dt <= 0 || dt > 10*time.Second {
		t.Fatalf("EventElapsed = %v, %v", dt, err)
	}
	t.Logf("4 x %d MiB DtoD: %v (%.0f GB/s read+write)", n>>20, dt, 8*n/dt.Seconds()/1e9)
	untimed, err := EventCreate(false)
	if err != nil {
		t.Fatal(err)
	}
	defer untimed.Destroy()
	if err := untimed.Record(s); err != nil {
		t.Fatal(err)
	}
	if err := StreamWaitEvent(Stream(0), untimed); err != nil {
		t.Fatal(err)
	}
	if err := untimed.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if _, err := EventElapsed(start, untimed); err == nil {
		t.Error("EventElapsed accepted an event created without timing")
	}
}

// MemcpyHtoD waits for the whole context, so work queued earlier on a non-blocking stream (which the legacy
// stream does not wait for) is done when it returns. Logged: a stream query's cost after copy-engine work and
// after a context synchronize.
func TestGPUMemcpyHtoDWaitsForTheContext(t *testing.T) {
	onGPU(t)
	s, err := StreamCreate(true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	const n = 256 << 20
	a, b := devAlloc(t, n), devAlloc(t, n)
	for range 8 {
		if err := MemcpyDtoDAsync(b, a, n, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := MemcpyHtoD(a, []byte{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	if done, err := s.Query(); !done || err != nil {
		t.Fatalf("non-blocking stream's Query after MemcpyHtoD = %v, %v: want done", done, err)
	}
	queryCost := func() time.Duration {
		start := time.Now()
		for range 1000 {
			if _, err := s.Query(); err != nil {
				t.Fatal(err)
			}
		}
		return time.Since(start) / 1000
	}
	if err := MemcpyDtoDAsync(b, a, 8, s); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	afterCopy := queryCost()
	if err := Synchronize(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stream Query, idle: %v after a copy, %v after a context synchronize", afterCopy, queryCost())
}

func TestGPUHostMapped(t *testing.T) {
	onGPU(t)
	host, dev, err := HostAllocMapped(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer HostFree(host)
	flag := (*[4096]byte)(host)
	want := randomBytes(4096)
	copy(flag[:], want)
	got := make([]byte, 4096)
	if err := MemcpyDtoH(got, dev); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("device view of mapped host memory differs from host writes")
	}
}
