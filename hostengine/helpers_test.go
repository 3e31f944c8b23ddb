package hostengine

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// layouts maps a rank count to the -t x -g split the tests use for it, so that several groups take part.
var layouts = map[int][2]int{1: {1, 1}, 2: {2, 1}, 3: {3, 1}, 5: {1, 5}, 8: {2, 4}, 16: {4, 4}}

// openComm opens a communicator of nranks ranks, split into groups as layouts says, with env overrides; chunk >
// 0 overrides the ring chunk size.
func openComm(t testing.TB, nranks int, env map[string]string, timeout time.Duration, chunk int64) *comm {
	t.Helper()
	tg := layouts[nranks]
	return openGroups(t, tg[0], tg[1], env, timeout, chunk)
}

func openGroups(t testing.TB, threads, gpus int, env map[string]string, timeout time.Duration, chunk int64) *comm {
	t.Helper()
	c, err := New().Open(collectives.Config{NThreads: threads, NGpus: gpus, Env: env, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	hc := c.(*comm)
	if chunk > 0 {
		hc.chunkBytes = chunk
	}
	return hc
}

// testCase is one collective call, run the way the harness runs it.
type testCase struct {
	coll    *collectives.Collective
	dt      collectives.DType
	op      collectives.Op
	root    int   // rooted collectives only
	bytes   int64 // the requested size (the report's size column before rounding)
	inPlace bool
	shift   int64 // elements the views are shifted by (-u)
	repeat  int   // launches before the wait, on the same buffers (nccl-tests' timing loop); 0 means 1
	// input, when not nil, replaces collectives.Input as rank's send data (the outcome's wrong counts then
	// compare with the suite's inputs and mean nothing).
	input func(rank int, k collectives.Counts) []byte
}

func (tc testCase) String() string {
	place := "out-of-place"
	if tc.inPlace {
		place = "in-place"
	}
	return fmt.Sprintf("%s %s %s root %d %dB %s shift %d", tc.coll.Name, tc.dt, tc.op, tc.root, tc.bytes, place, tc.shift)
}

// guardElems of poison follow every view, so that writes past its end are caught.
const guardElems = 16

type rankBufs struct {
	rank       int
	k          collectives.Counts
	send, recv collectives.View
	bufs       []collectives.Buffer
	before     [][]byte // the buffers' contents before the call
}

// outcome is what a call did: the algorithm and, per rank, the wrong elements, the largest relative error and
// the output.
type outcome struct {
	algo   string
	wrong  []int64
	relErr []float64
	out    [][]byte
	err    error
}

// runCase launches tc on every group of c (one goroutine per group, as harness threads), waits, and checks every
// rank's output against collectives.Expect; outputs are poisoned with random bytes first, inputs are fresh for
// the seed, and bytes outside the output view must not change.
func runCase(t testing.TB, c *comm, tc testCase, seed uint64) outcome {
	t.Helper()
	return runCaseOn(t, []*comm{c}, tc, seed)
}

// runCaseOn is runCase on the communicators of every process of a run (shm_test.go), in process order.
func runCaseOn(t testing.TB, comms []*comm, tc testCase, seed uint64) outcome {
	t.Helper()
	n := comms[0].NRanks()
	es := int64(tc.dt.Size())
	rng := rand.New(rand.NewPCG(seed, 1))
	var groups []collectives.Group
	groupOf := map[int]collectives.Group{}
	for _, c := range comms {
		for _, g := range c.Groups() {
			groups = append(groups, g)
			for _, r := range g.Ranks() {
				groupOf[r] = g
			}
		}
	}
	calls := make([]*collectives.Call, len(groups))
	var ranks []*rankBufs
	for gi, g := range groups {
		call := &collectives.Call{Coll: tc.coll, DType: tc.dt, Op: tc.op, Root: tc.root}
		for l, r := range g.Ranks() {
			rb := &rankBufs{rank: r, k: tc.coll.Counts(tc.bytes, n, r, tc.dt)}
			alloc := func(elems int64) collectives.Buffer {
				b, err := g.Alloc(l, (tc.shift+elems+guardElems)*es)
				if err != nil {
					t.Fatal(err)
				}
				poison := make([]byte, b.Len())
				fill(rng, poison)
				if err := g.Write(collectives.View{Buf: b}, poison); err != nil {
					t.Fatal(err)
				}
				rb.bufs = append(rb.bufs, b)
				return b
			}
			if tc.inPlace {
				b := alloc(max(rb.k.Send, rb.k.Recv))
				rb.send = collectives.View{Buf: b, Off: (tc.shift + rb.k.SendInPlace) * es}
				rb.recv = collectives.View{Buf: b, Off: (tc.shift + rb.k.RecvInPlace) * es}
			} else {
				rb.send = collectives.View{Buf: alloc(rb.k.Send), Off: tc.shift * es}
				rb.recv = collectives.View{Buf: alloc(rb.k.Recv), Off: tc.shift * es}
			}
			in := tc.coll.Input(tc.dt, tc.op, r, n, rb.k, seed)
			if tc.input != nil {
				in = tc.input(r, rb.k)
			}
			if err := g.Write(rb.send, in); err != nil {
				t.Fatal(err)
			}
			for _, b := range rb.bufs {
				rb.before = append(rb.before, readAll(t, g, b))
			}
			call.Counts = append(call.Counts, rb.k)
			call.Send = append(call.Send, rb.send)
			call.Recv = append(call.Recv, rb.recv)
			ranks = append(ranks, rb)
		}
		calls[gi] = call
	}
	out := outcome{algo: groups[0].Algorithm(calls[0]), wrong: make([]int64, n), relErr: make([]float64, n), out: make([][]byte, n)}
	errs := make([]error, len(groups))
	var wg sync.WaitGroup
	for gi, g := range groups {
		wg.Go(func() {
			for range max(tc.repeat, 1) {
				if errs[gi] = g.Launch(calls[gi]); errs[gi] != nil {
					return
				}
			}
			errs[gi] = g.Wait()
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			out.err = err
			return out
		}
	}
	tol := tc.coll.Tolerance(tc.dt, tc.op, n, out.algo == collectives.LowPrecision)
	for _, rb := range ranks {
		g := groupOf[rb.rank]
		exp := tc.coll.Expect(tc.dt, tc.op, rb.rank, tc.root, n, rb.k, seed, tol)
		got := make([]byte, len(exp.Want())) // where the call defines the output: elsewhere nothing may change
		if err := g.Read(got, rb.recv); err != nil {
			t.Fatal(err)
		}
		out.wrong[rb.rank], out.relErr[rb.rank] = exp.Check(got)
		out.out[rb.rank] = got
		for i, b := range rb.bufs {
			after := readAll(t, g, b)
			lo, hi := int64(len(after)), int64(len(after))
			if b == rb.recv.Buf {
				lo, hi = rb.recv.Off, rb.recv.Off+int64(len(got))
			}
			if !bytes.Equal(after[:lo], rb.before[i][:lo]) || !bytes.Equal(after[hi:], rb.before[i][hi:]) {
				t.Errorf("%v seed %#x: rank %d wrote outside its output view (buffer %d)", tc, seed, rb.rank, i)
			}
		}
	}
	return out
}

func readAll(t testing.TB, g collectives.Group, b collectives.Buffer) []byte {
	out := make([]byte, b.Len())
	if err := g.Read(out, collectives.View{Buf: b}); err != nil {
		t.Fatal(err)
	}
	return out
}

func fill(rng *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
}

// expectCorrect runs tc and fails unless it ran algo and every element is right.
func expectCorrect(t *testing.T, c *comm, tc testCase, algo string) outcome {
	t.Helper()
	seed := rand.Uint64()
	out := runCase(t, c, tc, seed)
	if out.err != nil {
		t.Fatalf("%v seed %#x: %v", tc, seed, out.err)
	}
	if out.algo != algo {
		t.Errorf("%v: algorithm %q, want %q", tc, out.algo, algo)
	}
	for r, w := range out.wrong {
		if w != 0 {
			t.Errorf("%v seed %#x (%s, %d ranks): rank %d has %d wrong elements (max rel err %g)", tc, seed, out.algo, c.NRanks(), r, w, out.relErr[r])
		}
	}
	return out
}
