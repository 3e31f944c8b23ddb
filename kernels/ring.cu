// ring.cu: ring all_reduce (reduce-scatter then all-gather), ring all_gather and ring reduce_scatter.
//
// Each block is an independent ring channel: it owns the same sub-range of every segment on every rank and
// moves it in messages of at most RX_SLOT_BYTES through a FIFO of RX_NSLOTS slots in the next rank's buffer.
// The sender stores the message into the slot (peer stores), then publishes its sequence number in the slot's
// head flag (release, system scope); the receiver waits for the flag, uses the slot and returns it by
// publishing its received count in the sender's tail word. Sequence numbers persist across launches.
//
// Reduction order (as hostengine's ring.go): all_reduce's segment j is started by rank j with its own input and
// completed by rank j-1; reduce_scatter's segment j starts at rank j+1 and ends at rank j. Each rank on the way
// combines (received partial, own input): pre(x[j]) op pre(x[j+1]) op ..., every partial result stored as T.
// The completing rank then starts the all-gather of its segment (all_reduce); all_gather starts with each
// rank's own piece.
//
// Segments: all_reduce splits N elements into n segments of roundup(ceil(N/n), RX_VE) elements (the last ones
// shorter or empty); all_gather and reduce_scatter use the per-rank pieces. Each segment is split over the grid
// in units of RX_VE, and each block walks its sub-range in messages; messages past a segment's end are empty
// but still exchanged, so both sides count alike.

#define RX_AR 0
#define RX_AG 1
#define RX_RS 2

struct Ring {
  Comm& c;
  int next, prev;
  RX_DEV Ring(Comm& cc) : c(cc), next((cc.r + 1) % cc.n), prev((cc.r + cc.n - 1) % cc.n) {}

  RX_DEV T* slot(int owner, u64 seq) const {
    return (T*)(c.peer[owner] + RX_OFF_FIFO + ((i64)c.b * RX_NSLOTS + (i64)(seq % RX_NSLOTS)) * RX_SLOT_BYTES);
  }
  RX_DEV u64* head(int owner, u64 seq) const {
    return (u64*)(c.peer[owner] + RX_OFF_HEAD) + (c.b * RX_NSLOTS + seq % RX_NSLOTS);
  }
  RX_DEV u64* tail(int owner) const { return (u64*)(c.peer[owner] + RX_OFF_TAIL + c.b * 128); }

  // One ring step: optionally receive the next message from prev, optionally send one to next. f(d0, d1, p)
  // does the element work, with d1 the outgoing slot (or null) and p the incoming one (or null).
  template <class F>
  RX_DEV bool step(bool recv, bool send, int stepNo, F f) {
    bool ok = true;
    if (threadIdx.x == 0) {
      if (recv) ok = c.wait_geq(head(c.r, c.recvd + 1), c.recvd + 1, RX_PH_RING_RECV << 16 | stepNo);
      if (ok && send && c.sent + 1 > RX_NSLOTS)
        ok = c.wait_geq(tail(c.r), c.sent + 1 - RX_NSLOTS, RX_PH_RING_SEND << 16 | stepNo);
    }
    if (block_any(!ok)) return false;
    f(send ? slot(next, c.sent + 1) : (T*)0, recv ? slot(c.r, c.recvd + 1) : (const T*)0);
    block_sync();
    if (threadIdx.x == 0) {
      if (send) st_release_sys(head(next, c.sent + 1), c.sent + 1);
      if (recv) st_release_sys(tail(prev), c.recvd + 1);
    }
    if (send) c.sent++;
    if (recv) c.recvd++;
    return true;
  }
};

template <int COLL>
RX_DEV void ring_run(const Args& args) {
  RX_COMM(c, args);
  Ring ring(c);
  const int n = c.n, r = c.r;
  const T* in = (const T*)args.send;
  T* out = (T*)args.recv;
  const i64 total = COLL == RX_AR ? args.count : args.count * n;
  const i64 seg = COLL == RX_AR ? roundup(cdiv(total, n), RX_VE) : args.count;
  const i64 sub = roundup(cdiv(seg, gridDim.x), RX_VE);
  const i64 slotE = RX_SLOT_BYTES / sizeof(T);
  const i64 iters = cdiv(sub, slotE);
  auto mod = [n](int v) { return ((v % n) + n) % n; };
  for (i64 it = 0; it < iters; it++) {
    const i64 off = c.b * sub + it * slotE;
    // Elements of segment s in this message, and where they sit in the input and the output.
    auto len = [&](int s) {
      i64 end = COLL == RX_AR ? clamp0(total - s * seg, seg) : seg;
      end = end < c.b * sub + sub ? end : c.b * sub + sub;
      return clamp0(end - off, slotE);
    };
    auto src = [&](int s) { return in + (COLL == RX_AG ? 0 : s * seg) + off; };
    auto dst = [&](int s) { return out + (COLL == RX_RS ? 0 : s * seg) + off; };
    // Reduce-scatter: at step k rank r handles segment r+o-k (o = 0 for all_reduce, -1 for reduce_scatter);
    // the last step completes segment done = r+o+1. All-gather step k forwards segment done-k.
    const int o = COLL == RX_AR ? 0 : -1;
    const int done = COLL == RX_AG ? r : mod(r + o + 1);
    int stepNo = 0;
    if (COLL == RX_AG) {
      if (!ring.step(false, true, stepNo++, [&](T* d1, const T*) {
            map2(dst(r) == src(r) ? (T*)0 : dst(r), d1, 0, src(r), len(r), [](T, T x) { return x; });
          }))
        return;
    } else {
      int s = mod(r + o);
      if (!ring.step(false, true, stepNo++, [&](T* d1, const T*) {
            map2(d1, 0, 0, src(s), len(s), [r](T, T x) { return premul(x, r); });
          }))
        return;
      for (int k = 1; k < n - 1; k++) {
        s = mod(r + o - k);
        if (!ring.step(true, true, stepNo++, [&](T* d1, const T* p) {
              map2(d1, 0, p, src(s), len(s), [r](T pv, T x) { return combine(pv, premul(x, r)); });
            }))
          return;
      }
      if (!ring.step(true, COLL == RX_AR, stepNo++, [&](T* d1, const T* p) {
            map2(dst(done), d1, p, src(done), len(done),
                 [r, n](T pv, T x) { return finish(combine(pv, premul(x, r)), n); });
          }))
        return;
    }
    if (COLL != RX_RS) {
      for (int k = 1; k < n; k++) {
        int s = mod(done - k);
        if (!ring.step(true, k < n - 1, stepNo++, [&](T* d1, const T* p) {
              map2(dst(s), d1, p, 0, len(s), [](T pv, T) { return pv; });
            }))
          return;
      }
    }
  }
  c.save();
}

RX_KERNEL ring_all_reduce(Args a) { ring_run<RX_AR>(a); }
RX_KERNEL ring_all_gather(Args a) { ring_run<RX_AG>(a); }
RX_KERNEL ring_reduce_scatter(Args a) { ring_run<RX_RS>(a); }
