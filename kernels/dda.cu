// dda.cu: RCCLX's direct-data-access algorithms (SPEC section 5), sum only. Each rank copies its input into its
// own peer-visible buffer, passes the barrier, and reads what it needs straight from every peer's buffer.
// Block b copies and reads the same sub-range on every rank, so the per-block barrier orders exactly the data
// it reads. The buffer has two halves used by alternate launches (Comm::next_half): a rank can only start
// launch L+1 after its launch L passed a barrier, which every peer reached only after finishing launch L-1,
// the last user of that half; so no closing barrier is needed.
//
// Reduction order (as hostengine's dda.go): ((in_0 + in_1) + in_2) + ... + in_n-1 in rank order, stored as T
// after every addition.

#if RX_OP == RX_SUM

// One-shot all_reduce: every rank reads the whole vector from every peer.
RX_KERNEL dda_all_reduce_flat(Args a) {
  grid_dep_sync();  // launched early (gpuengine plan.early)
  RX_COMM(c, a);
  const int h = c.next_half();
  i64 lo, hi;
  c.part(a.count, RX_VE, lo, hi);
  copy_elems((T*)c.data(c.r, h) + lo, (const T*)a.send + lo, hi - lo);
  if (!barrier(c, 1)) return;
  reduce_sources((T*)a.recv + lo, [&](int q) { return (const T*)c.data(q, h) + lo; }, c.n, hi - lo);
  c.save();
}

// One-shot all_reduce, push style: every rank stores its input into slot r of every rank's half (its own
// too, so that every source of the sum shares one alignment), passes the barrier and sums its own slots in rank
// order. A rank sends (n - 1) times the vector, so only 2 ranks use it (gpuengine plan.go), where the two-shot
// sends as much and passes one more barrier. The half holds n slots of the vector, RX_VE-aligned.
RX_KERNEL dda_all_reduce_push(Args a) {
  grid_dep_sync();  // launched early (gpuengine plan.early)
  RX_COMM(c, a);
  const int h = c.next_half();
  const i64 Cp = roundup(a.count, RX_VE);
  i64 lo, hi;
  c.part(a.count, RX_VE, lo, hi);
  auto slot = [&](int owner, int src) { return (T*)c.data(owner, h) + src * Cp + lo; };
  RX_FOR_PEERS(c, q) copy_elems(slot(q, c.r), (const T*)a.send + lo, hi - lo);
  if (!barrier(c, 1)) return;
  reduce_sources((T*)a.recv + lo, [&](int q) { return (const T*)slot(c.r, q); }, c.n, hi - lo);
  c.save();
}

// Two-shot all_reduce (count % n == 0), push style: every cross-GPU access is a store and every load is local.
// Each rank stores slice q of its input into rank q's reduce-scatter slots (slot r), passes the barrier,
// reduces its own slice from its own slots in rank order into its output and stores the result into every
// peer's all-gather slots (slot r), passes the barrier, and copies the peers' reduced slices out of its own
// all-gather slots. Slices sit RX_VE-aligned: the half holds 2n of them (gpuengine's halfBytes).
RX_KERNEL dda_all_reduce_tree(Args a) {
  grid_dep_sync();  // launched early (gpuengine plan.early)
  RX_COMM(c, a);
  const int h = c.next_half();
  const i64 S = a.count / c.n, Sp = roundup(S, RX_VE);
  i64 lo, hi;
  c.part(S, RX_VE, lo, hi);
  auto rs = [&](int owner, int src) { return (T*)c.data(owner, h) + src * Sp + lo; };
  auto ag = [&](int owner, int src) { return (T*)c.data(owner, h) + (c.n + src) * Sp + lo; };
  RX_FOR_PEERS(c, q) copy_elems(rs(q, c.r), (const T*)a.send + q * S + lo, hi - lo);
  if (!barrier(c, 1)) return;
  T* mine = (T*)a.recv + c.r * S + lo;
  reduce_sources(mine, [&](int q) { return (const T*)rs(c.r, q); }, c.n, hi - lo);
  block_sync();  // unaligned views: the copies below read what other threads of the block reduced
  RX_FOR_PEERS(c, q) if (q != c.r) copy_elems(ag(q, c.r), mine, hi - lo);
  if (!barrier(c, 2)) return;
  RX_FOR_PEERS(c, q) if (q != c.r) copy_elems((T*)a.recv + q * S + lo, ag(c.r, q), hi - lo);
  c.save();
}

#endif

// all_gather: the piece of rank q lands at q*count.
RX_KERNEL dda_all_gather(Args a) {
  grid_dep_sync();  // launched early (gpuengine plan.early)
  RX_COMM(c, a);
  const int h = c.next_half();
  const i64 p = a.count;
  i64 lo, hi;
  c.part(p, RX_VE, lo, hi);
  copy_elems((T*)c.data(c.r, h) + lo, (const T*)a.send + lo, hi - lo);
  if (!barrier(c, 1)) return;
  RX_FOR_PEERS(c, q) copy_elems((T*)a.recv + q * p + lo, (const T*)c.data(q, h) + lo, hi - lo);
  c.save();
}

// The first phase of reduce_scatter and alltoall: every piece of this rank's input (p elements each; this
// block's [lo, hi) of it) into its half h at the piece's offset, then the barrier (false: it gave up).
RX_DEV bool stage_pieces(Comm& c, const Args& a, int h, i64 p, i64 lo, i64 hi) {
  for (int q = 0; q < c.n; q++) copy_elems((T*)c.data(c.r, h) + q * p + lo, (const T*)a.send + q * p + lo, hi - lo);
  return barrier(c, 1);
}

#if RX_OP == RX_SUM
// reduce_scatter: rank r sums piece r of every rank.
RX_KERNEL dda_reduce_scatter(Args a) {
  grid_dep_sync();  // launched early (gpuengine plan.early)
  RX_COMM(c, a);
  const int h = c.next_half();
  const i64 p = a.count;
  i64 lo, hi;
  c.part(p, RX_VE, lo, hi);
  if (!stage_pieces(c, a, h, p, lo, hi)) return;
  const i64 at = c.r * p + lo;
  reduce_sources((T*)a.recv + lo, [&](int q) { return (const T*)c.data(q, h) + at; }, c.n, hi - lo);
  c.save();
}
#endif

// alltoall: piece r of rank q lands at q*count.
RX_KERNEL dda_alltoall(Args a) {
  grid_dep_sync();  // launched early (gpuengine plan.early)
  RX_COMM(c, a);
  const int h = c.next_half();
  const i64 p = a.count;
  i64 lo, hi;
  c.part(p, RX_VE, lo, hi);
  if (!stage_pieces(c, a, h, p, lo, hi)) return;
  RX_FOR_PEERS(c, q) copy_elems((T*)a.recv + q * p + lo, (const T*)c.data(q, h) + c.r * p + lo, hi - lo);
  c.save();
}
