package main

import (
	"fmt"
	"runtime"
	"slices"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/rcclx-tests/rcclx-tests/gpurt"
	"github.com/rcclx-tests/rcclx-tests/internal/ccall"
)

const batch = 200 // calls per timed batch; the queue is drained between batches

// perCall returns the median host time of one call over batches of calls,
// draining the GPU queue (untimed) after each batch.
func perCall(iters int, call func() error, drain func() error) (time.Duration, error) {
	var samples []time.Duration
	iters = max(iters, 1) // at least one batch: --iters below 64 still times the batched calls once
	for done := 0; done < iters; done += batch {
		t0 := time.Now()
		for range batch {
			if err := call(); err != nil {
				return 0, err
			}
		}
		samples = append(samples, time.Since(t0)/batch)
		if err := drain(); err != nil {
			return 0, err
		}
	}
	slices.Sort(samples)
	return samples[len(samples)/2], nil
}

func noDrain() error { return nil }

// measureCallCosts times the host side of each kind of call, and the device
// time per kernel launched from a stream and from a graph.
func measureCallCosts(g *gpu, iters int) []result {
	var out []result
	add := func(step string, d time.Duration, err error) {
		out = append(out, result{step: step, detail: fmt.Sprintf("%.3f us/call", d.Seconds()*1e6), err: err})
	}
	if err := g.use(); err != nil {
		return []result{{step: "call costs", err: err}}
	}
	labs, labsFn, err := libcLabs()
	if err != nil {
		return []result{{step: "call costs", err: err}}
	}
	d, err := perCall(iters, func() error { purego.SyscallN(labs, 7); return nil }, noDrain)
	add("purego SyscallN libc labs", d, err)
	d, err = perCall(iters, func() error { labsFn(7); return nil }, noDrain)
	add("purego RegisterFunc labs", d, err)
	d, err = perCall(iters, func() error { ccall.Call(labs, 7); return nil }, noDrain)
	add("ccall.Call libc labs", d, err)
	var batch ccall.Batch
	for range 64 {
		batch.Add(labs, 0)
	}
	d, err = perCall(iters/64, func() error { batch.Run(0); return nil }, noDrain)
	add("ccall.Batch of 64 libc labs, per call", d/64, err)

	s, err := gpurt.StreamCreate(true)
	if err != nil {
		return append(out, result{step: "call costs", err: err})
	}
	defer s.Destroy()
	ev, err := gpurt.EventCreate(false)
	if err != nil {
		return append(out, result{step: "call costs", err: err})
	}
	defer ev.Destroy()
	d, err = perCall(iters, func() error { _, err := s.Query(); return err }, noDrain)
	add("Stream.Query (idle)", d, err)
	d, err = perCall(iters, func() error { return ev.Record(s) }, s.Synchronize)
	add("Event.Record", d, err)

	one := [3]uint32{1, 1, 1}
	d, err = perCall(iters, func() error { return gpurt.Launch(g.nop, one, one, 0, s) }, s.Synchronize)
	add("gpurt.Launch nop, 0 args", d, err)
	a, b := gpurt.DevicePtr(0x1000), gpurt.DevicePtr(0x2000)
	d, err = perCall(iters, func() error { return gpurt.Launch(g.nop5, one, one, 0, s, a, b, uint32(3), int64(4), float32(5)) }, s.Synchronize)
	add("gpurt.Launch nop5, 5 args", d, err)
	out = append(out, rawLaunchCosts(g, s, iters)...)
	return append(out, deviceLaunchTimes(g, s)...)
}

// libcLabs resolves labs from libc for the raw purego overhead.
func libcLabs() (uintptr, func(int64) int64, error) {
	h, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW)
	if err != nil {
		return 0, nil, err
	}
	addr, err := purego.Dlsym(h, "labs")
	if err != nil {
		return 0, nil, err
	}
	var fn func(int64) int64
	purego.RegisterFunc(&fn, addr)
	return addr, fn, nil
}

// rawLaunchCosts calls the runtime's launch function (cuLaunchKernel, hipModuleLaunchKernel) with a prebuilt
// parameter block through SyscallN and through RegisterFunc, to compare the two calling mechanisms.
func rawLaunchCosts(g *gpu, s gpurt.Stream, iters int) []result {

	type block struct {
		vals [5]uint64
		ptrs [5]unsafe.Pointer
	}
	p := new(block)
	for i := range p.ptrs {
		p.ptrs[i] = unsafe.Pointer(&p.vals[i])
	}
	var pin runtime.Pinner
	pin.Pin(p)
	defer pin.Unpin()
	one := [3]uint32{1, 1, 1}
	fn, args := gpurt.LaunchCall(g.nop5, one, one, 0, s, uintptr(unsafe.Pointer(&p.ptrs[0])))
	var launchFn func(f uintptr, gx, gy, gz, bx, by, bz, shm uint32, s uintptr, params, extra unsafe.Pointer) int32
	purego.RegisterFunc(&launchFn, fn)
	check := func(r int32) error {
		if r != 0 {
			return gpurt.LaunchError(int(r))
		}
		return nil
	}
	var out []result
	d, err := perCall(iters, func() error {
		r, _, _ := purego.SyscallN(fn, args...)
		return check(int32(r))
	}, s.Synchronize)
	out = append(out, result{step: "raw SyscallN launch", detail: fmt.Sprintf("%.3f us/call (5 args prebuilt)", d.Seconds()*1e6), err: err})
	d, err = perCall(iters, func() error {
		return check(launchFn(uintptr(g.nop5), 1, 1, 1, 1, 1, 1, 0, uintptr(s), unsafe.Pointer(&p.ptrs[0]), nil))
	}, s.Synchronize)
	out = append(out, result{step: "raw RegisterFunc launch", detail: fmt.Sprintf("%.3f us/call (5 args prebuilt)", d.Seconds()*1e6), err: err})
	return out
}

// deviceLaunchTimes measures GPU time per empty kernel, launched one by one
// from a stream and replayed from a captured graph.
func deviceLaunchTimes(g *gpu, s gpurt.Stream) []result {
	const n = 1000
	one := [3]uint32{1, 1, 1}
	launchN := func(s gpurt.Stream) error {
		for range n {
			if err := gpurt.Launch(g.nop, one, one, 0, s); err != nil {
				return err
			}
		}
		return nil
	}
	var out []result
	add := func(step string, dt time.Duration, err error) {
		out = append(out, result{step: step, detail: fmt.Sprintf("%.3f us/kernel (device, %d kernels)", dt.Seconds()*1e6/n, n), err: err})
	}
	dt, err := timeOnStream(launchN)
	add("nop kernels from a stream", dt, err)
	exec, err := capture(launchN)
	if err != nil {
		return append(out, result{step: "nop kernels from a graph", err: err})
	}
	defer exec.Destroy()
	if err := firstErr(exec.Launch(s), s.Synchronize()); err != nil { // warm up the upload
		return append(out, result{step: "nop kernels from a graph", err: err})
	}
	dt, err = timeOnStream(func(s gpurt.Stream) error { return exec.Launch(s) })
	add("nop kernels from a graph", dt, err)
	return out
}
