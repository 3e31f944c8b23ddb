package gpuengine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

var (
	allColls  = []*collectives.Collective{collectives.AllReduce, collectives.AllGather, collectives.AllToAll, collectives.ReduceScatter} // the RCCLX policy's
	ddaTypes  = []collectives.DType{collectives.Float, collectives.Half, collectives.BFloat16}
	lpTypes   = []collectives.DType{collectives.Float, collectives.BFloat16}
	sumOnly   = []collectives.Op{collectives.Sum}
	lpEnv     = map[string]string{"RCCL_LOW_PRECISION_ENABLE": "1", "RCCLX_TESTS_LP_MIN_BYTES": "0"}
	scaledEnv = map[string]string{"RCCL_LOW_PRECISION_ENABLE": "1", "RCCLX_TESTS_LP_MIN_BYTES": "0",
		"RCCLX_TESTS_LP_MODE": "scaled"}
	ddaEnv  = map[string]string{"RCCL_DDA_ENABLE": "1"}
	treeEnv = map[string]string{"RCCL_DDA_ENABLE": "1", "RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES": "0"}
	// The copy-engine transport for every size, or never.
	ceEnv    = map[string]string{"RCCLX_TESTS_GPU_CE_BYTES": "0"}
	ceOffEnv = map[string]string{"RCCLX_TESTS_GPU_CE_BYTES": "off"}
	// Chunks of 4 KiB: the largest sizes' reduce_scatter, in-place alltoall and all_reduce's gather go in
	// ceMaxChunks chunks.
	ceChunkEnv = map[string]string{"RCCLX_TESTS_GPU_CE_BYTES": "0", "RCCLX_TESTS_GPU_CE_CHUNK": "4K"}
)

// algoCase is one forced algorithm family: the environment that selects it and what it supports.
type algoCase struct {
	name   string
	env    map[string]string
	dtypes []collectives.DType
	ops    []collectives.Op
	colls  []*collectives.Collective // nil: all
}

func algoCases() []algoCase {
	return []algoCase{
		{"ring", nil, collectives.AllDTypes(), collectives.AllOps(), nil},
		{"ring-ce", ceEnv, collectives.AllDTypes(), collectives.AllOps(), nil},
		{"ring-ce-chunks", ceChunkEnv, []collectives.DType{collectives.Float, collectives.BFloat16}, sumOnly,
			[]*collectives.Collective{collectives.AllReduce, collectives.ReduceScatter, collectives.AllToAll}},
		{"dda", ddaEnv, ddaTypes, sumOnly, nil},
		{"dda-tree", treeEnv, ddaTypes, sumOnly, []*collectives.Collective{collectives.AllReduce}},
		{"lp-rcclx", lpEnv, lpTypes, sumOnly, nil},
		// Mode scaled's kernels by LP block: 128 (the default) and 512, 8 and 32 lanes per block combining
		// maxima; 96, groups of 16 but a 32-lane group per block to quantize; 40, no groups (a 32-lane group
		// per block to quantize, element by element otherwise).
		{"lp-scaled", scaledEnv, lpTypes, sumOnly, nil},
		{"lp-scaled-512", merge(scaledEnv, lpBlock("512")), lpTypes, sumOnly, nil},
		{"lp-scaled-96", merge(scaledEnv, lpBlock("96")), lpTypes, sumOnly, nil},
		{"lp-scaled-40", merge(scaledEnv, lpBlock("40")), lpTypes, sumOnly, nil},
	}
}

// sizes are the report sizes a collective is tested at: empty, one element, odd counts (DDA flat: LL, and at
// 2 ranks LL128 past 128 KiB), one beyond a ring message, and (DDA tree, count % n == 0) odd slices below and
// above the LL kernels' limit.
func sizes(coll *collectives.Collective, dt collectives.DType, n int) []int64 {
	e := int64(dt.Size())
	if coll == collectives.AllReduce {
		return []int64{0, e, 1001 * e, 96<<10 + 3*e, 160<<10 + 3*e, 1<<20 + 5*e, int64(n) * 1001 * e,
			int64(n) * (64<<10 + 3) * e}
	}
	return []int64{0, int64(n) * 16, int64(n) * 16 * 37, int64(n) * (300<<10 + 48)}
}

// Every algorithm x collective x dtype x op it supports, in and out of place, on 1, 2, 3 and 8 ranks, and on
// one rank per GPU where there are more than three (ranks share the GPUs where there are fewer): exact inputs
// must validate, and random inputs must give the host engine's bytes.
func TestGPUAlgorithmsMatchHost(t *testing.T) {
	onGPU(t)
	compileAll(t)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	counts := []int{1, 2, 3, 8}
	if ndev, err := gpurt.DeviceCount(); err == nil && ndev > 3 && !slices.Contains(counts, ndev) {
		counts = append(counts, ndev)
	}
	for _, n := range counts {
		for _, ac := range algoCases() {
			// A subtest per rank count and algorithm: -test.run selects one, -test.v times each.
			ok := t.Run(fmt.Sprintf("%dranks/%s", n, ac.name), func(t *testing.T) { matchHost(t, n, ac, seed, rng) })
			if !ok {
				return // one failing case says enough; the rest would repeat it
			}
		}
	}
}

func matchHost(t *testing.T, n int, ac algoCase, seed uint64, rng *rand.Rand) {
	onGPU(t) // a subtest runs on a goroutine of its own, and CUDA contexts are per OS thread
	gpu, host := open(t, New(), n, ac.env, 0), newHost(t, n, ac.env)
	colls := ac.colls
	if colls == nil {
		colls = allColls
	}
	for _, coll := range colls {
		for _, dt := range ac.dtypes {
			for _, op := range opsFor(coll, ac.ops, n, dt) {
				for _, bytes := range sizes(coll, dt, n) {
					for _, inPlace := range []bool{false, true} {
						s := callSpec{coll, dt, op, bytes, inPlace, 0, 0}
						in := exactInputs(s, n, seed)
						out, algo := run(t, gpu, s, in)
						check(t, s, n, seed, algo, out)
						sameAsHost(t, host, s, in, out, algo)
						if coll.Reduces && dt.IsFloat() && !inPlace {
							rough := roughInputs(s, n, rng)
							out, _ = run(t, gpu, s, rough)
							sameAsHost(t, host, s, rough, out, algo)
						}
						if t.Failed() {
							t.FailNow() // one failing call says enough; the rest would repeat it
						}
					}
				}
			}
		}
	}
}

// opsFor trims the matrix on 8 ranks (every op is covered on fewer) and for non-reducing collectives.
func opsFor(coll *collectives.Collective, ops []collectives.Op, n int, dt collectives.DType) []collectives.Op {
	if !coll.Reduces {
		return ops[:1]
	}
	if n == 8 && len(ops) > 1 && dt != collectives.Float && dt != collectives.Half {
		return ops[:1]
	}
	return ops
}

// 64 MiB float sums through every algorithm (ring with and without the copy engines), several rounds where the
// algorithm has rounds (4 MiB halves); LP also in bfloat16, at 2 ranks in enough chunks for every LP kernel to
// split its warps by stage.
func TestGPULarge(t *testing.T) {
	onGPU(t)
	compileAll(t)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	// 16M: the copy engines take 64 MiB at 8 ranks too (by default from 112 MiB there).
	small := map[string]string{"RCCL_DDA_SENDBUF_BYTES": "4M", "RCCLX_TESTS_GPU_CE_BYTES": "16M"}
	tree := map[string]string{"RCCL_DDA_ENABLE": "1", "RCCL_DDA_ALL_REDUCE_TREE_MAX_BYTES": "64M",
		"RCCL_DDA_SENDBUF_BYTES": "64M"}
	for _, n := range []int{2, 8} {
		for _, env := range []map[string]string{small, merge(small, ceOffEnv), tree, merge(lpEnv, small), merge(scaledEnv, small)} {
			gpu, host := open(t, New(), n, env, 0), newHost(t, n, env)
			types := []collectives.DType{collectives.Float}
			if env["RCCL_LOW_PRECISION_ENABLE"] != "" { // bfloat16's LP loops differ from float's
				types = lpTypes
			}
			for _, coll := range allColls {
				for _, dt := range types {
					s := callSpec{coll, dt, collectives.Sum, 64 << 20, n == 8, 0, 0}
					in := exactInputs(s, n, seed)
					out, algo := run(t, gpu, s, in)
					check(t, s, n, seed, algo, out)
					sameAsHost(t, host, s, in, out, algo)
				}
			}
		}
	}
}

func lpBlock(elems string) map[string]string { return map[string]string{"RCCLX_TESTS_LP_BLOCK": elems} }

func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range []map[string]string{a, b} {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// A rank that never launches: its peers' waits give up at -T and Wait names a waiting rank and its phase.
func TestGPUTimeout(t *testing.T) {
	onGPU(t)
	allReduce := callSpec{collectives.AllReduce, collectives.Float, collectives.Sum, 4096, false, 0, 0}
	// LP alltoall in four chunks (a 1M buffer makes chunks of 512K elements): on sm_90 the bulk kernel has the
	// next step's loads in flight when its first barrier gives up.
	lpChunks := merge(lpEnv, map[string]string{"RCCL_DDA_SENDBUF_BYTES": "1M"})
	allToAll := callSpec{collectives.AllToAll, collectives.Float, collectives.Sum, 16 << 20, false, 0, 0}
	for _, x := range []struct {
		env map[string]string
		s   callSpec
	}{{nil, allReduce}, {ddaEnv, allReduce}, {lpChunks, allToAll}} {
		env, s := x.env, x.s
		c := open(t, New(), 2, merge(env, map[string]string{collectives.EnvSkipRank: "1"}), time.Second)
		g := c.Groups()[0]
		call := buildCall(t, g, s, 2)
		// Compiled first: a cold kernel cache takes seconds in the first Launch, which is not the wait timed.
		must(t, c.(collectives.Preparer).Prepare(s.coll, []collectives.DType{s.dt}, []collectives.Op{s.op}, nil))
		start := time.Now()
		must(t, g.Launch(call))
		err := g.Wait()
		var te *collectives.TimeoutError
		if !errors.As(err, &te) || te.Rank != 0 || time.Since(start) > 2*time.Second {
			t.Fatalf("env %v: Wait returned %v after %v; want a TimeoutError for rank 0 within 2 s", env, err, time.Since(start))
		}
		t.Logf("%v", te)
		if err := g.Launch(call); err == nil {
			t.Error("a call after the timeout succeeded")
		}
	}
}

// buildCall allocates zeroed buffers for s on every rank of g.
func buildCall(t *testing.T, g collectives.Group, s callSpec, n int) *collectives.Call {
	call := &collectives.Call{Coll: s.coll, DType: s.dt, Op: s.op}
	for l := range n {
		k := s.coll.Counts(s.bytes, n, l, s.dt)
		call.Counts = append(call.Counts, k)
		for _, views := range []*[]collectives.View{&call.Send, &call.Recv} {
			b, err := g.Alloc(l, max(k.Send, k.Recv)*int64(s.dt.Size()))
			must(t, err)
			*views = append(*views, collectives.View{Buf: b})
		}
	}
	return call
}

// RCCLX_TESTS_CORRUPT_RANK: exactly one wrong element on that rank.
func TestGPUCorruptHook(t *testing.T) {
	onGPU(t)
	for _, env := range []map[string]string{nil, ddaEnv, ceEnv} {
		c := open(t, New(), 2, merge(env, map[string]string{collectives.EnvCorruptRank: "1"}), 0)
		s := callSpec{collectives.AllReduce, collectives.Float, collectives.Sum, 4096, false, 0, 0}
		seed := rand.Uint64()
		out, algo := run(t, c, s, exactInputs(s, 2, seed))
		for r := range 2 {
			k := s.coll.Counts(s.bytes, 2, r, s.dt)
			wrong, _ := s.coll.Expect(s.dt, s.op, r, -1, 2, k, seed, collectives.Tolerance{}).Check(out[r])
			if want := int64(r); wrong != want {
				t.Errorf("%s: rank %d has %d wrong elements, want %d", algo, r, wrong, want)
			}
		}
	}
}

// Graph capture and replay (-G): the counters live on the device, so replays and later plain launches stay
// in step; events time the replays.
func TestGPUGraphReplayAndEvents(t *testing.T) {
	onGPU(t)
	for _, env := range []map[string]string{nil, ddaEnv, lpEnv} {
		c := open(t, New(), 2, env, 10*time.Second)
		g := c.Groups()[0]
		s := callSpec{collectives.AllReduce, collectives.Float, collectives.Sum, 256 << 10, false, 0, 0}
		seed := rand.Uint64()
		call := buildCall(t, g, s, 2)
		for r, in := range exactInputs(s, 2, seed) {
			must(t, g.Write(call.Send[r], in))
		}
		graph := captureCall(t, g, call, 3)
		timer := g.(collectives.EventTimer)
		from, err := timer.Mark()
		must(t, err)
		for range 5 {
			must(t, graph.Launch())
		}
		to, err := timer.Mark()
		must(t, err)
		must(t, g.Launch(call))
		must(t, g.Wait())
		d, err := timer.Elapsed(from, to)
		must(t, err)
		if slices.Min(d) <= 0 {
			t.Errorf("elapsed %v", d)
		}
		must(t, graph.Destroy())
		check(t, s, 2, seed, g.Algorithm(call), readOutputs(t, g, call))
		t.Logf("%s: 15 calls in 5 replays took %v", g.Algorithm(call), d)
	}
}

// compileAll compiles every module the tests use, in parallel, before the first launch.
func compileAll(t *testing.T) {
	t.Helper()
	must(t, gpurt.Load())
	caps, err := gpurt.Device(0).Caps()
	must(t, err)
	keys := modulesFor(collectives.AllReduce, collectives.AllDTypes(), collectives.AllOps(), []target{targetOf(caps)})
	start := time.Now()
	must(t, precompile(keys, func(line string) { t.Log(line) }))
	t.Logf("compiled %d modules in %v", len(keys), time.Since(start))
}

// On GPUs that convert E4M3 in hardware (the LP kernels' fast path), the hardware codes equal
// kernels/convert.cuh's (hence package numeric's) for every non-NaN float32, and decoding agrees on every code.
func TestGPUHardwareE4M3MatchesConvert(t *testing.T) {
	if enc, dec := hardwareMismatches(t, 89, "rx_e4m3_check"); enc != 0 || dec != 0 {
		t.Errorf("hardware E4M3: %d float32 patterns encode differently, %d codes decode differently", enc, dec)
	}
}

// On GPUs that round to bfloat16 in hardware (the LP kernels' stores), the results equal kernels/convert.cuh's
// for every float32, NaNs included.
func TestGPUHardwareBF16MatchesConvert(t *testing.T) {
	if n, _ := hardwareMismatches(t, 80, "rx_bf16_check"); n != 0 {
		t.Errorf("hardware bfloat16: %d float32 patterns round differently", n)
	}
}

// hardwareMismatches runs a check kernel of kernels/util.cu over every float32 on one GPU of at least sm_<arch>
// (skipping on others) and returns the two counts it leaves.
func hardwareMismatches(t *testing.T, arch int, kernel string) (uint64, uint64) {
	onGPU(t)
	c := open(t, New(), 1, nil, 0).(*comm)
	r := c.ranks[0]
	major, minor, err := r.dev.ComputeCapability()
	must(t, err)
	if r.caps.Runtime != gpurt.CUDA || major*10+minor < arch {
		t.Skipf("%s has no conversion instructions for %s (CUDA sm_%d)", r.caps.Arch, kernel, arch)
	}
	must(t, r.ctx.SetCurrent())
	f, err := c.modules.function(r, collectives.Float, collectives.Sum, kernel, 0)
	must(t, err)
	bad, err := gpurt.MemAlloc(16)
	must(t, err)
	defer gpurt.MemFree(bad)
	must(t, gpurt.MemsetD8(bad, 0, 16))
	must(t, gpurt.Launch(f, [3]uint32{1024, 1, 1}, [3]uint32{512, 1, 1}, 0, r.stream, bad))
	must(t, r.stream.Synchronize())
	out := make([]byte, 16)
	must(t, gpurt.MemcpyDtoH(out, bad))
	return binary.LittleEndian.Uint64(out), binary.LittleEndian.Uint64(out[8:])
}

// Views off 16-byte alignment (-u 1): the kernels fall back to element-wise loops; DDA is not chosen.
func TestGPUUnaligned(t *testing.T) {
	onGPU(t)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	for _, env := range []map[string]string{nil, ddaEnv, lpEnv, scaledEnv} {
		gpu, host := open(t, New(), 2, env, 0), newHost(t, 2, env)
		for _, coll := range allColls {
			for _, dt := range []collectives.DType{collectives.Float, collectives.BFloat16} {
				for _, inPlace := range []bool{false, true} {
					s := callSpec{coll, dt, collectives.Sum, 2*(300<<10) + 32, inPlace, 1, 0}
					in := exactInputs(s, 2, seed)
					out, algo := run(t, gpu, s, in)
					check(t, s, 2, seed, algo, out)
					sameAsHost(t, host, s, in, out, algo)
				}
			}
		}
	}
}

// Two harness threads, one rank each (sharing the GPU on a one-GPU machine), driving their groups at the same
// time from their own OS threads. As in the harness, both write their inputs before either launches: a write
// waits for the whole context, which on a shared GPU holds the other rank's kernel waiting for this one.
func TestGPUTwoThreads(t *testing.T) {
	onGPU(t)
	for _, env := range []map[string]string{nil, ddaEnv, lpEnv} {
		c, err := New().Open(collectives.Config{NThreads: 2, NGpus: 1, Env: env, Oversubscribe: true, Timeout: 20 * time.Second})
		must(t, err)
		s := callSpec{collectives.AllReduce, collectives.Float, collectives.Sum, 1 << 20, false, 0, 0}
		seed := rand.Uint64()
		in := exactInputs(s, 2, seed)
		out := make([][]byte, 2)
		errs := make([]error, 2)
		var wg, written sync.WaitGroup
		written.Add(2)
		for th, g := range c.Groups() {
			wg.Go(func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				out[th], errs[th] = runGroup(g, s, 2, in[th], func() { written.Done(); written.Wait() })
			})
		}
		wg.Wait()
		must(t, errors.Join(errs...))
		check(t, s, 2, seed, c.Groups()[0].Algorithm(buildCallCounts(s, 2)), out)
		must(t, c.Close())
	}
}

// runGroup makes call s on a group of one rank (global rank Ranks()[0]) and returns its output; written returns
// when every group may launch.
func runGroup(g collectives.Group, s callSpec, n int, input []byte, written func()) ([]byte, error) {
	r := g.Ranks()[0]
	k := s.coll.Counts(s.bytes, n, r, s.dt)
	size := int64(s.dt.Size())
	send, err := g.Alloc(0, k.Send*size)
	if err != nil {
		return nil, err
	}
	defer g.Free(send)
	recv, err := g.Alloc(0, k.Recv*size)
	if err != nil {
		return nil, err
	}
	defer g.Free(recv)
	call := &collectives.Call{Coll: s.coll, DType: s.dt, Op: s.op, Counts: []collectives.Counts{k},
		Send: []collectives.View{{Buf: send}}, Recv: []collectives.View{{Buf: recv}}}
	out := make([]byte, k.Recv*size)
	werr := g.Write(call.Send[0], input)
	written()
	if werr != nil {
		return nil, werr
	}
	err = errors.Join(g.Launch(call), g.Wait(), g.Read(out, call.Recv[0]))
	return out, err
}

// buildCallCounts is a call with counts only (what Algorithm looks at).
func buildCallCounts(s callSpec, n int) *collectives.Call {
	call := &collectives.Call{Coll: s.coll, DType: s.dt, Op: s.op}
	for r := range n {
		call.Counts = append(call.Counts, s.coll.Counts(s.bytes, n, r, s.dt))
		call.Send = append(call.Send, collectives.View{})
		call.Recv = append(call.Recv, collectives.View{})
	}
	return call
}

// Back-to-back calls of every kernel family (LL, DDA, LP in several chunks, ring), launched with no wait in
// between and then replayed in a graph: each launch takes its data half and counters from the one before,
// whatever kernel that was, so every output must validate as when each call waits for the last.
func TestGPUBackToBack(t *testing.T) {
	onGPU(t)
	const n = 2
	seed := rand.Uint64()
	small := map[string]string{"RCCL_DDA_SENDBUF_BYTES": "4M", "RCCLX_TESTS_GPU_CE_BYTES": "off"}
	for _, env := range []map[string]string{merge(ddaEnv, small), merge(lpEnv, small), small} {
		c := open(t, New(), n, env, 10*time.Second)
		g := c.Groups()[0]
		var specs []callSpec
		var calls []*collectives.Call
		for _, coll := range allColls {
			for _, size := range append(sizes(coll, collectives.Float, n)[1:], int64(n)*(16<<20)) {
				s := callSpec{coll, collectives.Float, collectives.Sum, size, false, 0, 0}
				specs, calls = append(specs, s), append(calls, buildCall(t, g, s, n))
			}
		}
		fill := func() {
			for i, s := range specs {
				fillCall(t, g, s, calls[i], seed)
			}
		}
		burst := func() error {
			for range 3 {
				for _, call := range calls {
					if err := g.Launch(call); err != nil {
						return err
					}
				}
			}
			return nil
		}
		verify := func() {
			t.Helper()
			for i, s := range specs {
				check(t, s, n, seed, g.Algorithm(calls[i]), readOutputs(t, g, calls[i]))
			}
		}
		fill()
		must(t, burst())
		must(t, g.Wait())
		verify()
		graph, err := g.(collectives.Grapher).Capture(burst)
		must(t, err)
		fill()
		must(t, graph.Launch())
		must(t, g.Wait())
		must(t, graph.Destroy())
		verify()
	}
}
