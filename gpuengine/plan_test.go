package gpuengine

import (
	"errors"
	"fmt"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

func TestRoundsCoverEveryElementOnce(t *testing.T) {
	for _, count := range []int64{0, 1, 15, 16, 17, 1000, 1 << 20, 1<<20 + 3} {
		for _, per := range []int64{16, 96, 4096} {
			var next int64
			rounds := splitRounds(count, per, 16)
			for i, r := range rounds {
				// Even rounds of a multiple of the unit, at most per, the last one no longer than the others.
				if r.off != next || r.len < 1 || r.len > per || i < len(rounds)-1 && (r.len%16 != 0 || r.len != rounds[0].len) || r.len > rounds[0].len {
					t.Fatalf("count %d per %d: round %+v after %d", count, per, r, next)
				}
				next += r.len
			}
			if next != count || int64(len(rounds)) != (count+per-1)/per {
				t.Errorf("count %d per %d: %d rounds cover %d", count, per, len(rounds), next)
			}
			if count == 0 {
				continue
			}
			// LP's chunks: the fewest that fit per, as even as the unit allows.
			chunk := evenRound(count, per, 16)
			chunks := (count + chunk - 1) / chunk
			if chunk%16 != 0 || chunk > per || chunks != (count+per-1)/per || chunk >= (count+chunks-1)/chunks+16 {
				t.Errorf("count %d per %d: chunks of %d", count, per, chunk)
			}
		}
	}
}

func TestLPChunkFitsBuffer(t *testing.T) {
	for _, buf := range []int64{minHalf, 32 << 20, 32<<20 + 4096} {
		for _, pieces := range []int64{1, 2, 3, 8, 64} {
			for _, block := range []int64{1, 16, 96, 128, 1000} {
				for _, scaled := range []bool{false, true} {
					r := lpChunkLen(buf, pieces, block, scaled)
					unit := lpUnit(block, scaled)
					if r < unit || r%unit != 0 || r%16 != 0 || (scaled && r%block != 0) {
						t.Errorf("buffer %d pieces %d block %d scaled %v: chunk %d (unit %d)", buf, pieces, block, scaled, r, unit)
					}
					scales := int64(0)
					if scaled {
						scales = 4 * pieces * ((r + block - 1) / block)
					}
					if pieces*r+scales > buf || pieces*(r+unit)+scales <= buf && !scaled {
						t.Errorf("buffer %d pieces %d block %d scaled %v: chunk %d overflows or wastes the buffer", buf, pieces, block, scaled, r)
					}
				}
			}
		}
	}
}

func TestPlanBlocksAndUnsupported(t *testing.T) {
	p, _ := collectives.PolicyFromEnv(func(string) string { return "" })
	c := &comm{nranks: 2, policy: p, tuning: collectives.GPUTuning{RingBlocks: 32, LPBlocks: 64}, half: halfBytes(p.SendBuf), blockCap: 40}
	k := collectives.AllReduce.Counts(1<<30, 2, 0, collectives.Float)
	for algo, want := range map[string]int{collectives.Ring: 32, collectives.LowPrecision: 40} {
		pl, err := c.makePlan(collectives.AllReduce, algo, k, 4)
		if err != nil || pl.blocks != want {
			t.Errorf("%s: %d blocks, %v; want %d", algo, pl.blocks, err, want)
		}
	}
	small := collectives.AllReduce.Counts(8, 2, 0, collectives.Float)
	if pl, _ := c.makePlan(collectives.AllReduce, collectives.Ring, small, 4); pl.blocks != 1 {
		t.Errorf("8 bytes: %d ring blocks", pl.blocks)
	}
	type ddaCase struct {
		algo   string
		bytes  int64
		kernel string
		blocks int
	}
	dda := func(n int, cases []ddaCase) {
		t.Helper()
		c.nranks = n
		for _, x := range cases {
			kk := collectives.AllReduce.Counts(x.bytes, n, 0, collectives.Float)
			if pl, _ := c.makePlan(collectives.AllReduce, x.algo, kk, 4); pl.kernel != x.kernel || pl.blocks != x.blocks {
				t.Errorf("%d ranks, %s %d bytes: %s x %d blocks, want %s x %d", n, x.algo, x.bytes, pl.kernel, pl.blocks, x.kernel, x.blocks)
			}
		}
	}
	// DDA all_reduce: LL up to RCCLX_TESTS_GPU_LL_BYTES (1 MiB), a word of the piece (flat: the vector; tree:
	// a slice) per thread, bounded by the GPU (blockCap 40); the other kernels a vector per thread, the push
	// tree bounded by the GPU, flat by RCCL_DDA_MAX_BLOCKS (24).
	c.tuning.LLMax = collectives.DefaultGPUTuning.LLMax
	dda(4, []ddaCase{
		{collectives.DDAFlat, 8, llFlatKernel, 1}, {collectives.DDAFlat, 16 << 10, llFlatKernel, 8},
		{collectives.DDAFlat, 64 << 10, llFlatKernel, 32}, {collectives.DDAFlat, 512 << 10, llFlatKernel, 40},
		{collectives.DDAFlat, 512<<10 + 16, "dda_all_reduce_flat", 24},
		{collectives.DDATree, 8 << 10, llTreeKernel, 1}, {collectives.DDATree, 1 << 20, llTreeKernel, 40},
		{collectives.DDATree, 1<<20 + 16, "dda_all_reduce_tree", 40},
	})
	// At 2 ranks flat and tree alike take the one-shot: LL to 128 KiB, LL128 (a line of 120 bytes per 8
	// threads) to the LL size, then the push kernel; every grid bounded by the GPU.
	dda(2, []ddaCase{
		{collectives.DDAFlat, 8, llFlatKernel, 1}, {collectives.DDATree, 128 << 10, llFlatKernel, 40},
		{collectives.DDATree, 128<<10 + 16, ll128Kernel, 18}, {collectives.DDAFlat, 1 << 20, ll128Kernel, 40},
		{collectives.DDATree, 1<<20 + 16, pushKernel, 40},
	})
	c.tuning.LLMax = 0
	dda(2, []ddaCase{{collectives.DDAFlat, 8, pushKernel, 1}})
	dda(4, []ddaCase{{collectives.DDAFlat, 8, "dda_all_reduce_flat", 1}})
	c.nranks = 2
	if _, err := c.makePlan(collectives.AllToAll, collectives.Ring, k, 4); !errors.Is(err, collectives.ErrUnsupported) {
		t.Errorf("ring alltoall: %v", err)
	}
}

// Without a driver the engine says so, and Open fails with a runtime error (exit code 2).
func TestNoDriver(t *testing.T) {
	e := New()
	if e.Name() != "gpu" {
		t.Errorf("name %q", e.Name())
	}
	if err := e.(collectives.Prober).Available(); err == nil {
		t.Skip("a CUDA driver is present: the no-driver path cannot be seen here")
	}
	_, err := e.Open(collectives.Config{NThreads: 1, NGpus: 1})
	var re *collectives.RuntimeError
	if !errors.As(err, &re) {
		t.Errorf("Open without a driver: %v; want a RuntimeError", err)
	}
}

// Every rank of a call makes the same launches: one per round of the rounds kernels (times the steps of
// hypercube, a round's steps in order before the next round), one otherwise; Launch enqueues them phase by
// phase on every rank.
func TestCallPhases(t *testing.T) {
	p, _ := collectives.PolicyFromEnv(func(string) string { return "" })
	c := &comm{nranks: 8, policy: p, tuning: collectives.DefaultGPUTuning, half: halfBytes(1 << 20), blockCap: 16}
	call := func(coll *collectives.Collective, dt collectives.DType, bytes int64) *collectives.Call {
		cl := &collectives.Call{Coll: coll, DType: dt, Op: collectives.Sum}
		for r := range c.nranks {
			cl.Counts = append(cl.Counts, coll.Counts(bytes, c.nranks, r, dt))
		}
		return cl
	}
	// 8 MiB halves hold 8 slots of 262272 floats: 2 MiB of reduce (524384 elements) takes 2 rounds, alltoallv's
	// rounds cover the largest piece any rank sends a peer (262144 floats at 4 MiB, 1048576 at 16 MiB); hypercube holds 4 slots of 524544 floats (the last step's
	// pieces): pieces of 2 MiB / 8 take 1 round of 3 steps, of 64 MiB / 8 4 rounds.
	for _, x := range []struct {
		coll  *collectives.Collective
		bytes int64
		want  int
	}{
		{collectives.Reduce, 0, 1}, {collectives.Reduce, 4, 1}, {collectives.Reduce, 1 << 20, 1},
		{collectives.Reduce, 2<<20 + 8*48, 2}, {collectives.Gather, 2<<20 + 8*48, 1}, {collectives.Broadcast, 9 << 20, 2},
		{collectives.Scatter, 2<<20 + 8*48, 1}, {collectives.SendRecv, 17 << 20, 3}, {collectives.AllToAllV, 4 << 20, 1}, {collectives.AllToAllV, 16 << 20, 4},
		{collectives.HyperCube, 2 << 20, 3}, {collectives.HyperCube, 64 << 20, 12},
	} {
		cl := call(x.coll, collectives.Float, x.bytes)
		algo := p.Choose(cl.Coll, cl.DType, cl.Op, c.nranks, cl.Counts[0], true)
		got := c.callPhases(cl, algo)
		if got != x.want {
			t.Errorf("%s %d bytes on 8 ranks: %d phases, want %d", x.coll.Name, x.bytes, got, x.want)
		}
		for r := range c.nranks {
			pl, err := c.makePlan(cl.Coll, algo, cl.Counts[r], 4)
			if err != nil || pl.launches() != got {
				t.Errorf("%s %d bytes: rank %d plans %d launches (%v), rank 0 %d", x.coll.Name, x.bytes, r, pl.launches(), err, got)
			}
		}
	}
	c.nranks = 1
	if got := c.callPhases(call(collectives.Reduce, collectives.Float, 64<<20), collectives.Direct); got != 1 {
		t.Errorf("1 rank: %d phases (a copy), want 1", got)
	}
	// Launch ph runs round ph/steps, step ph%steps: every (round, step) once, steps in order within a round.
	pl := plan{rounds: []round{{0, 16}, {16, 16}, {32, 5}}, steps: 3}
	next := 0
	for ph := range pl.launches() {
		rd, step := pl.at(ph)
		if rd != pl.rounds[next/3] || step != next%3 {
			t.Errorf("launch %d: round %+v step %d", ph, rd, step)
		}
		next++
	}
	if next != 9 {
		t.Errorf("%d launches, want 9", next)
	}
}

// LP chunks fit the kernels' layout of a buffer, half a half (kernels/lowprec.cu): all_reduce two slots of
// codes per rank, all_gather one piece (a slot per rank where it pushes), the others a piece per rank, each at
// a multiple of the unit, then a scale per LP block of them in mode scaled; the 256 MiB call takes several
// chunks in its one launch, pulled, and the 64 KiB call one chunk, all_gather's pushed.
func TestLPChunksFitTheBuffer(t *testing.T) {
	for _, mode := range []string{collectives.LPModeRCCLX, collectives.LPModeScaled} {
		p, _ := collectives.PolicyFromEnv(func(k string) string {
			return map[string]string{"RCCLX_TESTS_LP_MODE": mode, "RCCLX_TESTS_LP_BLOCK": "100"}[k]
		})
		scaled := mode == collectives.LPModeScaled
		unit := lpUnit(int64(p.LPBlock), scaled)
		for _, n := range []int{2, 3, 8} {
			c := &comm{nranks: n, policy: p, tuning: collectives.DefaultGPUTuning, half: halfBytes(1 << 20), blockCap: 16}
			for _, x := range []struct {
				coll  *collectives.Collective
				slots int64
				bytes int64
				push  bool
			}{
				{collectives.AllReduce, 2 * int64(n), 256<<20 + 4*1000, false},
				{collectives.AllGather, 1, 256<<20 + 4*1000, false}, {collectives.AllGather, int64(n), 64<<10 + 4*1000, true},
				{collectives.ReduceScatter, int64(n), 256<<20 + 4*1000, false},
				{collectives.AllToAll, int64(n), 256<<20 + 4*1000, false},
			} {
				coll, slots := x.coll, x.slots
				k := coll.Counts(x.bytes, n, 0, collectives.Float)
				pl, err := c.makePlan(coll, collectives.LowPrecision, k, 4)
				if err != nil {
					t.Fatalf("%s %s n %d: %v", mode, coll.Name, n, err)
				}
				if pl.lpPush != x.push {
					t.Fatalf("%s %s n %d, %d B: pushes %v, want %v", mode, coll.Name, n, x.bytes, pl.lpPush, x.push)
				}
				longest := k.Param
				if coll == collectives.AllReduce {
					longest = (k.Param + int64(n) - 1) / int64(n)
				}
				// One launch; its chunks cover the longest piece, and a chunk's codes and scales fit a buffer.
				if len(pl.rounds) != 1 || pl.rounds[0].off != 0 || pl.launches() != 1 {
					t.Fatalf("%s %s n %d: rounds %+v", mode, coll.Name, n, pl.rounds)
				}
				r := pl.rounds[0]
				codes := slots * ((r.len + unit - 1) / unit * unit)
				need := codes
				if scaled {
					need += 4 * ((codes + int64(p.LPBlock) - 1) / int64(p.LPBlock))
				}
				chunks := (longest + r.len - 1) / r.len
				if need > lpBuffer(c.half) || 2*lpBuffer(c.half) > c.half || r.len%unit != 0 || (chunks < 2) != pl.lpPush {
					t.Errorf("%s %s n %d: chunks of %d need %d bytes of a %d-byte buffer (half %d)", mode, coll.Name, n, r.len, need, lpBuffer(c.half), c.half)
				}
				// all_gather, alltoall and all_reduce are cut into enough chunks for the kernel to split its
				// warps; reduce_scatter takes the fewest chunks a buffer allows.
				least := lpLeastChunk(coll)
				if pl.lpPush {
					least = 0
				}
				fewest := evenRound(longest, lpChunkLen(lpBuffer(c.half), slots, int64(p.LPBlock), scaled), unit)
				cut := least > 0 && longest >= lpSplitChunks*least && (longest+fewest-1)/fewest < lpSplitChunks
				if cut && chunks < lpSplitChunks {
					t.Errorf("%s %s n %d: %d elements in %d chunks: too few for the kernel to split its warps", mode, coll.Name, n, longest, chunks)
				}
				if !cut && r.len != fewest {
					t.Errorf("%s %s n %d: chunks of %d, not the buffer's %d", mode, coll.Name, n, r.len, fewest)
				}
			}
		}
	}
}

// A call of at least lpSplitChunks chunks of least elements is cut into at least that many, each a
// multiple of the unit within what a buffer holds; a smaller call, or one a buffer already cuts finer, keeps
// the buffer's length.
func TestLPSplitLen(t *testing.T) {
	for _, least := range []int64{lpMinChunk, 2 * lpMinChunk} {
		for _, longest := range []int64{1, least, lpSplitChunks*least - 1, lpSplitChunks * least,
			lpSplitChunks*least + 17, 5 << 20, 32 << 20, 1 << 30} {
			for _, per := range []int64{16 << 10, 1 << 20, 8 << 20, 32 << 20} {
				for _, unit := range []int64{16, 1600} {
					checkSplitLen(t, longest, per, unit, least)
				}
			}
		}
	}
}

func checkSplitLen(t *testing.T, longest, per, unit, least int64) {
	t.Helper()
	got := lpSplitLen(longest, per, unit, least)
	chunks := (longest + got - 1) / got
	split := longest >= lpSplitChunks*least
	switch {
	case got > per:
		t.Errorf("longest %d per %d unit %d: chunks of %d exceed the buffer", longest, per, unit, got)
	case split && chunks < lpSplitChunks:
		t.Errorf("longest %d per %d unit %d least %d: %d chunks of %d", longest, per, unit, least, chunks, got)
	case got != per && (!split || (longest+per-1)/per >= lpSplitChunks || got%unit != 0):
		t.Errorf("longest %d per %d unit %d least %d: %d, not the buffer's %d", longest, per, unit, least, got, per)
	}
}

// At the default LP buffer (8M codes an all_reduce chunk, 16M reduce_scatter's and a pushed all_gather's,
// 32M a pulled all_gather's), float at 2 ranks: all_gather pushes in one chunk up to 16M elements a rank
// (128 MiB) and above that is cut into lpSplitChunks as alltoall is from 8M elements a rank, all_reduce from
// 16M a slice (128 MiB, not 64 MiB), and reduce_scatter keeps the buffer's chunks.
func TestLPCutAtTheDefaultBuffer(t *testing.T) {
	p, _ := collectives.PolicyFromEnv(func(string) string { return "" })
	c := &comm{nranks: 2, policy: p, tuning: collectives.DefaultGPUTuning, half: halfBytes(p.SendBuf), blockCap: 16}
	for _, x := range []struct {
		coll  *collectives.Collective
		bytes int64
		want  int64
	}{
		{collectives.AllReduce, 64 << 20, 1}, {collectives.AllReduce, 128 << 20, lpSplitChunks},
		{collectives.AllReduce, 256 << 20, 4}, {collectives.AllReduce, 1 << 30, 16},
		{collectives.ReduceScatter, 128 << 20, 1}, {collectives.ReduceScatter, 256 << 20, 2},
		{collectives.AllGather, 32 << 20, 1}, {collectives.AllGather, 128 << 20, 1},
		{collectives.AllGather, 256 << 20, lpSplitChunks},
		{collectives.AllToAll, 64 << 20, lpSplitChunks}, {collectives.AllToAll, 256 << 20, lpSplitChunks},
		{collectives.AllToAll, 1 << 30, 8},
	} {
		k := x.coll.Counts(x.bytes, 2, 0, collectives.Float)
		pl, err := c.makePlan(x.coll, collectives.LowPrecision, k, 4)
		if err != nil {
			t.Fatalf("%s: %v", x.coll.Name, err)
		}
		longest := k.Param
		if x.coll == collectives.AllReduce {
			longest /= 2
		}
		if got := (longest + pl.rounds[0].len - 1) / pl.rounds[0].len; got != x.want {
			t.Errorf("%s %d B: %d chunks of %d, want %d", x.coll.Name, x.bytes, got, pl.rounds[0].len, x.want)
		}
		if push := x.coll == collectives.AllGather && x.want == 1; pl.lpPush != push {
			t.Errorf("%s %d B: pushes %v, want %v", x.coll.Name, x.bytes, pl.lpPush, push)
		}
	}
}

// DDA's and LP's kernels launch early with the GPU's share of blocks, half of it where ranks share a GPU (a
// kernel launched early and the one ahead of it, of every rank there, must all be resident), and not at all
// where half a share is no block; the other kernels keep the whole share.
func TestEarlyLaunchCaps(t *testing.T) {
	p, _ := collectives.PolicyFromEnv(func(string) string { return "" })
	k := collectives.AllReduce.Counts(1<<20, 2, 0, collectives.Float) // LL128: 137 blocks before the caps
	for _, x := range []struct {
		sms, sharing     []int
		blockCap, blocks int
		early            bool
	}{
		{[]int{132, 132}, []int{1, 1}, 132, 128, true},
		{[]int{132, 132}, []int{2, 2}, 66, 33, true},
		{[]int{132, 78}, []int{2, 2}, 39, 19, true},
		{[]int{8, 8}, []int{8, 8}, 1, 1, false},
	} {
		c := &comm{nranks: 2, policy: p, tuning: collectives.DefaultGPUTuning, half: halfBytes(p.SendBuf)}
		c.setCaps(x.sms, x.sharing)
		pl, err := c.makePlan(collectives.AllReduce, collectives.DDAFlat, k, 4)
		if err != nil || c.blockCap != x.blockCap || pl.blocks != x.blocks || pl.early != x.early {
			t.Errorf("%d SMs shared by %d: cap %d, LL %d blocks, early %v (%v); want %d, %d, %v",
				x.sms, x.sharing, c.blockCap, pl.blocks, pl.early, err, x.blockCap, x.blocks, x.early)
		}
		big := collectives.AllReduce.Counts(1<<30, 2, 0, collectives.Float)
		if lp, err := c.makePlan(collectives.AllReduce, collectives.LowPrecision, big, 4); err != nil || lp.early != x.early ||
			lp.blocks != min(x.blocks, defaultBlocks) {
			t.Errorf("%d SMs shared by %d: LP early %v on %d blocks (%v); want %v, %d", x.sms, x.sharing, lp.early,
				lp.blocks, err, x.early, min(x.blocks, defaultBlocks))
		}
		if ring, _ := c.makePlan(collectives.AllReduce, collectives.Ring, big, 4); ring.early || ring.blocks > c.blockCap {
			t.Errorf("%d SMs shared by %d: ring early %v on %d blocks", x.sms, x.sharing, ring.early, ring.blocks)
		}
	}
}

// An LP all_gather that pushes takes a block on every multiprocessor (up to maxBlocks), the other LP kernels
// defaultBlocks; RCCLX_TESTS_GPU_LP_BLOCKS, where set, caps them all; an early launch on a shared GPU keeps
// its half share.
func TestLPBlocks(t *testing.T) {
	p, _ := collectives.PolicyFromEnv(func(string) string { return "" })
	pushed := collectives.AllGather.Counts(64<<20, 2, 0, collectives.Float)
	pulled := collectives.AllGather.Counts(1<<30, 2, 0, collectives.Float)
	reduced := collectives.AllReduce.Counts(1<<30, 2, 0, collectives.Float)
	for _, x := range []struct {
		sms, sharing            []int
		set                     int
		pushed, pulled, reduced int
	}{
		{[]int{132, 132}, []int{1, 1}, 0, 132, 128, 128},
		{[]int{200, 200}, []int{1, 1}, 0, maxBlocks, 128, 128},
		{[]int{132, 132}, []int{1, 1}, 64, 64, 64, 64},
		{[]int{132, 132}, []int{2, 2}, 0, 33, 33, 33},
	} {
		tuning := collectives.DefaultGPUTuning
		tuning.LPBlocks = x.set
		c := &comm{nranks: 2, policy: p, tuning: tuning, half: halfBytes(p.SendBuf)}
		c.setCaps(x.sms, x.sharing)
		for _, y := range []struct {
			coll *collectives.Collective
			k    collectives.Counts
			push bool
			want int
		}{
			{collectives.AllGather, pushed, true, x.pushed},
			{collectives.AllGather, pulled, false, x.pulled},
			{collectives.AllReduce, reduced, false, x.reduced},
		} {
			pl, err := c.makePlan(y.coll, collectives.LowPrecision, y.k, 4)
			if err != nil || pl.lpPush != y.push || pl.blocks != y.want {
				t.Errorf("%d SMs shared by %d, LP_BLOCKS %d: %s pushes %v on %d blocks (%v); want %v, %d",
					x.sms, x.sharing, x.set, y.coll.Name, pl.lpPush, pl.blocks, err, y.push, y.want)
			}
		}
	}
}

// bfloat16 all_reduce and all_gather of mode rcclx up to lpNarrowMax take the 512-thread _narrow entries, a
// float all_gather that pushes in mode rcclx runs its entry on lpPushThreads; the other LP calls keep their
// entry and block size.
func TestLPNarrowEntries(t *testing.T) {
	for _, mode := range []string{"", "scaled"} {
		p, _ := collectives.PolicyFromEnv(func(k string) string {
			if k == "RCCLX_TESTS_LP_MODE" {
				return mode
			}
			return ""
		})
		c := &comm{nranks: 2, policy: p, tuning: collectives.DefaultGPUTuning, half: halfBytes(p.SendBuf), blockCap: 16}
		for _, coll := range []*collectives.Collective{collectives.AllReduce, collectives.AllGather,
			collectives.ReduceScatter, collectives.AllToAll} {
			for _, dt := range []collectives.DType{collectives.BFloat16, collectives.Float} {
				for _, bytes := range []int64{16 << 20, lpNarrowMax, 2 * lpNarrowMax} {
					pl, err := c.makePlan(coll, collectives.LowPrecision, coll.Counts(bytes, 2, 0, dt), dt.Size())
					if err != nil {
						t.Fatal(err)
					}
					narrow := mode == "" && dt == collectives.BFloat16 && bytes <= lpNarrowMax &&
						(coll == collectives.AllReduce || coll == collectives.AllGather)
					want, threads := kernelNames[coll][collectives.LowPrecision], lpThreads(dt.Size(), mode != "")
					if mode != "" {
						want += "_scaled"
					}
					if narrow {
						want, threads = want+"_narrow", lpNarrowThreads
					}
					// At 2 ranks a float all_gather pushes up to 128 MiB: every size here.
					if push := mode == "" && dt == collectives.Float && coll == collectives.AllGather; push {
						threads = lpPushThreads
						if !pl.lpPush {
							t.Errorf("%s %d B does not push", coll.Name, bytes)
						}
					}
					if pl.kernel != want || pl.threads != threads {
						t.Errorf("mode %q %s %s %d B: %s on %d threads, want %s on %d", mode, coll.Name, dt, bytes,
							pl.kernel, pl.threads, want, threads)
					}
				}
			}
		}
	}
}

// Float LP alltoall in mode rcclx takes lp_alltoall_bulk where every rank has an sm_90 GPU to itself with the
// shared memory of Hopper's blocks; bfloat16, mode scaled, an older GPU, a shared one or one whose blocks take
// less shared memory (sm_120's 99 KiB) keep lp_alltoall.
func TestLPAllToAllBulk(t *testing.T) {
	const hopperOptin = 227 << 10
	for _, x := range []struct {
		arch, sharing int
		optin         int
		dt            collectives.DType
		mode          string
		bulk          bool
	}{
		{90, 1, hopperOptin, collectives.Float, "", true},
		{100, 1, hopperOptin, collectives.Float, "", true},
		{120, 1, 99 << 10, collectives.Float, "", false},
		{90, 1, hopperOptin, collectives.BFloat16, "", false},
		{90, 1, hopperOptin, collectives.Float, "scaled", false},
		{80, 1, 163 << 10, collectives.Float, "", false},
		{90, 2, hopperOptin, collectives.Float, "", false},
	} {
		p, _ := collectives.PolicyFromEnv(func(k string) string {
			if k == "RCCLX_TESTS_LP_MODE" {
				return x.mode
			}
			return ""
		})
		c := &comm{nranks: 2, policy: p, tuning: collectives.DefaultGPUTuning, half: halfBytes(p.SendBuf),
			ranks: []*rank{{caps: cudaCaps(90), sharedOptin: hopperOptin}, {caps: cudaCaps(x.arch), sharedOptin: x.optin}}}
		c.setCaps([]int{132, 132}, []int{x.sharing, x.sharing})
		c.setGates(c.gatesOf(c.ranks[0].caps).or(c.gatesOf(c.ranks[1].caps)))
		gib := collectives.AllToAll.Counts(1<<30, 2, 0, x.dt)
		pl, err := c.makePlan(collectives.AllToAll, collectives.LowPrecision, gib, x.dt.Size())
		// At 1 GiB, too long for one chunk, the bulk kernel takes as few chunks as its buffer allows.
		bulk := pl.kernel == "lp_alltoall_bulk"
		holds := lpChunkLen(lpBuffer(c.half), 2, int64(p.LPBlock), false)
		chunks := (gib.Param + pl.rounds[0].len - 1) / pl.rounds[0].len
		if err != nil || bulk != x.bulk || bulk && (pl.threads != lpBulkThreads || pl.shared != lpBulkShared ||
			chunks != (gib.Param+holds-1)/holds) || !bulk && pl.shared != 0 {
			t.Errorf("sm_%d shared by %d, %s mode %q: %s on %d threads, %d B shared, %d chunks (%v); want bulk %v",
				x.arch, x.sharing, x.dt, x.mode, pl.kernel, pl.threads, pl.shared, chunks, err, x.bulk)
		}
		// At 64 MiB the bulk kernel runs the one chunk its buffer holds, launched early; the pulling kernels
		// cut the call into chunks enough to split their warps.
		counts := collectives.AllToAll.Counts(64<<20, 2, 0, x.dt)
		pl, err = c.makePlan(collectives.AllToAll, collectives.LowPrecision, counts, x.dt.Size())
		chunks = (counts.Param + pl.rounds[0].len - 1) / pl.rounds[0].len
		if err != nil || bulk && (chunks != 1 || !pl.early) || !bulk && chunks < lpSplitChunks {
			t.Errorf("sm_%d shared by %d, %s mode %q, 64 MiB: %s in %d chunks, early %v (%v)",
				x.arch, x.sharing, x.dt, x.mode, pl.kernel, chunks, pl.early, err)
		}
	}
}

// cudaCaps are the capabilities of a CUDA GPU of compute capability arch/10.arch%10, as gpurt reports them.
func cudaCaps(arch int) gpurt.Caps {
	return gpurt.Caps{Runtime: gpurt.CUDA, Arch: fmt.Sprintf("sm_%d", arch), WarpSize: 32, EarlyLaunch: arch >= 90,
		BulkCopy: arch >= 90, LL128: true, CopyEngine: true}
}
