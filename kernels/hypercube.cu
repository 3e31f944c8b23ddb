// hypercube.cu: all-gather in log2(n) pairwise steps (n a power of two), as hostengine's hypercube.go. The host
// launches every step of every round (Args.x0, x1: the round's part of each piece, as direct.cu; x2: the step
// t). At step t a rank holds the 2^t pieces of its group (the ranks that equal it above bit t); it stores their
// round parts into partner r^2^t's half (slot j for the group's j-th piece), passes the barrier, and copies the
// partner group's pieces out of its own half into its output. Each step is a launch of its own, so the next
// step reads what this block wrote, and alternate launches use alternate halves (dda.cu).
RX_KERNEL hypercube_step(Args a) {
  RX_COMM(c, a);
  const int h = c.next_half(), t = (int)a.x2, m = 1 << t;
  const int partner = c.r ^ m, mine = c.r & ~(m - 1), theirs = partner & ~(m - 1);
  const i64 p = a.count, off = a.x0;
  i64 lo, hi;
  c.part(a.x1, RX_VE, lo, hi);
  T* out = (T*)a.recv + off + lo;
  if (t == 0) {
    copy_elems(out + c.r * p, (const T*)a.send + off + lo, hi - lo);  // nothing to do in place
    block_sync();  // unaligned views: the copies below read what other threads of the block wrote
  }
  for (int j = 0; j < m; j++) copy_elems((T*)c.data(partner, h) + j * a.x1 + lo, out + (mine + j) * p, hi - lo);
  if (!barrier(c, 1)) return;
  for (int j = 0; j < m; j++) copy_elems(out + (theirs + j) * p, (const T*)c.data(c.r, h) + j * a.x1 + lo, hi - lo);
  c.save();
}
