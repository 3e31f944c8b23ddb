// direct.cu: alltoall of any size by peer stores, in rounds the host launches one after another (Args.x0: the
// round's first element of each piece, x1: its length, at most what fits n pieces in a data half; every round but the last a multiple of RX_VE).
// Each rank stores its piece for rank q straight into q's buffer (slot r), passes the barrier, and copies the
// slots of its own buffer to its output. Alternate rounds use alternate halves (see dda.cu).

RX_KERNEL direct_alltoall(Args a) {
  RX_COMM(c, a);
  const int h = c.next_half();
  const i64 p = a.count, off = a.x0, len = a.x1;
  i64 lo, hi;
  c.part(len, RX_VE, lo, hi);
  const T* in = (const T*)a.send + off + lo;
  RX_FOR_PEERS(c, q) copy_elems((T*)c.data(q, h) + c.r * len + lo, in + q * p, hi - lo);
  if (!barrier(c, 1)) return;
  const T* mine = (const T*)c.data(c.r, h) + lo;
  for (int q = 0; q < c.n; q++) copy_elems((T*)a.recv + q * p + off + lo, mine + q * len, hi - lo);
  c.save();
}

// The point-to-point collectives (broadcast, reduce, gather, scatter, sendrecv, alltoallv) move data the same
// way, in rounds the host launches one after another (Args.x0: the round's first element, x1: its length, a
// multiple of RX_VE but for the last round; x2: the root): every rank stores what a peer needs straight into that peer's data half
// (slot <sender> where a peer receives from several), passes the barrier, and copies its own half out. Every
// cross-GPU access is a store, and a rank's input is read only before the barrier, so in place is safe.

// broadcast: the root stores its piece into every peer's half and copies it to its own output.
RX_KERNEL direct_broadcast(Args a) {
  RX_COMM(c, a);
  const int h = c.next_half(), root = (int)a.x2;
  const i64 off = a.x0;
  i64 lo, hi;
  c.part(a.x1, RX_VE, lo, hi);
  const T* in = (const T*)a.send + off + lo;
  if (c.r == root) {
    RX_FOR_PEERS(c, q) if (q != root) copy_elems((T*)c.data(q, h) + lo, in, hi - lo);
    copy_elems((T*)a.recv + off + lo, in, hi - lo);
  }
  if (!barrier(c, 1)) return;
  if (c.r != root) copy_elems((T*)a.recv + off + lo, (const T*)c.data(c.r, h) + lo, hi - lo);
  c.save();
}

// reduce: every other rank stores its piece into the root's half (slot r); the root reduces in hostengine's
// order: its own input, then root+1, ..., root-1, each pre-multiplied (mulsum), then finish (avg).
RX_KERNEL direct_reduce(Args a) {
  RX_COMM(c, a);
  const int h = c.next_half(), root = (int)a.x2;
  const i64 off = a.x0, len = a.x1;
  i64 lo, hi;
  c.part(len, RX_VE, lo, hi);
  const T* in = (const T*)a.send + off;
  if (c.r != root) copy_elems((T*)c.data(root, h) + c.r * len + lo, in + lo, hi - lo);
  if (!barrier(c, 1)) return;
  if (c.r == root) {
    T* out = (T*)a.recv + off;
    const T* slots = (const T*)c.data(root, h);
    for (i64 i = lo + threadIdx.x; i < hi; i += blockDim.x) {
      T acc = premul(in[i], root);
      for (int s = 1; s < c.n; s++) {
        const int q = (root + s) % c.n;
        acc = combine(acc, premul(ld_volatile(slots + q * len + i), q));
      }
      out[i] = finish(acc, c.n);
    }
  }
  c.save();
}

// gather: piece q (count elements) lands at q*count of the root's output; every other rank stores its piece
// into the root's half (slot r).
RX_KERNEL direct_gather(Args a) {
  RX_COMM(c, a);
  const int h = c.next_half(), root = (int)a.x2;
  const i64 p = a.count, off = a.x0, len = a.x1;
  i64 lo, hi;
  c.part(len, RX_VE, lo, hi);
  const T* in = (const T*)a.send + off + lo;
  if (c.r != root) copy_elems((T*)c.data(root, h) + c.r * len + lo, in, hi - lo);
  else copy_elems((T*)a.recv + root * p + off + lo, in, hi - lo);
  if (!barrier(c, 1)) return;
  if (c.r == root)
    RX_FOR_PEERS(c, q) if (q != root) copy_elems((T*)a.recv + q * p + off + lo, (const T*)c.data(root, h) + q * len + lo, hi - lo);
  c.save();
}

// scatter: the root stores piece q (count elements at q*count of its input) into rank q's half.
RX_KERNEL direct_scatter(Args a) {
  RX_COMM(c, a);
  const int h = c.next_half(), root = (int)a.x2;
  const i64 p = a.count, off = a.x0;
  i64 lo, hi;
  c.part(a.x1, RX_VE, lo, hi);
  if (c.r == root) {
    const T* in = (const T*)a.send + off + lo;
    RX_FOR_PEERS(c, q) if (q != root) copy_elems((T*)c.data(q, h) + lo, in + q * p, hi - lo);
    copy_elems((T*)a.recv + off + lo, in + root * p, hi - lo);
  }
  if (!barrier(c, 1)) return;
  if (c.r != root) copy_elems((T*)a.recv + off + lo, (const T*)c.data(c.r, h) + lo, hi - lo);
  c.save();
}

// sendrecv: every rank stores its piece into rank r+1's half and copies rank r-1's out of its own.
RX_KERNEL direct_sendrecv(Args a) {
  RX_COMM(c, a);
  const int h = c.next_half();
  const i64 off = a.x0;
  i64 lo, hi;
  c.part(a.x1, RX_VE, lo, hi);
  copy_elems((T*)c.data((c.r + 1) % c.n, h) + lo, (const T*)a.send + off + lo, hi - lo);
  if (!barrier(c, 1)) return;
  copy_elems((T*)a.recv + off + lo, (const T*)c.data(c.r, h) + lo, hi - lo);
  c.save();
}

// alltoallv: Args.x3 points to this rank's table of 4n i64 in device memory: send counts, send displacements,
// receive counts, receive displacements, in elements per peer. A round moves elements [off, off+len) of every
// peer's part (less where a part is shorter) through slot <sender> of the receiver's half.
RX_KERNEL direct_alltoallv(Args a) {
  RX_COMM(c, a);
  const int h = c.next_half();
  const i64 off = a.x0, len = a.x1;
  const i64 *sc = (const i64*)a.x3, *sd = sc + c.n, *rc = sd + c.n, *rd = rc + c.n;
  i64 lo, hi;
  c.part(len, RX_VE, lo, hi);
  RX_FOR_PEERS(c, q) {
    const i64 e = clamp0(sc[q] - off, hi);
    if (lo < e) copy_elems((T*)c.data(q, h) + c.r * len + lo, (const T*)a.send + sd[q] + off + lo, e - lo);
  }
  if (!barrier(c, 1)) return;
  for (int q = 0; q < c.n; q++) {
    const i64 e = clamp0(rc[q] - off, hi);
    if (lo < e) copy_elems((T*)a.recv + rd[q] + off + lo, (const T*)c.data(c.r, h) + q * len + lo, e - lo);
  }
  c.save();
}
