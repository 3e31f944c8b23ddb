package nccl

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

// rig is one communicator per GPU, made by ncclCommInitRank in one group (the by-value unique id path).
type rig struct {
	lib     *Library
	ctxs    []*gpurt.Context
	streams []gpurt.Stream
	comms   []Comm
}

func newRig(t *testing.T) *rig {
	t.Helper()
	return newRigWith(t, nil)
}

// newRigWith makes the communicators with ncclCommInitRankConfig and cfg where cfg is not nil (skipping where
// the library lacks it), and waits until they are ready.
func newRigWith(t *testing.T, cfg *Config) *rig {
	t.Helper()
	lib, err := Open(os.Getenv("RCCLX_TESTS_LIB"))
	if err != nil {
		t.Skip("no NCCL library: " + err.Error())
	}
	if cfg != nil && !lib.Has("ncclCommInitRankConfig") {
		t.Skipf("%s lacks ncclCommInitRankConfig", lib.File)
	}
	if err := gpurt.Load(); err != nil {
		t.Skip("no CUDA driver: " + err.Error())
	}
	n, err := gpurt.DeviceCount()
	if err != nil || n == 0 {
		t.Skipf("no CUDA device: %d, %v", n, err)
	}
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	t.Setenv("NCCL_NVLS_ENABLE", "0")
	r := &rig{lib: lib}
	id, err := lib.GetUniqueID()
	if err != nil {
		t.Fatal(err)
	}
	if err := lib.GroupStart(); err != nil {
		t.Fatal(err)
	}
	for d := range min(n, 4) {
		ctx, err := gpurt.Device(d).RetainPrimaryContext()
		if err != nil {
			t.Fatal(err)
		}
		ctx.SetCurrent()
		s, err := gpurt.StreamCreate(true)
		if err != nil {
			t.Fatal(err)
		}
		var c Comm
		if cfg == nil {
			c, err = lib.CommInitRank(min(n, 4), id, d)
		} else {
			c, err = lib.CommInitRankConfig(min(n, 4), id, d, cfg)
		}
		if err != nil && !IsInProgress(err) {
			t.Fatal(err)
		}
		r.ctxs, r.streams, r.comms = append(r.ctxs, ctx), append(r.streams, s), append(r.comms, c)
	}
	if err := lib.GroupEnd(); err != nil && !IsInProgress(err) {
		t.Fatal("ncclGroupEnd after ncclCommInitRank:", err)
	}
	r.ready(t)
	t.Cleanup(func() {
		for d, c := range r.comms {
			if err := lib.CommDestroy(c); err != nil {
				t.Error(err)
			}
			r.ctxs[d].SetCurrent()
			r.streams[d].Destroy()
			r.ctxs[d].Release()
		}
	})
	return r
}

func (r *rig) sync(t *testing.T) {
	for _, s := range r.streams {
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range r.comms {
		if st, err := r.lib.CommGetAsyncError(c); err != nil || st != Success {
			t.Fatalf("async state %v, %v", st, err)
		}
	}
}

// ready polls every communicator until it leaves ncclInProgress (within a minute) and fails unless it then
// reports success.
func (r *rig) ready(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for d, c := range r.comms {
		for {
			st, err := r.lib.CommGetAsyncError(c)
			if err != nil || (st != Success && st != InProgress) {
				t.Fatalf("rank %d: async state %v, %v", d, st, err)
			}
			if st == Success {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("rank %d still in progress after a minute", d)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
}

// group makes the calls add adds for each rank inside ncclGroupStart/End.
func (r *rig) group(t *testing.T, add func(q *Calls, d int)) {
	t.Helper()
	q := r.lib.NewCalls().GroupStart()
	for d := range r.comms {
		add(q, d)
	}
	if err := q.GroupEnd().Run(); err != nil && !IsInProgress(err) {
		t.Fatal(err)
	}
	r.ready(t)
}

func floats(vals []float32) []byte {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

func TestGPUAllReducePreMulSumAlltoAll(t *testing.T) { allReducePreMulSumAlltoAll(t, newRig(t)) }

// The same on non-blocking communicators: the library accepts the 2.14 form of ncclConfig_t with blocking 0.
func TestGPUNonBlockingConfig(t *testing.T) {
	cfg := NonBlockingConfig()
	allReducePreMulSumAlltoAll(t, newRigWith(t, &cfg))
}

func allReducePreMulSumAlltoAll(t *testing.T, r *rig) {
	n, count := len(r.comms), 1024*len(r.comms)
	in := make([][]float32, n)
	send, recv := make([]gpurt.DevicePtr, n), make([]gpurt.DevicePtr, n)
	for d := range n {
		r.ctxs[d].SetCurrent()
		in[d] = make([]float32, count)
		for i := range in[d] {
			in[d][i] = float32(rand.IntN(1000))
		}
		var err error
		if send[d], err = gpurt.MemAlloc(int64(4 * count)); err != nil {
			t.Fatal(err)
		}
		if recv[d], err = gpurt.MemAlloc(int64(4 * count)); err != nil {
			t.Fatal(err)
		}
		defer gpurt.MemFree(send[d])
		defer gpurt.MemFree(recv[d])
		gpurt.MemcpyHtoD(send[d], floats(in[d]))
	}
	verify := func(what string, want func(d, i int) float32) {
		t.Helper()
		r.sync(t)
		for d := range n {
			got := make([]byte, 4*count)
			gpurt.MemcpyDtoH(got, recv[d])
			for i := range count {
				if g := math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:])); g != want(d, i) {
					t.Fatalf("%s: rank %d element %d = %v, want %v", what, d, i, g, want(d, i))
				}
			}
		}
	}
	r.group(t, func(q *Calls, d int) {
		q.AllReduce(send[d], recv[d], int64(count), Float32, OpSum, r.comms[d], r.streams[d])
	})
	verify("sum", func(_, i int) float32 {
		var s float32
		for p := range n {
			s += in[p][i]
		}
		return s
	})
	if r.lib.Has("ncclRedOpCreatePreMulSum") {
		ops := make([]RedOp, n)
		for d := range n {
			var err error
			if ops[d], err = r.lib.RedOpCreatePreMulSum(floats([]float32{float32(d + 2)}), Float32, r.comms[d]); err != nil {
				t.Fatal(err)
			}
			defer r.lib.RedOpDestroy(ops[d], r.comms[d])
		}
		r.group(t, func(q *Calls, d int) {
			q.AllReduce(send[d], recv[d], int64(count), Float32, ops[d], r.comms[d], r.streams[d])
		})
		verify("premulsum", func(_, i int) float32 {
			var s float32
			for p := range n {
				s += float32(p+2) * in[p][i]
			}
			return s
		})
	}
	if r.lib.Has("ncclAlltoAll") || r.lib.Has("ncclAllToAll") {
		per := count / n
		r.group(t, func(q *Calls, d int) {
			q.AlltoAll(send[d], recv[d], int64(per), Float32, r.comms[d], r.streams[d])
		})
		verify("alltoall", func(d, i int) float32 { return in[i/per][d*per+i%per] })
	}
}

// buffers allocates bytes of device memory per rank, freed when the test ends.
func (r *rig) buffers(t *testing.T, bytes int64) []gpurt.DevicePtr {
	t.Helper()
	buf := make([]gpurt.DevicePtr, len(r.comms))
	for d := range r.comms {
		r.ctxs[d].SetCurrent()
		var err error
		if buf[d], err = gpurt.MemAlloc(bytes); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.ctxs[d].SetCurrent(); gpurt.MemFree(buf[d]) })
	}
	return buf
}

// A call that fails inside a group (an invalid data type) stops the calls, is named in the error, and leaves
// no group open: the next group runs and is right.
func TestGPUCallsFailure(t *testing.T) {
	r := newRig(t)
	buf := r.buffers(t, 4)
	for d := range r.comms {
		r.ctxs[d].SetCurrent()
		gpurt.MemcpyHtoD(buf[d], floats([]float32{1}))
	}
	q := r.lib.NewCalls().GroupStart().GroupStart()
	for d, c := range r.comms {
		q.AllReduce(buf[d], buf[d], 1, Float32, OpSum, c, r.streams[d])
	}
	q.GroupEnd().GroupStart().AllReduce(buf[0], buf[0], 1, DataType(99), OpSum, r.comms[0], r.streams[0])
	var e *Error
	if err := q.GroupEnd().GroupEnd().Run(); !errors.As(err, &e) || e.Call != "ncclAllReduce" || e.Code != InvalidArgument {
		t.Fatalf("a group with an invalid data type: %v", err)
	}
	r.sync(t)
	for d := range r.comms { // should the library have run the valid calls of the failed group
		r.ctxs[d].SetCurrent()
		gpurt.MemcpyHtoD(buf[d], floats([]float32{1}))
	}
	r.group(t, func(q *Calls, d int) { q.AllReduce(buf[d], buf[d], 1, Float32, OpSum, r.comms[d], r.streams[d]) })
	r.sync(t)
	got := make([]byte, 4)
	gpurt.MemcpyDtoH(got, buf[0])
	if v := math.Float32frombits(binary.LittleEndian.Uint32(got)); v != float32(len(r.comms)) {
		t.Errorf("the group after the failed one: %v, want %d", v, len(r.comms))
	}
}

// TestGPUCallCost measures the host cost of the calls the vendor engine makes per operation: a trivial call
// (ncclGetVersion: the cost of crossing from Go into C), an empty group, and a group of one small
// all-reduce per GPU, made with a crossing per call and as one Calls of 50 groups (the timed loop's way).
func TestGPUCallCost(t *testing.T) {
	r := newRig(t)
	buf := r.buffers(t, 64)
	r.ctxs[0].SetCurrent()
	per := func(n int, f func()) time.Duration {
		best := time.Duration(math.MaxInt64)
		for range 5 {
			start := time.Now()
			for range n {
				f()
			}
			best = min(best, time.Since(start)/time.Duration(n))
			r.sync(t)
		}
		return best
	}
	var v int32
	version := per(100000, func() { r.lib.call(&r.lib.getVersion, uintptr(unsafe.Pointer(&v))) })
	empty := per(10000, func() { r.lib.GroupStart(); r.lib.GroupEnd() })
	singles := []*Calls{r.lib.NewCalls().GroupStart()}
	for d, c := range r.comms {
		singles = append(singles, r.lib.NewCalls().AllReduce(buf[d], buf[d], 2, Float32, OpSum, c, r.streams[d]))
	}
	singles = append(singles, r.lib.NewCalls().GroupEnd())
	crossings := per(200, func() {
		for _, s := range singles {
			s.Run()
		}
	})
	q := r.lib.NewCalls()
	for range 50 {
		q.GroupStart()
		for d, c := range r.comms {
			q.AllReduce(buf[d], buf[d], 2, Float32, OpSum, c, r.streams[d])
		}
		q.GroupEnd()
	}
	batched := per(4, func() { q.Run() }) / 50
	t.Logf("per call: ncclGetVersion %v; ncclGroupStart+ncclGroupEnd %v; ncclGroupStart + %d x ncclAllReduce(8 B) + ncclGroupEnd: %v with a crossing per call, %v in one Calls of 50 (enqueue only, host time)",
		version, empty, len(r.comms), crossings, batched)
}
