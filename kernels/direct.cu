// direct.cu: alltoall of any size by peer stores, in rounds the host launches one after another (Args.x0: the
// round's first element of each piece, x1: its length, a multiple of RX_VE that fits n pieces in a data half).
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
