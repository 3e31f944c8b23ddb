package gpurt

import (
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// streamKernel moves, per 16-element group of float elements, the HBM bytes that FP8 alltoall moves on one of
// two ranks, with none of its arithmetic or synchronization: its own piece read and written back (4 + 4
// bytes an element), the peer's piece read and written as one byte an element (4 + 1), and one byte an
// element of the peer's codes read and written as a float (1 + 4): 2.416 GB read plus written at 1 GiB. Its
// fastest grid is the bound FP8 alltoall is held against (docs/DESIGN.md, Tuning further).
const streamKernel = `
struct alignas(16) V { unsigned w[4]; };
struct Bufs { const V* own_in; V* own_out; const V* peer_in; V* codes_out; const V* codes_in; V* peer_out; };

// Group g0 of the own and peer pieces (with do0) and group g1 of the peer's codes (with do1): every load
// issued before any store. own says with which the own piece's group goes: 1 with g0 (do0), 2 with g1 (do1).
__device__ __forceinline__ void move(const Bufs& m, long long g0, bool do0, long long g1, bool do1, int own = 1) {
  V a[4], b[4], c;
  const bool mine = (do0 && (own & 1)) || (do1 && (own & 2));
  const long long go = do0 && (own & 1) ? g0 : g1;
  if (mine) {
#pragma unroll
    for (int k = 0; k < 4; k++) a[k] = m.own_in[4 * go + k];
  }
  if (do0) {
#pragma unroll
    for (int k = 0; k < 4; k++) b[k] = m.peer_in[4 * g0 + k];
  }
  if (do1) c = m.codes_in[g1];
  if (mine) {
#pragma unroll
    for (int k = 0; k < 4; k++) m.own_out[4 * go + k] = a[k];
  }
  if (do0) {
    V code;
#pragma unroll
    for (int k = 0; k < 4; k++)
      code.w[k] = b[k].w[0] >> 24 | (b[k].w[1] >> 24) << 8 | (b[k].w[2] >> 24) << 16 | (b[k].w[3] >> 24) << 24;
    m.codes_out[g0] = code;
  }
  if (do1) {
#pragma unroll
    for (int k = 0; k < 4; k++) {
      V o;
#pragma unroll
      for (int j = 0; j < 4; j++) o.w[j] = ((c.w[k] >> (8 * j)) & 0xffu) << 24;
      m.peer_out[4 * g1 + k] = o;
    }
  }
}

extern "C" __global__ void a2a_bytes(Bufs m, long long groups) {
  for (long long g = blockIdx.x * (long long)blockDim.x + threadIdx.x; g < groups;
       g += (long long)gridDim.x * blockDim.x)
    move(m, g, true, g, true);
}

// mine (streamGPU.flags): u64[128] barrier epochs that the other GPU's blocks store, u64[128] this GPU's
// blocks' epoch counts, and a word set when a wait gave up (after about 2 s).
//
// With peer set, block b waits for block b of the other GPU's kernel: it stores the step's epoch into the
// other GPU's flags[b] and waits until its own flags[b] reaches it, as the LP kernels' barrier pairs blocks.
__device__ __forceinline__ void pair_wait(unsigned long long* mine, unsigned long long* peer, unsigned long long e) {
  __syncthreads();
  if (peer && threadIdx.x == 0) {
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(peer + blockIdx.x), "l"(e) : "memory");
    const long long t0 = clock64();
    unsigned long long v;
    do {
      asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(mine + blockIdx.x) : "memory");
    } while (v < e && clock64() - t0 < (1ll << 32));
    if (v < e) mine[2 * 128] = 1;
  }
  __syncthreads();
}

// The same bytes in chunks of chunk groups, as the LP kernels move them: at step s every block takes its
// contiguous part of chunk s (own and peer pieces) and of chunk s - 1 (the peer's codes), then syncs its
// threads, and with peer set waits for the other GPU's same block (pair_wait) between steps; fused: every
// thread takes both, else each half of the block's threads one of them (split).
extern "C" __global__ void a2a_staged(Bufs m, long long groups, long long chunk, int fused, unsigned long long* mine,
                                      unsigned long long* peer) {
  const long long chunks = (groups + chunk - 1) / chunk, sub = (chunk + gridDim.x - 1) / gridDim.x;
  const int half = blockDim.x / 2;
  const bool first = !fused && threadIdx.x < half;
  const int t0 = fused || first ? threadIdx.x : threadIdx.x - half, nt = fused ? blockDim.x : half;
  unsigned long long* count = mine + 128 + blockIdx.x;
  const unsigned long long base = *count;
  for (long long s = 0; s <= chunks; s++) {
    for (long long i = t0; i < sub; i += nt) {
      const long long at = blockIdx.x * sub + i, g0 = s * chunk + at, g1 = (s - 1) * chunk + at;
      move(m, g0, (fused || first) && at < chunk && s < chunks && g0 < groups, g1,
           (fused || !first) && at < chunk && s > 0 && g1 < groups);
    }
    if (s < chunks) {
      pair_wait(mine, peer, base + s + 1);
    }
  }
  if (threadIdx.x == 0) *count = base + chunks;
}

// The same chunks with the two halves of each block decoupled: the first half moves the own and peer pieces
// of chunk after chunk and, with peer set, after each tells the other GPU's same block that its codes are
// written (a release store); the second half waits only for that (an acquire spin) before moving the peer's
// codes of that chunk. No half waits for the other, and nothing waits for buffer space (the codes buffer holds
// the whole call). With split the second half takes the second half of the block's own groups in each chunk,
// as the LP kernel splits its own piece, so that each half moves about the same bytes.
__device__ __forceinline__ void crew_sync(int id, int n) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory");
}
extern "C" __global__ void a2a_decoupled(Bufs m, long long groups, long long chunk, int split,
                                         unsigned long long* mine, unsigned long long* peer) {
  const long long chunks = (groups + chunk - 1) / chunk, sub = (chunk + gridDim.x - 1) / gridDim.x;
  const int half = blockDim.x / 2;
  const bool first = threadIdx.x < half;
  const int t0 = first ? threadIdx.x : threadIdx.x - half;
  unsigned long long* count = mine + 128 + blockIdx.x;
  const unsigned long long base = *count;
  __syncthreads();
  for (long long s = 0; s < chunks; s++) {
    if (first) {
      for (long long i = t0; i < sub; i += half) {
        const long long at = blockIdx.x * sub + i, g = s * chunk + at;
        if (at < chunk && g < groups) move(m, g, true, 0, false, split && 2 * i >= sub ? 0 : 1);
      }
      crew_sync(1, half);
      if (peer && t0 == 0) {
        asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(peer + blockIdx.x), "l"(base + s + 1) : "memory");
      }
    } else {
      if (peer && t0 == 0) {
        const long long c0 = clock64();
        unsigned long long v;
        do {
          asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(mine + blockIdx.x) : "memory");
        } while (v < base + s + 1 && clock64() - c0 < (1ll << 32));
        if (v < base + s + 1) mine[2 * 128] = 1;
      }
      crew_sync(2, half);
      for (long long i = t0; i < sub; i += half) {
        const long long at = blockIdx.x * sub + i, g = s * chunk + at;
        if (at < chunk && g < groups) move(m, 0, false, g, true, split && 2 * i >= sub ? 2 : 0);
      }
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) *count = base + chunks;
}
`

// streamGPU is one GPU's buffers for streamKernel: 1 GiB of float input in two pieces, its outputs, and the
// codes this GPU writes (which the other GPU reads in the two-GPU runs).
type streamGPU struct {
	ctx                            *Context
	f, staged, decoupled           Function
	ownIn, ownOut, peerIn, peerOut DevicePtr
	codesIn, codesOut              DevicePtr
	codesRecv                      DevicePtr // the codes the other GPU pushes (the push runs), zeroed per grid
	flags                          DevicePtr // the staged and decoupled kernels' mine: 257 words, zeroed per grid
	start, end                     Event
	sms                            int
}

const (
	streamHalf            = 512 << 20 // bytes of each float piece
	streamOwn, streamPeer = 0x11223344, 0x5ab2c3d4
	streamCode            = 0x5a5a5a5a // the codes of streamPeer's words, so a peer's codes read the same
	streamFlagsBytes      = 257 * 8    // a2a_staged's mine
)

// bufs is streamKernel's Bufs, the peer's codes read from codes.
func (g *streamGPU) bufs(codes DevicePtr) *streamBufs {
	return &streamBufs{g.ownIn, g.ownOut, g.peerIn, g.codesOut, codes, g.peerOut}
}

type streamBufs struct{ OwnIn, OwnOut, PeerIn, CodesOut, CodesIn, PeerOut DevicePtr }

func newStreamGPU(t *testing.T, dev Device, cubin []byte) *streamGPU {
	t.Helper()
	ctx, err := dev.RetainPrimaryContext()
	must(t, err)
	t.Cleanup(func() { _ = ctx.Release() })
	must(t, ctx.SetCurrent())
	m, err := ModuleLoadData(cubin)
	must(t, err)
	t.Cleanup(func() { _ = m.Unload() })
	g := &streamGPU{ctx: ctx}
	g.f, err = m.Function("a2a_bytes")
	must(t, err)
	g.staged, err = m.Function("a2a_staged")
	must(t, err)
	g.decoupled, err = m.Function("a2a_decoupled")
	must(t, err)
	g.sms, err = dev.Attribute(MultiprocessorCount)
	must(t, err)
	for _, p := range []*DevicePtr{&g.ownIn, &g.ownOut, &g.peerIn, &g.peerOut} {
		*p = devAlloc(t, streamHalf)
	}
	g.codesIn, g.codesOut, g.codesRecv = devAlloc(t, streamHalf/4), devAlloc(t, streamHalf/4), devAlloc(t, streamHalf/4)
	g.flags = devAlloc(t, streamFlagsBytes)
	must(t, MemsetD32Async(g.flags, 0, streamFlagsBytes/4, 0))
	must(t, MemsetD32Async(g.ownIn, streamOwn, streamHalf/4, 0))
	must(t, MemsetD32Async(g.peerIn, streamPeer, streamHalf/4, 0))
	must(t, MemsetD32Async(g.codesIn, streamCode, streamHalf/16, 0))
	g.start, g.end = event(t), event(t)
	return g
}

// TestGPUStreamBound times streamKernel over 1 GiB of float input (FP8 alltoall's bytes on one of 2 ranks) on a
// range of grids, and its staged and decoupled kernels in 8-64 chunks, next to cuMemcpyDtoD of the same bytes
// read and written, and checks what each run wrote (set RCCLX_TESTS_GPU_PERF=1; GPU machine). With two GPUs it
// runs on both at once, each reading the other's codes over the link, as alltoall does, the staged kernel also
// with its blocks waiting for the other GPU's between steps, the decoupled one with its readers waiting for
// each chunk's codes, the staged one also pushing (each GPU storing its codes into the other's memory and
// decoding its own); a wait that gives up fails the test.
func TestGPUStreamBound(t *testing.T) {
	if os.Getenv("RCCLX_TESTS_GPU_PERF") == "" {
		t.Skip("set RCCLX_TESTS_GPU_PERF=1 to time the streaming bound (GPU machine)")
	}
	onGPU(t)
	if err := LoadCompiler(); err != nil {
		t.Skip("no kernel compiler: " + err.Error())
	}
	arch, err := Device(0).Arch()
	must(t, err)
	cubin, err := CompileCached(streamKernel, "stream_bound.cu", arch)
	must(t, err)
	n, err := DeviceCount()
	must(t, err)
	gpus := []*streamGPU{newStreamGPU(t, Device(0), cubin)}
	if n >= 2 {
		gpus = append(gpus, newStreamGPU(t, Device(1), cubin))
		for i, g := range gpus {
			must(t, g.ctx.SetCurrent())
			must(t, EnablePeerAccess(gpus[1-i].ctx))
		}
	}
	moved := float64(2 * (2*streamHalf + streamHalf/4)) // bytes read plus bytes written, per GPU
	// timeIt runs launch on the GPUs given (at once), five times after a warm-up, and returns the slowest
	// GPU's mean time.
	timeIt := func(on []*streamGPU, launch func(i int, g *streamGPU) error) time.Duration {
		t.Helper()
		const reps = 5
		each := func(f func(i int, g *streamGPU) error) {
			for i, g := range on {
				must(t, g.ctx.SetCurrent())
				must(t, f(i, g))
			}
		}
		each(launch)
		each(func(_ int, g *streamGPU) error { return g.start.Record(0) })
		for range reps {
			each(launch)
		}
		each(func(_ int, g *streamGPU) error { return g.end.Record(0) })
		var worst time.Duration
		for _, g := range on {
			must(t, g.ctx.SetCurrent())
			must(t, g.end.Synchronize())
			d, err := EventElapsed(g.start, g.end)
			must(t, err)
			worst = max(worst, d/reps)
		}
		return worst
	}
	// kinds says whether a kernel of this name runs: every one, or those whose names start with one of
	// RCCLX_TESTS_BOUND_KINDS's |-separated prefixes (e.g. "a2a_bytes|push"), to spend less device time.
	kinds := func(name string) bool {
		k := os.Getenv("RCCLX_TESTS_BOUND_KINDS")
		return k == "" || slices.ContainsFunc(strings.Split(k, "|"), func(p string) bool { return strings.HasPrefix(name, p) })
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%-58s %10s %10s\n", "kernel", "us", "GB/s")
	row := func(name string, d time.Duration) {
		fmt.Fprintf(&table, "%-58s %10.1f %10.0f\n", name, float64(d.Nanoseconds())/1e3, moved/d.Seconds()/1e9)
	}
	row("cuMemcpyDtoD, 1 GPU", timeIt(gpus[:1], func(_ int, g *streamGPU) error {
		if err := MemcpyDtoDAsync(g.ownOut, g.ownIn, streamHalf, 0); err != nil {
			return err
		}
		if err := MemcpyDtoDAsync(g.peerOut, g.peerIn, streamHalf, 0); err != nil {
			return err
		}
		return MemcpyDtoDAsync(g.codesOut, g.codesIn, streamHalf/4, 0)
	}))
	groups := int64(streamHalf / 64)
	best := map[string]time.Duration{}
	sets := [][]*streamGPU{gpus[:1]}
	if len(gpus) == 2 {
		sets = append(sets, gpus)
	}
	for _, on := range sets {
		where := "local codes, 1 GPU"
		if len(on) == 2 {
			where = "peer's codes, 2 GPUs"
		}
		codes := func(i int, g *streamGPU) DevicePtr {
			if len(on) == 2 {
				return on[1-i].codesOut
			}
			return g.codesIn
		}
		type cfg struct {
			name, detail    string // name: the kind the best time is kept for; detail: the row's more
			blocks, threads uint32
			launch          func(i int, g *streamGPU, grid, block [3]uint32) error
		}
		var cfgs []cfg
		for _, threads := range []uint32{128, 256, 512} {
			for _, perSM := range []uint32{1, 2, 3, 4} {
				cfgs = append(cfgs, cfg{"a2a_bytes", "", perSM, threads, func(i int, g *streamGPU, grid, block [3]uint32) error {
					return Launch(g.f, grid, block, 0, 0, g.bufs(codes(i, g)), groups)
				}})
			}
		}
		// The staged kernels in 8-64 chunks (the LP kernel cuts a 1 GiB alltoall into 8), and on two GPUs also with
		// each block waiting for the other GPU's between steps.
		for _, wait := range []bool{false, true} {
			if wait && len(on) < 2 {
				continue
			}
			for _, chunks := range []int64{8, 16, 32, 64} {
				for _, threads := range []uint32{256, 512, 1024} {
					for fused := range int32(2) {
						name := []string{"staged split", "staged fused"}[fused]
						if wait {
							name += ", waits"
						}
						cfgs = append(cfgs, cfg{name, fmt.Sprintf(" %d chunks", chunks), 0, threads,
							func(i int, g *streamGPU, grid, block [3]uint32) error {
								var peer DevicePtr
								if wait {
									peer = on[1-i].flags
								}
								return Launch(g.staged, grid, block, 0, 0, g.bufs(codes(i, g)), groups, groups/chunks, fused,
									g.flags, peer)
							}})
					}
				}
			}
		}
		// The staged kernel pushing: each GPU stores its codes into the other's codesRecv and decodes its own
		// codesRecv, in 1-16 chunks (one chunk: every piece moved, one wait, then every code decoded locally).
		if len(on) == 2 {
			for _, chunks := range []int64{1, 2, 4, 8, 16} {
				for _, threads := range []uint32{256, 512, 1024} {
					for fused := range int32(2) {
						name := []string{"push split, waits", "push fused, waits"}[fused]
						cfgs = append(cfgs, cfg{name, fmt.Sprintf(" %d chunks", chunks), 0, threads,
							func(i int, g *streamGPU, grid, block [3]uint32) error {
								b := g.bufs(g.codesRecv)
								b.CodesOut = on[1-i].codesRecv
								return Launch(g.staged, grid, block, 0, 0, b, groups, (groups+chunks-1)/chunks, fused,
									g.flags, on[1-i].flags)
							}})
					}
				}
			}
		}
		// The decoupled kernel in the same chunks, waiting on two GPUs (a2a_decoupled), the own piece in the
		// first half or split.
		for _, chunks := range []int64{8, 16, 32, 64} {
			for _, threads := range []uint32{256, 512, 1024} {
				for split := range int32(2) {
					name := []string{"decoupled", "decoupled, own split"}[split]
					if len(on) == 2 {
						name += ", waits"
					}
					cfgs = append(cfgs, cfg{name, fmt.Sprintf(" %d chunks", chunks), 0, threads,
						func(i int, g *streamGPU, grid, block [3]uint32) error {
							var peer DevicePtr
							if len(on) == 2 {
								peer = on[1-i].flags
							}
							return Launch(g.decoupled, grid, block, 0, 0, g.bufs(codes(i, g)), groups, groups/chunks,
								split, g.flags, peer)
						}})
				}
			}
		}
		for _, c := range cfgs {
			if !kinds(c.name) {
				continue
			}
			blocks := uint32(on[0].sms) * c.blocks
			if c.blocks == 0 {
				blocks = 128 // the LP kernels' grid
			}
			if c.threads*(blocks/uint32(on[0].sms)) > 2048 {
				continue
			}
			for _, g := range on {
				must(t, g.ctx.SetCurrent())
				must(t, MemsetD32Async(g.ownOut, 0, streamHalf/4, 0))
				must(t, MemsetD32Async(g.peerOut, 0, streamHalf/4, 0))
				must(t, MemsetD32Async(g.codesOut, 0, streamHalf/16, 0))
				must(t, MemsetD32Async(g.codesRecv, 0, streamHalf/16, 0))
				must(t, MemsetD32Async(g.flags, 0, streamFlagsBytes/4, 0))
			}
			grid, block := [3]uint32{blocks, 1, 1}, [3]uint32{c.threads, 1, 1}
			d := timeIt(on, func(i int, g *streamGPU) error { return c.launch(i, g, grid, block) })
			for _, g := range on {
				must(t, g.ctx.SetCurrent())
				checkWords(t, g.ownOut, streamHalf, streamOwn)
				if strings.HasPrefix(c.name, "push") {
					checkWords(t, g.codesRecv, streamHalf/4, streamCode)
				} else {
					checkWords(t, g.codesOut, streamHalf/4, streamCode)
				}
				checkWords(t, g.peerOut, streamHalf, streamCode&0xff<<24)
				gaveUp := make([]byte, 8)
				must(t, MemcpyDtoH(gaveUp, g.flags+2*128*8))
				if gaveUp[0] != 0 {
					t.Fatalf("%s%s: a block gave up waiting for the other GPU's", c.name, c.detail)
				}
			}
			row(fmt.Sprintf("%s%s %dx%d, %s", c.name, c.detail, blocks, c.threads, where), d)
			key := c.name + ", " + where
			if b, ok := best[key]; !ok || d < b {
				best[key] = d
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(best)) {
		fmt.Fprintf(&table, "best, %s: %.1f us\n", key, float64(best[key].Nanoseconds())/1e3)
	}
	t.Log("\n" + table.String())
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func event(t *testing.T) Event {
	t.Helper()
	e, err := EventCreate(true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Destroy() })
	return e
}

// checkWords fails unless the first and last 64 KiB of the bytes at p are 32-bit words of value want.
func checkWords(t *testing.T, p DevicePtr, bytes int64, want uint32) {
	t.Helper()
	const span = 64 << 10
	for _, off := range []int64{0, bytes - span} {
		b := make([]byte, span)
		must(t, MemcpyDtoH(b, p+DevicePtr(off)))
		for i := 0; i < span; i += 4 {
			if got := binary.LittleEndian.Uint32(b[i:]); got != want {
				t.Fatalf("word at byte %d: %#x, want %#x", off+int64(i), got, want)
			}
		}
	}
}
