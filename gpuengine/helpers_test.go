package gpuengine

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/hostengine"
)

// onGPU skips the test without a usable driver, NVRTC and GPU, and locks the test to its OS thread (every
// Group method must run on one thread).
func onGPU(t *testing.T) {
	t.Helper()
	if err := New().(collectives.Prober).Available(); err != nil {
		t.Skip("no CUDA driver: " + err.Error())
	}
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
}

func open(t *testing.T, e collectives.Engine, nranks int, env map[string]string, timeout time.Duration) collectives.Comm {
	t.Helper()
	c, err := e.Open(collectives.Config{NThreads: 1, NGpus: nranks, Env: env, Timeout: timeout, Oversubscribe: true})
	if err != nil {
		t.Fatalf("%s engine, %d ranks, env %v: %v", e.Name(), nranks, env, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// callSpec is one collective call of a test.
type callSpec struct {
	coll    *collectives.Collective
	dt      collectives.DType
	op      collectives.Op
	bytes   int64 // the report's size
	inPlace bool
	shift   int64 // elements every view is shifted by (-u): views off 16-byte alignment
	root    int   // rooted collectives' root
}

func (s callSpec) String() string {
	place := "out"
	if s.inPlace {
		place = "in"
	}
	return fmt.Sprintf("%s/%s/%s/%dB/%s/u%d/root%d", s.coll.Name, s.dt, s.op, s.bytes, place, s.shift, s.root)
}

// run makes call s on every rank of the comm's single group with the given inputs (k.Send elements each)
// and returns the receive buffers and the algorithm that ran. Receive buffers are poisoned first.
func run(t *testing.T, c collectives.Comm, s callSpec, inputs [][]byte) ([][]byte, string) {
	t.Helper()
	g := c.Groups()[0]
	n := c.NRanks()
	call := &collectives.Call{Coll: s.coll, DType: s.dt, Op: s.op, Root: s.root}
	size := int64(s.dt.Size())
	var bufs []collectives.Buffer
	defer func() {
		for _, b := range bufs {
			g.Free(b)
		}
	}()
	for l := range n {
		k := s.coll.Counts(s.bytes, n, l, s.dt)
		call.Counts = append(call.Counts, k)
		skip := s.shift * size
		alloc := func(elems int64) collectives.Buffer {
			b, err := g.Alloc(l, elems*size+skip)
			if err != nil {
				t.Fatal(err)
			}
			bufs = append(bufs, b)
			return b
		}
		if s.inPlace {
			b := alloc(max(k.Send, k.Recv))
			call.Send = append(call.Send, collectives.View{Buf: b, Off: skip + k.SendInPlace*size})
			call.Recv = append(call.Recv, collectives.View{Buf: b, Off: skip + k.RecvInPlace*size})
			must(t, g.Write(collectives.View{Buf: b}, bytes.Repeat([]byte{0xa5}, int(b.Len()))))
		} else {
			call.Send = append(call.Send, collectives.View{Buf: alloc(k.Send), Off: skip})
			call.Recv = append(call.Recv, collectives.View{Buf: alloc(k.Recv), Off: skip})
			must(t, g.Write(call.Recv[l], bytes.Repeat([]byte{0xa5}, int(k.Recv*size))))
		}
		must(t, g.Write(call.Send[l], inputs[l]))
	}
	must(t, g.Launch(call))
	must(t, g.Wait())
	return readOutputs(t, g, call), g.Algorithm(call)
}

// readOutputs reads every rank's receive view of call.
func readOutputs(t *testing.T, g collectives.Group, call *collectives.Call) [][]byte {
	t.Helper()
	out := make([][]byte, len(call.Recv))
	for l := range out {
		out[l] = make([]byte, call.Counts[l].Recv*int64(call.DType.Size()))
		must(t, g.Read(out[l], call.Recv[l]))
	}
	return out
}

// captureCall captures times launches of call in a graph; the caller destroys it.
func captureCall(t *testing.T, g collectives.Group, call *collectives.Call, times int) collectives.Graph {
	t.Helper()
	graph, err := g.(collectives.Grapher).Capture(func() error {
		for range times {
			if err := g.Launch(call); err != nil {
				return err
			}
		}
		return nil
	})
	must(t, err)
	return graph
}

// fillCall writes s's exact inputs for seed into call's send views and poisons its receive views.
func fillCall(t *testing.T, g collectives.Group, s callSpec, call *collectives.Call, seed uint64) {
	t.Helper()
	for r, in := range exactInputs(s, len(call.Send), seed) {
		must(t, g.Write(call.Send[r], in))
		must(t, g.Write(call.Recv[r], bytes.Repeat([]byte{0xa5}, int(call.Counts[r].Recv*int64(s.dt.Size())))))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// exactInputs are collectives.Input's deterministic inputs (exact sums in any order) for a fresh seed.
func exactInputs(s callSpec, n int, seed uint64) [][]byte {
	in := make([][]byte, n)
	for r := range n {
		in[r] = s.coll.Input(s.dt, s.op, r, n, s.coll.Counts(s.bytes, n, r, s.dt), seed)
	}
	return in
}

// roughInputs are random finite values whose sums round, so that only the same reduction order gives the
// same bits; integers are random bits.
func roughInputs(s callSpec, n int, rng *rand.Rand) [][]byte {
	in := make([][]byte, n)
	for r := range n {
		k := s.coll.Counts(s.bytes, n, r, s.dt)
		b := make([]byte, k.Send*int64(s.dt.Size()))
		for i := range k.Send {
			var bits uint64
			if s.dt.IsFloat() {
				v := (rng.Float64()*2 - 1) * math.Ldexp(1, rng.IntN(8)-4)
				bits = collectives.EncodeFloat(s.dt, v)
			} else {
				bits = rng.Uint64()
			}
			for j := range s.dt.Size() {
				b[i*int64(s.dt.Size())+int64(j)] = byte(bits >> (8 * j))
			}
		}
		in[r] = b
	}
	return in
}

// check validates every rank's output against collectives.Expect: the elements the call defines there
// (collectives.Checked), which may be fewer than the receive buffer holds (alltoallv, the non-roots of reduce
// and gather).
func check(t *testing.T, s callSpec, n int, seed uint64, algo string, out [][]byte) {
	t.Helper()
	tol := s.coll.Tolerance(s.dt, s.op, n, algo == collectives.LowPrecision)
	var e *collectives.Expectation
	for r := range n {
		if e == nil || !s.coll.SameOnEveryRank() {
			k := s.coll.Counts(s.bytes, n, r, s.dt)
			e = s.coll.Expect(s.dt, s.op, r, s.root, n, k, seed, tol)
		}
		wrong, rel := e.Check(out[r][:len(e.Want())])
		if wrong != 0 {
			t.Errorf("%v on %d ranks (%s, seed %d): rank %d has %d wrong elements (max rel err %g)", s, n, algo, seed, r, wrong, rel)
		}
	}
}

// sameAsHost runs the call on the host engine with the same inputs and environment and demands identical bytes.
func sameAsHost(t *testing.T, host collectives.Comm, s callSpec, inputs, got [][]byte, algo string) {
	t.Helper()
	want, hostAlgo := run(t, host, s, inputs)
	if hostAlgo != algo {
		t.Fatalf("%v: gpu ran %s, host %s", s, algo, hostAlgo)
	}
	for r := range got {
		if !bytes.Equal(got[r], want[r]) {
			i := firstDiff(got[r], want[r])
			t.Errorf("%v on %d ranks (%s): rank %d differs from the host engine from byte %d of %d (gpu %x, host %x)",
				s, len(got), algo, r, i, len(got[r]), got[r][i:min(i+8, len(got[r]))], want[r][i:min(i+8, len(want[r]))])
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// newHost opens the host engine with the same ranks and environment.
func newHost(t *testing.T, n int, env map[string]string) collectives.Comm {
	return open(t, hostengine.New(), n, env, 0)
}
