// vec.cuh: element loops shared by the collectives. Each runs over the whole block, 16 bytes per thread per step
// when every pointer involved is 16-byte aligned (peer and FIFO memory always is; user buffers are unless -u
// shifts them), one element at a time otherwise. Data another GPU wrote, or that lives on another GPU, is read
// through L2 (ld_cg / ld_volatile).

union Pack {
  V16 v;
  T e[RX_VE];
};

RX_DEV bool al16(const void* p) { return ((u64)p & 15) == 0; }

// d0[i] = d1[i] = f(p[i], x[i]) for i < n; d0, d1, p and x may each be null (p: remote or peer-written data,
// x: this rank's own input).
template <class F>
RX_DEV void map2(T* d0, T* d1, const T* p, const T* x, i64 n, F f) {
  bool vec = al16(d0) && al16(d1) && al16(p) && al16(x);
  i64 nv = vec ? n / RX_VE : 0;
  for (i64 v = threadIdx.x; v < nv; v += blockDim.x) {
    Pack P, X, R;
    if (p) P.v = ld_cg((const V16*)p + v);
    if (x) X.v = ((const V16*)x)[v];
#pragma unroll
    for (int k = 0; k < RX_VE; k++) R.e[k] = f(P.e[k], X.e[k]);
    if (d0) ((V16*)d0)[v] = R.v;
    if (d1) ((V16*)d1)[v] = R.v;
  }
  for (i64 i = nv * RX_VE + threadIdx.x; i < n; i += blockDim.x) {
    T pv = p ? ld_volatile(p + i) : T(), xv = x ? x[i] : T();
    T v = f(pv, xv);
    if (d0) d0[i] = v;
    if (d1) d1[i] = v;
  }
}

// d[i] = ((src(0)[i] op src(1)[i]) op src(2)[i]) ... op src(nsrc-1)[i], stored as T after every step (as
// hostengine's DDA); src(q) returns source q's pointer, all at the same 16-byte alignment.
template <class S>
RX_DEV void reduce_sources(T* d, S src, int nsrc, i64 n) {
  bool vec = al16(d) && al16(src(0));
  i64 nv = vec ? n / RX_VE : 0;
  for (i64 v = threadIdx.x; v < nv; v += blockDim.x) {
    Pack acc = {ld_cg((const V16*)src(0) + v)}, P;
    for (int q = 1; q < nsrc; q++) {
      P.v = ld_cg((const V16*)src(q) + v);
#pragma unroll
      for (int k = 0; k < RX_VE; k++) acc.e[k] = combine(acc.e[k], P.e[k]);
    }
    ((V16*)d)[v] = acc.v;
  }
  for (i64 i = nv * RX_VE + threadIdx.x; i < n; i += blockDim.x) {
    T acc = ld_volatile(src(0) + i);
    for (int q = 1; q < nsrc; q++) acc = combine(acc, ld_volatile(src(q) + i));
    d[i] = acc;
  }
}

// Copies bytes from s (read through L2) to d.
RX_DEV void copy_bytes(u8* d, const u8* s, i64 bytes) {
  if (d == s) return;
  bool vec = al16(d) && al16(s);
  i64 nv = vec ? bytes / 16 : 0;
  for (i64 v = threadIdx.x; v < nv; v += blockDim.x) ((V16*)d)[v] = ld_cg((const V16*)s + v);
  for (i64 i = nv * 16 + threadIdx.x; i < bytes; i += blockDim.x) d[i] = ld_volatile(s + i);
}

RX_DEV void copy_elems(T* d, const T* s, i64 n) { copy_bytes((u8*)d, (const u8*)s, n * (i64)sizeof(T)); }
