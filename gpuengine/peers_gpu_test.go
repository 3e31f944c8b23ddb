package gpuengine

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// peerCases are the collectives outside the RCCLX policy (kernels/direct.cu, hypercube.cu) and the rank counts
// they are tested at; 3 and 8 ranks share the GPUs.
var peerCases = []struct {
	coll  *collectives.Collective
	ranks []int
}{
	{collectives.Broadcast, []int{1, 2, 3, 8}},
	{collectives.Reduce, []int{1, 2, 3, 8}},
	{collectives.Gather, []int{1, 2, 3, 8}},
	{collectives.Scatter, []int{1, 2, 3, 8}},
	{collectives.SendRecv, []int{1, 2, 3, 8}},
	{collectives.AllToAllV, []int{1, 2, 3, 8}},
	{collectives.HyperCube, []int{1, 2, 4, 8}},
}

// peerRoots are the first and last rank, and every rank on 3.
func peerRoots(c *collectives.Collective, n int) []int {
	switch {
	case !c.Rooted:
		return []int{0}
	case n <= 3:
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	return []int{0, n - 1}
}

// Every point-to-point collective, type and root, in and out of place, at sizes of one element to several
// rounds (the smallest data half, 8 MiB, holds 1 MiB slots at 8 ranks; float sums also cross whole halves): exact
// inputs must validate, random inputs must give the host engine's bytes (reduce: all ops, in the host's order).
// Once on the kernels, once on the copy-engine transport at every size, in chunks of 4 KiB.
func TestGPUPeerCollectivesMatchHost(t *testing.T) {
	onGPU(t)
	compileAll(t)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	trace := os.Getenv("RCCLX_TESTS_TRACE") != ""
	for _, pc := range peerCases {
		for _, n := range pc.ranks {
			for _, tr := range []struct {
				name string
				env  map[string]string
			}{
				{"kernels", map[string]string{"RCCL_DDA_SENDBUF_BYTES": "1M", "RCCLX_TESTS_GPU_CE_BYTES": "off"}},
				{"copy-engines", map[string]string{"RCCL_DDA_SENDBUF_BYTES": "1M", "RCCLX_TESTS_GPU_CE_BYTES": "0",
					"RCCLX_TESTS_GPU_CE_CHUNK": "4K"}},
			} {
				env := tr.env
				t.Run(fmt.Sprintf("%s/%d/%s", pc.coll.Name, n, tr.name), func(t *testing.T) {
					// A subtest runs on a goroutine of its own, and CUDA contexts are per OS thread.
					onGPU(t)
					gpu, host := open(t, New(), n, env, 20*time.Second), newHost(t, n, env) // a hang ends as a timeout naming its phase
					for _, dt := range []collectives.DType{collectives.Float, collectives.Half, collectives.Int8, collectives.Double} {
						ops := []collectives.Op{collectives.Sum}
						if pc.coll.Reduces && (dt == collectives.Float || dt == collectives.Int8) {
							ops = collectives.AllOps()
						}
						e := int64(dt.Size())
						sizes := []int64{0, e, int64(n) * 16 * 37}
						if dt == collectives.Float || dt == collectives.Int8 {
							sizes = append(sizes, 2<<20+int64(n)*48) // several rounds at 8 ranks (1 MiB slots)
						}
						if dt == collectives.Float && n <= 3 {
							sizes = append(sizes, 17<<20+int64(n)*48) // several rounds of a whole half
						}
						for _, op := range ops {
							for _, bytes := range sizes {
								for _, root := range peerRoots(pc.coll, n) {
									for _, inPlace := range []bool{false, true} {
										if t.Failed() {
											t.FailNow()
										}
										s := callSpec{pc.coll, dt, op, bytes, inPlace, 0, root}
										if trace {
											t.Log(s)
										}
										in := exactInputs(s, n, seed)
										out, algo := run(t, gpu, s, in)
										if !inPlace || pc.coll.InPlaceChecked() {
											check(t, s, n, seed, algo, out)
											sameAsHost(t, host, s, in, out, algo)
										}
										if pc.coll.Reduces && dt.IsFloat() && !inPlace {
											rough := roughInputs(s, n, rng)
											out, _ = run(t, gpu, s, rough)
											sameAsHost(t, host, s, rough, out, algo)
										}
									}
								}
							}
						}
					}
				})
			}
		}
	}
}

// alltoallv from a matrix with empty and unequal entries (every table entry differs between ranks).
func TestGPUAllToAllVMatrix(t *testing.T) {
	onGPU(t)
	file := filepath.Join(t.TempDir(), "m.txt")
	must(t, os.WriteFile(file, []byte("0 100 260\n48 0 1\n1000 16 33\n"), 0o644))
	env := map[string]string{"NCCL_TESTS_ALLTOALLV_MATRIX_FILE": file, "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE": "1000"}
	coll, err := collectives.AllToAllV.Prepare(func(k string) string { return env[k] }, 3, 2<<20, 2<<20)
	must(t, err)
	host, seed := newHost(t, 3, nil), rand.Uint64()
	for _, tr := range []map[string]string{ceOffEnv, ceEnv} { // kernels, then copy engines
		gpu := open(t, New(), 3, tr, 0)
		for _, dt := range []collectives.DType{collectives.Int8, collectives.Float} {
			s := callSpec{coll, dt, collectives.Sum, 2 << 20, false, 0, 0}
			in := exactInputs(s, 3, seed)
			out, algo := run(t, gpu, s, in)
			check(t, s, 3, seed, algo, out)
			sameAsHost(t, host, s, in, out, algo)
		}
	}
}

// alltoallv in CUDA graphs (-G, and -w 0 where the first call of a size is captured): a graph captured with
// counts the ranks' tables never held replays them, also after a launch outside the graph wrote other counts,
// and that launch gets its own.
func TestGPUAllToAllVGraph(t *testing.T) {
	onGPU(t)
	const n = 3
	gpu := open(t, New(), n, nil, 10*time.Second)
	g := gpu.Groups()[0]
	seed := rand.Uint64()
	spec := func(bytes int64) callSpec {
		return callSpec{collectives.AllToAllV, collectives.Float, collectives.Sum, bytes, false, 0, 0}
	}
	verify := func(s callSpec, call *collectives.Call) {
		t.Helper()
		check(t, s, n, seed, g.Algorithm(call), readOutputs(t, g, call))
	}
	captured, plain := spec(n*16*37*4), spec(1<<20)
	cg := buildCall(t, g, captured, n)
	fillCall(t, g, captured, cg, seed)
	graph := captureCall(t, g, cg, 2)
	defer graph.Destroy()
	must(t, graph.Launch())
	must(t, g.Wait())
	verify(captured, cg)

	cp := buildCall(t, g, plain, n)
	fillCall(t, g, plain, cp, seed)
	must(t, g.Launch(cp))
	must(t, g.Wait())
	verify(plain, cp)

	fillCall(t, g, captured, cg, seed) // poisoned again: the replay must write every element anew
	must(t, graph.Launch())
	must(t, g.Wait())
	verify(captured, cg)
}
