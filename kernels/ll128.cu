// ll128.cu: DDA all_reduce one-shot over the LL128 protocol. LL (ll.cu) sends a 4-byte flag beside every 4
// data bytes, so its data takes twice its time on the link; LL128 sends 128-byte lines of 120 data bytes and an
// 8-byte flag, and relies on what NCCL's LL128 relies on: the 16-byte pieces of one 128-byte line that a warp
// stores in one instruction become visible over NVLink together, and a warp's one load of the line sees them
// together. Eight lanes carry a line, two 8-byte words each; the last word is the flag (the launch number plus
// one). A receiver loads the line until its flag is there: no barrier, no fence. Flags only grow, and lines sit
// at fixed places of an area that only this kernel writes (zeroed at open), alternating halves by launch as
// LL's does, so a stale line never matches. Results are the flat kernel's bits: sources combine in rank order,
// stored as T after every addition.

#if RX_OP == RX_SUM && (RX_DTYPE == RX_FLOAT || RX_DTYPE == RX_HALF || RX_DTYPE == RX_BFLOAT16)

#define RX_L8 (8 / (int)sizeof(T))  // elements per 8-byte word
#define RX_LINE_WORDS 16
#define RX_LINE_DATA 15  // data words of a line

union L8Word {
  u64 u;
  T e[RX_L8];
};

// Word d (RX_L8 elements) of a vector of count elements, zero past the end; and back.
RX_DEV u64 l8_load(const T* p, i64 count, i64 d) {
  const i64 e0 = d * RX_L8;
  if (e0 + RX_L8 <= count) return ((const u64*)p)[d];
  L8Word x = {0};
  for (int k = 0; k < RX_L8 && e0 + k < count; k++) x.e[k] = p[e0 + k];
  return x.u;
}
RX_DEV void l8_store(T* p, i64 count, i64 d, u64 v) {
  const i64 e0 = d * RX_L8;
  if (e0 + RX_L8 <= count) {
    ((u64*)p)[d] = v;
    return;
  }
  L8Word x;
  x.u = v;
  for (int k = 0; k < RX_L8 && e0 + k < count; k++) p[e0 + k] = x.e[k];
}
RX_DEV u64 l8_combine(u64 a, u64 b) {
  L8Word x, y;
  x.u = a;
  y.u = b;
  for (int k = 0; k < RX_L8; k++) x.e[k] = combine(x.e[k], y.e[k]);
  return x.u;
}

// Each warp carries 4 lines at a time (8 lanes a line); a lane's words are 2j and 2j+1 of its line, lane 7's
// second word the flag. Every rank sends its whole vector to every peer, then sums what it receives.
RX_KERNEL dda_all_reduce_flat_ll128(Args a) {
  grid_dep_sync();  // launched early (gpuengine plan.early)
  RX_COMM(c, a);
  const u64 launch = c.next_launch(), flag = launch + 1;
  const i64 h = (i64)(launch & 1);
  auto area = [&](int owner, int src) {
    return (u64*)(c.peer[owner] + RX_OFF_LL128 + (h * RX_LL128_MAXR + src) * RX_LL128_SLOT);
  };
  const T* in = (const T*)a.send;
  T* out = (T*)a.recv;
  const i64 L = cdiv(cdiv(a.count, RX_L8), RX_LINE_DATA);
  const int lane = threadIdx.x & 31, j = lane & 7;
  const bool last = j == 7;
  const i64 warps = (i64)gridDim.x * (blockDim.x / 32), warp = (i64)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  // Visits the lane's lines: f(line, its first data word, its place in a slot) returns false to stop. The loop
  // stays warp-uniform (the receive below votes across the warp), lanes past the end included.
  auto lines = [&](auto f) {
    for (i64 base = warp * 4; base < L; base += warps * 4) {
      const i64 line = base + lane / 8;
      if (!f(line, line * RX_LINE_DATA + 2 * j, line * RX_LINE_WORDS + 2 * j)) return;
    }
  };
  lines([&](i64 line, i64 d0, i64 w) {
    if (line < L) {
      const u64 m0 = l8_load(in, a.count, d0), m1 = last ? flag : l8_load(in, a.count, d0 + 1);
      RX_FOR_PEERS(c, q) if (q != c.r) st_line16(area(q, c.r) + w, m0, m1);
    }
    return true;
  });
  lines([&](i64 line, i64 d0, i64 w) {
    const bool on = line < L;
    u64 s0 = 0, s1 = 0;
    for (int q = 0; q < c.n; q++) {
      u64 x0 = 0, x1 = 0;
      if (q == c.r) {
        if (on) x0 = l8_load(in, a.count, d0), x1 = last ? 0 : l8_load(in, a.count, d0 + 1);
      } else {
        for (int spins = 1;; spins++) {
          if (on) ld_line16(area(c.r, q) + w, x0, x1);
          if (warp_all(!on || !last || x1 == flag)) break;
          if (spins % RX_ABORT_POLL == 0 && !warp_all(ld_volatile((const u32*)c.a.abort) == 0)) {
            if (lane == 0) *(volatile u32*)c.a.status = RX_PH_LL_RECV << 16 | q;
            return false;
          }
        }
      }
      s0 = q == 0 ? x0 : l8_combine(s0, x0);
      s1 = q == 0 ? x1 : l8_combine(s1, x1);
    }
    if (on) {
      l8_store(out, a.count, d0, s0);
      if (!last) l8_store(out, a.count, d0 + 1, s1);
    }
    return true;
  });
}

#endif
