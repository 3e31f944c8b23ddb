// ll.cu: DDA all_reduce for small vectors, LL style (low latency). A rank stores its data straight into the
// LL area of the rank that needs it, every 4 data bytes beside a 4-byte flag (the launch number plus one) in one
// 8-byte store, so a receiver needs no barrier and no fence: a word has arrived when its flag has. Flags only
// grow (the area is zeroed at open and only these kernels write it), so a stale word never matches, and launches
// alternate the area's halves as dda.cu's kernels alternate the data halves (the same argument covers reuse).
// Each thread owns words w of a piece (one-shot: the vector; two-shot: a slice) for every phase, so no thread
// waits for another thread of its own rank. Results are the flat and tree kernels' bits: sources combine in rank
// order, stored as T after every addition.
//
// LL area of a half: RX_LL_MAXR source slots of RX_LL_BYTES / 4 words. One-shot: slot q holds rank q's vector.
// Two-shot (at most RX_LL_MAXR / 2 ranks): slot q holds rank q's piece of this rank's slice (reduce-scatter),
// slot RX_LL_MAXR / 2 + q rank q's reduced slice (all-gather).

#if RX_OP == RX_SUM && (RX_DTYPE == RX_FLOAT || RX_DTYPE == RX_HALF || RX_DTYPE == RX_BFLOAT16)

#define RX_LL_PER (4 / (int)sizeof(T))  // elements per LL word

union LLWord {
  u32 u;
  T e[RX_LL_PER];
};

struct LL {
  Comm& c;
  u32 flag;
  int h;
  RX_DEV LL(Comm& cc) : c(cc) {
    const u64 l = c.next_launch();
    flag = (u32)(l + 1);
    h = (int)(l & 1);
  }
  RX_DEV u64* slot(int owner, int src) const {
    return (u64*)(c.peer[owner] + RX_OFF_LL) + ((i64)h * RX_LL_MAXR + src) * (RX_LL_BYTES / 4);
  }
  RX_DEV void send(int owner, int src, i64 w, LLWord x) const { st_relaxed_sys(slot(owner, src) + w, (u64)flag << 32 | x.u); }
  // Waits for word w of slot src in this rank's area; false when the host aborted (the phase recorded).
  RX_DEV bool recv(int src, i64 w, LLWord& x) const {
    const u64* p = slot(c.r, src) + w;
    u64 v;
    int spins = 0;
    while ((u32)((v = ld_relaxed_sys(p)) >> 32) != flag) {
      if (++spins == RX_ABORT_POLL) {
        spins = 0;
        if (ld_volatile((const u32*)c.a.abort)) {
          *(volatile u32*)c.a.status = RX_PH_LL_RECV << 16 | src;
          return false;
        }
      }
    }
    x.u = (u32)v;
    return true;
  }
  // acc = the rank-order sum of word w: this rank's word mine, every other rank q's from slot base + q.
  RX_DEV bool sum(int base, i64 w, LLWord mine, LLWord& acc) const {
    for (int q = 0; q < c.n; q++) {
      LLWord x = mine;
      if (q != c.r && !recv(base + q, w, x)) return false;
      if (q == 0) {
        acc = x;
      } else {
        for (int k = 0; k < RX_LL_PER; k++) acc.e[k] = combine(acc.e[k], x.e[k]);
      }
    }
    return true;
  }
};

// The ne (<= RX_LL_PER) elements at p as a word, and back.
RX_DEV LLWord ll_load(const T* p, i64 ne) {
  LLWord x = {0};
  for (int k = 0; k < ne; k++) x.e[k] = p[k];
  return x;
}
RX_DEV void ll_store(T* p, LLWord x, i64 ne) {
  for (int k = 0; k < ne; k++) p[k] = x.e[k];
}

#define RX_LL_WORDS(w, W) \
  for (i64 w = (i64)blockIdx.x * blockDim.x + threadIdx.x; w < (W); w += (i64)gridDim.x * blockDim.x)

// One-shot: every rank sends its whole vector (at most RX_LL_BYTES) to every peer and sums what it receives.
RX_KERNEL dda_all_reduce_flat_ll(Args a) {
  grid_dep_sync();  // launched early (gpuengine plan.early)
  RX_COMM(c, a);
  LL ll(c);
  const i64 W = cdiv(a.count, RX_LL_PER);
  auto ne = [&](i64 w) { return a.count - w * RX_LL_PER < RX_LL_PER ? a.count - w * RX_LL_PER : RX_LL_PER; };
  RX_LL_WORDS(w, W) {
    LLWord mine = ll_load((const T*)a.send + w * RX_LL_PER, ne(w)), acc;
    RX_FOR_PEERS(c, q) if (q != c.r) ll.send(q, c.r, w, mine);
    if (!ll.sum(0, w, mine, acc)) return;
    ll_store((T*)a.recv + w * RX_LL_PER, acc, ne(w));
  }
}

// Two-shot (count % n == 0, slices of at most RX_LL_BYTES): slice q of every rank goes to rank q, which sums
// it and sends the result to every peer.
RX_KERNEL dda_all_reduce_tree_ll(Args a) {
  grid_dep_sync();  // launched early (gpuengine plan.early)
  RX_COMM(c, a);
  LL ll(c);
  const i64 S = a.count / c.n, W = cdiv(S, RX_LL_PER);
  const int gather = RX_LL_MAXR / 2;
  const T* in = (const T*)a.send;
  T* out = (T*)a.recv;
  auto at = [&](int q, i64 w) { return q * S + w * RX_LL_PER; };  // element of word w of slice q
  auto ne = [&](i64 w) { return S - w * RX_LL_PER < RX_LL_PER ? S - w * RX_LL_PER : RX_LL_PER; };
  RX_LL_WORDS(w, W) {
    RX_FOR_PEERS(c, q) if (q != c.r) ll.send(q, c.r, w, ll_load(in + at(q, w), ne(w)));
  }
  RX_LL_WORDS(w, W) {
    LLWord acc;
    if (!ll.sum(0, w, ll_load(in + at(c.r, w), ne(w)), acc)) return;
    ll_store(out + at(c.r, w), acc, ne(w));
    RX_FOR_PEERS(c, q) if (q != c.r) ll.send(q, gather + c.r, w, acc);
  }
  RX_LL_WORDS(w, W) {
    RX_FOR_PEERS(c, q) {
      LLWord x;
      if (q == c.r) continue;
      if (!ll.recv(gather + q, w, x)) return;
      ll_store(out + at(q, w), x, ne(w));
    }
  }
}

#endif
