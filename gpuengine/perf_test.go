package gpuengine

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/vendorengine"
)

// perfRow is one timed configuration.
type perfRow struct {
	name  string
	env   map[string]string
	coll  *collectives.Collective
	sizes []int64
	graph bool
}

func perfRows() []perfRow {
	ar, ag, rs, a2a := collectives.AllReduce, collectives.AllGather, collectives.ReduceScatter, collectives.AllToAll
	flat := []int64{8, 256, 4 << 10, 32 << 10, 64 << 10, 128 << 10}
	treeSizes := []int64{256 << 10, 1 << 20, 4 << 20}
	big := []int64{1 << 20, 4 << 20, 16 << 20, 128 << 20, 1 << 30}
	lp := []int64{64 << 20, 256 << 20, 1 << 30}
	tree := map[string]string{"RCCL_DDA_ENABLE": "1", "RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES": "0"}
	noLL := map[string]string{"RCCLX_TESTS_GPU_LL_BYTES": "0"}
	rows := []perfRow{
		{"dda_flat", ddaEnv, ar, flat, true},
		{"dda_tree", tree, ar, treeSizes, true},
		{"tree-push", merge(tree, noLL), ar, treeSizes[:2], true},
		{"ring", nil, ar, append(flat[:1:1], big...), false},
		{"ring-sm", ceOffEnv, ar, big, false},
		{"lp", lpEnv, ar, lp, false},
		{"ring", nil, ag, big, false},
		{"ring-sm", ceOffEnv, ag, big, false},
		{"ring", nil, rs, big, false},
		{"ring-c1G", map[string]string{"RCCLX_TESTS_GPU_CE_CHUNK": "1G"}, rs, big[3:], false},
		{"ring-sm", ceOffEnv, rs, big, false},
		{"direct", nil, a2a, big, false},
		{"direct-sm", ceOffEnv, a2a, big, false},
	}
	if only := os.Getenv("RCCLX_TESTS_GPU_PERF_ONLY"); only != "" {
		var keep []perfRow
		for _, r := range rows {
			if strings.Contains(only, r.name+"/"+r.coll.Name) {
				keep = append(keep, r)
			}
		}
		rows = keep
	}
	return rows
}

// TestGPUPerf times each algorithm next to the vendor library (NCCL) on 2 GPUs, in one run (set
// RCCLX_TESTS_GPU_PERF=1; RCCLX_TESTS_GPU_PERF_ONLY="ring/all_reduce dda_flat/all_reduce" picks rows).
// Time per operation: a graph of iters launches replayed (rows marked graph), or iters launches then Wait.
func TestGPUPerf(t *testing.T) {
	if os.Getenv("RCCLX_TESTS_GPU_PERF") == "" {
		t.Skip("set RCCLX_TESTS_GPU_PERF=1 to time the engine (GPU machine)")
	}
	onGPU(t)
	var table strings.Builder
	fmt.Fprintf(&table, "%-9s %-14s %11s %10s %10s %8s %8s %7s\n", "algo", "coll", "bytes", "gpu_us", "nccl_us", "gpu_bus", "nccl_bus", "ratio")
	for _, row := range perfRows() {
		gpu := open(t, New(), 2, row.env, 30*time.Second)
		nccl := open(t, vendorengine.New(), 2, nil, 0) // blocking communicators, as nccl-tests makes them
		for _, size := range row.sizes {
			s := callSpec{row.coll, collectives.Float, collectives.Sum, size, false, 0, 0}
			tg, algo := timeCall(t, gpu, s, row.graph)
			tn, _ := timeCall(t, nccl, s, row.graph)
			k := s.coll.Counts(size, 2, 0, s.dt)
			bus := func(d time.Duration) float64 { return s.coll.BusBW(k, s.dt, d.Seconds(), 2) }
			if row.name != algo { // a variant of the algorithm (ring-sm: without the copy engines)
				algo = row.name
			}
			fmt.Fprintf(&table, "%-9s %-14s %11d %10.2f %10.2f %8.1f %8.1f %7.2f\n", algo, s.coll.Name, size,
				us(tg), us(tn), bus(tg), bus(tn), tg.Seconds()/tn.Seconds())
		}
		gpu.Close()
		nccl.Close()
	}
	t.Log("\n" + table.String())
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// timeCall returns the time per operation of call s (float data, never zeros) and the algorithm that ran.
func timeCall(t *testing.T, c collectives.Comm, s callSpec, graph bool) (time.Duration, string) {
	t.Helper()
	g := c.Groups()[0]
	n := c.NRanks()
	call := buildCall(t, g, s, n)
	defer func() {
		for l := range n {
			g.Free(call.Send[l].Buf)
			g.Free(call.Recv[l].Buf)
		}
	}()
	pattern := roughInputs(callSpec{s.coll, s.dt, s.op, min(s.bytes, 1<<20), false, 0, 0}, 1, rand.New(rand.NewPCG(1, 1)))[0]
	for l := range n {
		want := call.Counts[l].Send * int64(s.dt.Size())
		if len(pattern) > 0 {
			must(t, g.Write(call.Send[l], bytes.Repeat(pattern, int(want)/len(pattern)+1)[:want]))
		}
	}
	iters := int(max(min(20, (4<<30)/max(s.bytes, 1)), 3))
	launch := func() error {
		for range iters {
			if err := g.Launch(call); err != nil {
				return err
			}
		}
		return nil
	}
	must(t, launch())
	must(t, g.Wait())
	if !graph {
		best := time.Duration(1 << 62)
		for range 3 {
			start := time.Now()
			must(t, launch())
			must(t, g.Wait())
			best = min(best, time.Since(start))
		}
		return best / time.Duration(iters), g.Algorithm(call)
	}
	gr, err := g.(collectives.Grapher).Capture(launch)
	must(t, err)
	defer gr.Destroy()
	timer := g.(collectives.EventTimer)
	const replays = 10
	must(t, gr.Launch())
	must(t, g.Wait())
	from, err := timer.Mark()
	must(t, err)
	for range replays {
		must(t, gr.Launch())
	}
	to, err := timer.Mark()
	must(t, err)
	must(t, g.Wait())
	d, err := timer.Elapsed(from, to)
	must(t, err)
	return slices.Max(d) / time.Duration(replays*iters), g.Algorithm(call)
}
