package vendorengine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
	"time"

	"rcclx-tests/collectives"
	"rcclx-tests/cuda"
	"rcclx-tests/nccl"
)

// openGPU opens the vendor engine over every GPU (at most 4) on a locked thread, or skips.
func openGPU(t *testing.T, cfg collectives.Config) *comm {
	t.Helper()
	if err := New().(collectives.Prober).Available(); err != nil {
		t.Skip("no CUDA driver, GPU or NCCL library: " + err.Error())
	}
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	n, _ := cuda.DeviceCount()
	cfg.NThreads, cfg.NGpus = 1, min(n, 4)
	cfg.Library = os.Getenv("RCCLX_TESTS_LIB")
	c, err := New().Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error("Close:", err)
		}
	})
	return c.(*comm)
}

// check runs one call of coll on every rank of g with fresh inputs and poisoned outputs, and returns the
// number of wrong elements.
func check(t *testing.T, g *group, coll *collectives.Collective, dt collectives.DType, op collectives.Op, size int64, inPlace bool) int64 {
	t.Helper()
	n, seed := g.c.nranks, rand.Uint64()
	call := &collectives.Call{Coll: coll, DType: dt, Op: op}
	var bufs []collectives.Buffer
	defer func() {
		for _, b := range bufs {
			g.Free(b)
		}
	}()
	es := int64(dt.Size())
	for l, r := range g.global {
		k := coll.Counts(size, n, r, dt)
		call.Counts = append(call.Counts, k)
		var send, recv collectives.View
		if inPlace {
			b, err := g.Alloc(l, max(k.Send, k.Recv)*es)
			if err != nil {
				t.Fatal(err)
			}
			bufs = append(bufs, b)
			send, recv = collectives.View{Buf: b, Off: k.SendInPlace * es}, collectives.View{Buf: b, Off: k.RecvInPlace * es}
			if err := g.Write(collectives.View{Buf: b}, bytes.Repeat([]byte{0xa5}, int(b.Len()))); err != nil {
				t.Fatal(err)
			}
		} else {
			s, err1 := g.Alloc(l, k.Send*es)
			d, err2 := g.Alloc(l, k.Recv*es)
			if err := errors.Join(err1, err2); err != nil {
				t.Fatal(err)
			}
			bufs = append(bufs, s, d)
			send, recv = collectives.View{Buf: s}, collectives.View{Buf: d}
			if err := g.Write(recv, bytes.Repeat([]byte{0xa5}, int(k.Recv*es))); err != nil {
				t.Fatal(err)
			}
		}
		if err := g.Write(send, coll.Input(dt, op, r, n, k, seed)); err != nil {
			t.Fatal(err)
		}
		call.Send, call.Recv = append(call.Send, send), append(call.Recv, recv)
	}
	if err := g.Launch(call); err != nil {
		t.Fatalf("%s %s %s: %v", coll.Name, dt, op, err)
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	var wrong int64
	for l, r := range g.global {
		k := call.Counts[l]
		got := make([]byte, k.Recv*es)
		if err := g.Read(got, call.Recv[l]); err != nil {
			t.Fatal(err)
		}
		w, _ := coll.Expect(dt, op, r, n, k, seed, coll.Tolerance(dt, op, n, false)).Check(got)
		wrong += w
	}
	return wrong
}

func TestGPUCollectivesAreCorrect(t *testing.T) {
	c := openGPU(t, collectives.Config{})
	g := c.groups[0]
	dtypes := []collectives.DType{collectives.Float, collectives.Half, collectives.BFloat16, collectives.Int32,
		collectives.Uint8, collectives.Double}
	for _, coll := range collectives.All() {
		for _, dt := range dtypes {
			for _, op := range []collectives.Op{collectives.Sum, collectives.MulSum, collectives.Min, collectives.Avg} {
				if !coll.Reduces && op != collectives.Sum {
					continue
				}
				for _, inPlace := range []bool{false, true} {
					if coll == collectives.AllToAll && inPlace {
						continue // not checked by nccl-tests either
					}
					if w := check(t, g, coll, dt, op, 1<<16+96, inPlace); w != 0 {
						t.Errorf("%s %s %s in-place=%v: %d wrong", coll.Name, dt, op, inPlace, w)
					}
				}
			}
		}
	}
}

func TestGPUEventsGraphsAndMemory(t *testing.T) {
	c := openGPU(t, collectives.Config{})
	g := c.groups[0]
	free, err := g.FreeMemory(0)
	if err != nil || free <= 0 {
		t.Fatalf("FreeMemory = %d, %v", free, err)
	}
	for series := range 2 { // the second series reuses the first one's events
		m0, err := g.Mark()
		if err != nil {
			t.Fatal(err)
		}
		check(t, g, collectives.AllReduce, collectives.Float, collectives.Sum, 1<<22, false)
		m1, err := g.Mark()
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
		if d, err := g.Elapsed(m0, m1); err != nil || d <= 0 || d > time.Second {
			t.Errorf("series %d: Elapsed = %v, %v", series, d, err)
		}
	}
	// A captured graph replays the all-reduce: the result is right after the replay only.
	n := int64(1 << 10)
	call := &collectives.Call{Coll: collectives.AllReduce, DType: collectives.Float, Op: collectives.Sum}
	for l := range g.ranks {
		b, err := g.Alloc(l, n*4)
		if err != nil {
			t.Fatal(err)
		}
		defer g.Free(b)
		g.Write(collectives.View{Buf: b}, bytes.Repeat([]byte{0, 0, 0x80, 0x3f}, int(n))) // 1.0f
		call.Counts = append(call.Counts, collectives.Counts{Send: n, Recv: n, Param: n})
		call.Send, call.Recv = append(call.Send, collectives.View{Buf: b}), append(call.Recv, collectives.View{Buf: b})
	}
	gr, err := g.Capture(func() error { return g.Launch(call) })
	if err != nil {
		t.Fatal(err)
	}
	defer gr.Destroy()
	got := make([]byte, 4)
	g.Read(got, call.Recv[0])
	if !bytes.Equal(got, []byte{0, 0, 0x80, 0x3f}) {
		t.Errorf("capture ran the all-reduce: % x", got)
	}
	for range 2 {
		if err := gr.Launch(); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	g.Read(got, call.Recv[0])
	want := collectives.EncodeFloat(collectives.Float, float64(len(g.ranks)*len(g.ranks)))
	if uint64(binary.LittleEndian.Uint32(got)) != want {
		t.Errorf("after two replays of an in-place all-reduce of ones: % x, want %d squared", got, len(g.ranks))
	}
}

// A rank whose peers never join the collective: Wait times out, aborts, and every later call says why.
func TestGPUTimeoutAborts(t *testing.T) {
	c := openGPU(t, collectives.Config{Timeout: 2 * time.Second})
	g := c.groups[0]
	if len(g.ranks) < 2 {
		t.Skip("needs two GPUs")
	}
	b, err := g.Alloc(0, 4096)
	if err != nil {
		t.Fatal(err)
	}
	// Both ranks run the all-reduce once, so that the library has connected them (it connects lazily, on the
	// host, at the first call, where no timeout can help); then rank 0 alone runs it again.
	if check(t, g, collectives.AllReduce, collectives.Float, collectives.Sum, 4096, false) != 0 {
		t.Fatal("the warm-up all-reduce is wrong")
	}
	r := g.ranks[0]
	g.lastCall = "ncclAllReduce"
	if err := c.lib.AllReduce(b.(*buffer).ptr, b.(*buffer).ptr, 1024, nccl.Float32, nccl.OpSum, r.comm, r.stream); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = g.Wait()
	var te *collectives.TimeoutError
	if !errors.As(err, &te) || te.Rank != 0 || te.Phase != "ncclAllReduce" {
		t.Fatalf("Wait = %v, want a timeout of rank 0 in ncclAllReduce", err)
	}
	if el := time.Since(start); el < 2*time.Second || el > 10*time.Second {
		t.Errorf("timed out after %v", el)
	}
	if err := g.Launch(&collectives.Call{}); !errors.As(err, &te) {
		t.Errorf("Launch after abort = %v, want the timeout again", err)
	}
}
