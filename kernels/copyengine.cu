// copyengine.cu: the reduction of the copy-engine transport (gpuengine/copyengine.go). The peers' pieces of the
// segment this rank completes arrived in its scratch by copy-engine copies; this kernel combines them with the
// rank's own piece in the ring's order (hostengine/ring.go), so the results equal the ring kernels' bit for bit.
//
// Args: send = this rank's own piece, recv = the output, count = elements, x0 = the scratch, x1 = elements
// between scratch slots (peer q's piece is in slot (r - q - 1) mod n), x2 = where the order starts, relative to
// this rank: 0 for all_reduce (a segment starts at its owner), 1 for reduce_scatter (at the next rank), x3 = 0 or
// the peer's output at the segment (all_reduce at 2 ranks, a segment of fewer than gpuengine's ceGatherChunks
// chunks), which gets every result too: stores over the link as the reduction goes, rather than a copy of the
// whole segment after it.

RX_KERNEL ce_reduce(Args a) {
  const int n = (int)a.nranks, r = (int)a.rank, first = (int)a.x2;
  const T* own = (const T*)a.send;
  const T* scratch = (const T*)a.x0;
  T* out = (T*)a.recv;
  T* far = (T*)a.x3;
  auto src = [&](int k) {  // the k-th source of the order, and its rank
    int q = (r + first + k) % n;
    return q == r ? own : scratch + (i64)((r - q - 1 + n) % n) * a.x1;
  };
  auto rank_of = [&](int k) { return (r + first + k) % n; };
  const i64 stride = (i64)gridDim.x * blockDim.x, t0 = (i64)blockIdx.x * blockDim.x + threadIdx.x;
  const bool vec = al16(own) && al16(out) && al16(scratch) && al16(far) && a.x1 % RX_VE == 0;
  const i64 nv = vec ? a.count / RX_VE : 0;
  for (i64 v = t0; v < nv; v += stride) {
    Pack acc, P;
    acc.v = ((const V16*)src(0))[v];
#pragma unroll
    for (int e = 0; e < RX_VE; e++) acc.e[e] = premul(acc.e[e], rank_of(0));
    for (int k = 1; k < n; k++) {
      P.v = ((const V16*)src(k))[v];
      const int q = rank_of(k);
#pragma unroll
      for (int e = 0; e < RX_VE; e++) acc.e[e] = combine(acc.e[e], premul(P.e[e], q));
    }
#pragma unroll
    for (int e = 0; e < RX_VE; e++) acc.e[e] = finish(acc.e[e], n);
    ((V16*)out)[v] = acc.v;
    if (far) ((V16*)far)[v] = acc.v;
  }
  for (i64 i = nv * RX_VE + t0; i < a.count; i += stride) {
    T acc = premul(src(0)[i], rank_of(0));
    for (int k = 1; k < n; k++) acc = combine(acc, premul(src(k)[i], rank_of(k)));
    acc = finish(acc, n);
    out[i] = acc;
    if (far) far[i] = acc;
  }
}
