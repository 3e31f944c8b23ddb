// lowprec.cu: RCCLX's low-precision (FP8 E4M3) collectives for float and bfloat16, sum only, DDA-style over
// the data halves (see dda.cu), in rounds the host launches one after another (Args.x0: the round's first
// element, x1: its length (a multiple of the unit below), x2: the LP block, x3: 0 for mode rcclx, 1 for
// mode scaled).
//
// As hostengine's lowprec.go: mode rcclx quantizes with a plain saturating cast to E4M3; mode scaled keeps one
// fp32 scale per LP block (scale = block amax / 448, or 1 where that is 0; code = E4M3(x / scale); value =
// decode(code) * scale). Blocks count from the start of each piece (all_reduce: each rank's slice; the others:
// each per-rank piece), so rounds start at multiples of the block. Ranks exchange codes and scales, dequantize
// and accumulate in fp32 in rank order 0..n-1. all_reduce re-quantizes the reduced slice (new scales) for its
// gather phase and every rank dequantizes every slice, its own included, so all ranks hold the same bits.
// reduce_scatter rounds the fp32 sum to T directly; all_gather and alltoall dequantize what they receive.
//
// Layout of a data half: the codes, then (16-byte aligned) the fp32 scales, one per LP block of codes.

#if RX_OP == RX_SUM && (RX_DTYPE == RX_FLOAT || RX_DTYPE == RX_BFLOAT16)

RX_DEV float abs32(float x) { return bits_f32(f32_bits(x) & 0x7fffffffu); }
RX_DEV float scale_of(float amax) {
  float s = amax / 448.0f;
  return s == 0 ? 1.0f : s;
}

// 16 elements at a 16-byte aligned address, as floats.
RX_DEV void load16(const T* p, float* f) {
  const V16* v = (const V16*)p;
#if RX_DTYPE == RX_FLOAT
#pragma unroll
  for (int k = 0; k < 4; k++) {
    V16 x = v[k];
#pragma unroll
    for (int j = 0; j < 4; j++) f[4 * k + j] = bits_f32(x.w[j]);
  }
#else
#pragma unroll
  for (int k = 0; k < 2; k++) {
    V16 x = v[k];
#pragma unroll
    for (int j = 0; j < 4; j++) {
      f[8 * k + 2 * j] = bf16_to_f32((u16)(x.w[j] & 0xffffu));
      f[8 * k + 2 * j + 1] = bf16_to_f32((u16)(x.w[j] >> 16));
    }
  }
#endif
}

RX_DEV void store16(T* p, const float* f) {
  V16* v = (V16*)p;
#if RX_DTYPE == RX_FLOAT
#pragma unroll
  for (int k = 0; k < 4; k++) {
    V16 x;
#pragma unroll
    for (int j = 0; j < 4; j++) x.w[j] = f32_bits(f[4 * k + j]);
    v[k] = x;
  }
#else
#pragma unroll
  for (int k = 0; k < 2; k++) {
    V16 x;
#pragma unroll
    for (int j = 0; j < 4; j++) x.w[j] = (u32)f32_to_bf16(f[8 * k + 2 * j]) | (u32)f32_to_bf16(f[8 * k + 2 * j + 1]) << 16;
    v[k] = x;
  }
#endif
}

RX_DEV V16 encode16(const float* f) {
  V16 v;
#pragma unroll
  for (int j = 0; j < 4; j++)
#ifdef RX_HW_E4M3
    v.w[j] = e4m3x2_hw(f[4 * j], f[4 * j + 1]) | e4m3x2_hw(f[4 * j + 2], f[4 * j + 3]) << 16;
#else
    v.w[j] = (u32)f32_to_e4m3(f[4 * j]) | (u32)f32_to_e4m3(f[4 * j + 1]) << 8 |
             (u32)f32_to_e4m3(f[4 * j + 2]) << 16 | (u32)f32_to_e4m3(f[4 * j + 3]) << 24;
#endif
  return v;
}

RX_DEV void decode16(V16 v, float* f) {
#pragma unroll
  for (int j = 0; j < 8; j++) {
#ifdef RX_HW_E4M3
    e4m3x2_decode_hw(v.w[j / 2] >> (16 * (j % 2)), f[2 * j], f[2 * j + 1]);
#else
    f[2 * j] = e4m3_to_f32((u8)(v.w[j / 2] >> (16 * (j % 2))));
    f[2 * j + 1] = e4m3_to_f32((u8)(v.w[j / 2] >> (16 * (j % 2) + 8)));
#endif
  }
}

struct LP {
  Comm& c;
  int h;
  i64 B;        // elements per scale
  bool scaled;
  i64 unit;     // pieces and block sub-ranges start at multiples of this (16, and of B when scaled)
  i64 scaleOff; // bytes from a half's start to its scales

  RX_DEV LP(Comm& cc, const Args& a) : c(cc), B(a.x2), scaled(a.x3 != 0) {
    h = c.next_half();
    i64 g = B & -B;
    unit = scaled ? B * 16 / (g < 16 ? g : 16) : 16;
  }
  RX_DEV u8* codes(int owner) const { return c.data(owner, h); }
  RX_DEV float* scales(int owner) const { return (float*)(c.data(owner, h) + scaleOff); }
  RX_DEV float value(int owner, i64 i) const {
    float v = e4m3_to_f32(ld_volatile(codes(owner) + i));
    return scaled ? v * ld_volatile(scales(owner) + i / B) : v;
  }
  RX_DEV float sum(i64 i) const {
    float acc = value(0, i);
    for (int q = 1; q < c.n; q++) acc += value(q, i);
    return acc;
  }

  // codes[at + i] = E4M3(src[i]) for i in [lo, hi) (lo a multiple of unit, at of B).
  RX_DEV void quantize(i64 at, const T* src, i64 lo, i64 hi) const {
    u8* q = codes(c.r) + at;
    if (scaled) {
      for (i64 s0 = lo + threadIdx.x * B; s0 < hi; s0 += blockDim.x * B) {
        i64 s1 = s0 + B < hi ? s0 + B : hi;
        float amax = 0;
        for (i64 i = s0; i < s1; i++) amax = go_max(amax, abs32(to_acc(src[i])));
        float scale = scale_of(amax);
        for (i64 i = s0; i < s1; i++) q[i] = f32_to_e4m3(to_acc(src[i]) / scale);
        scales(c.r)[(at + s0) / B] = scale;
      }
      return;
    }
    i64 full = al16(src + lo) ? (hi - lo) / 16 : 0;
    for (i64 g = threadIdx.x; g < full; g += blockDim.x) {
      float f[16];
      load16(src + lo + 16 * g, f);
      *(V16*)(q + lo + 16 * g) = encode16(f);
    }
    for (i64 i = lo + 16 * full + threadIdx.x; i < hi; i += blockDim.x) q[i] = f32_to_e4m3(to_acc(src[i]));
  }

  // dst[i] = T(value of owner's code at + i) for i in [lo, hi).
  RX_DEV void dequantize(T* dst, int owner, i64 at, i64 lo, i64 hi) const {
    i64 full = !scaled && al16(dst + lo) ? (hi - lo) / 16 : 0;
    for (i64 g = threadIdx.x; g < full; g += blockDim.x) {
      float f[16];
      decode16(ld_cg((const V16*)(codes(owner) + at + lo) + g), f);
      store16(dst + lo + 16 * g, f);
    }
    for (i64 i = lo + 16 * full + threadIdx.x; i < hi; i += blockDim.x) dst[i] = from_acc(value(owner, at + i));
  }

  // The fp32 sum over ranks of the codes at + i, i in [lo, hi): rounded into dst[i], or (dst null)
  // re-quantized in place into this rank's codes and scales (each element's sources are read before its code
  // is overwritten, and a block's old scale until the block is done).
  RX_DEV void reduce(T* dst, i64 at, i64 lo, i64 hi) const {
    u8* mine = codes(c.r) + at;
    if (scaled) {
      for (i64 s0 = lo + threadIdx.x * B; s0 < hi; s0 += blockDim.x * B) {
        i64 s1 = s0 + B < hi ? s0 + B : hi;
        if (dst) {
          for (i64 i = s0; i < s1; i++) dst[i] = from_acc(sum(at + i));
          continue;
        }
        float amax = 0;
        for (i64 i = s0; i < s1; i++) amax = go_max(amax, abs32(sum(at + i)));
        float scale = scale_of(amax);
        for (i64 i = s0; i < s1; i++) mine[i] = f32_to_e4m3(sum(at + i) / scale);
        scales(c.r)[(at + s0) / B] = scale;
      }
      return;
    }
    i64 full = !dst || al16(dst + lo) ? (hi - lo) / 16 : 0;
    for (i64 g = threadIdx.x; g < full; g += blockDim.x) {
      float acc[16], f[16];
      decode16(ld_cg((const V16*)(codes(0) + at + lo) + g), acc);
      for (int q = 1; q < c.n; q++) {
        decode16(ld_cg((const V16*)(codes(q) + at + lo) + g), f);
#pragma unroll
        for (int j = 0; j < 16; j++) acc[j] += f[j];
      }
      if (dst) {
        store16(dst + lo + 16 * g, acc);
      } else {
        *(V16*)(mine + lo + 16 * g) = encode16(acc);
      }
    }
    for (i64 i = lo + 16 * full + threadIdx.x; i < hi; i += blockDim.x) {
      float v = sum(at + i);
      if (dst) {
        dst[i] = from_acc(v);
      } else {
        mine[i] = f32_to_e4m3(v);
      }
    }
  }
};

RX_DEV i64 clip(i64 hi, i64 len) { return hi < len ? hi : len; }

// all_reduce round: rank q's slice is [q*count/n, (q+1)*count/n) (as hostengine), and a round covers
// elements [x0, x0+x1) of every slice; slice q's codes sit at q*x1.
RX_KERNEL lp_all_reduce(Args a) {
  RX_COMM(c, a);
  LP lp(c, a);
  const i64 R = a.x1;
  lp.scaleOff = c.n * R;
  i64 lo, hi;
  c.part(R, lp.unit, lo, hi);
  auto first = [&](int q) { return q * a.count / c.n + a.x0; };  // the round's first element of slice q
  auto end = [&](int q) { return clip(hi, (q + 1) * a.count / c.n - first(q)); };
  for (int q = 0; q < c.n; q++) lp.quantize(q * R, (const T*)a.send + first(q), lo, end(q));
  if (!barrier(c, 1)) return;
  lp.reduce((T*)0, c.r * R, lo, end(c.r));
  if (!barrier(c, 2)) return;
  RX_FOR_PEERS(c, q) lp.dequantize((T*)a.recv + first(q), q, q * R, lo, end(q));
  c.save();
}

// The first phase of reduce_scatter and alltoall rounds: the codes of every piece q of this rank's input at
// q * cp (this block's [lo, hi) of the round), then the barrier (false: it gave up).
RX_DEV bool stage_codes(LP& lp, const Args& a, i64 cp, i64 lo, i64 hi) {
  for (int q = 0; q < lp.c.n; q++) lp.quantize(q * cp, (const T*)a.send + q * a.count + a.x0, lo, hi);
  return barrier(lp.c, 1);
}

// reduce_scatter round: the codes of piece q sit at q * roundup(len, unit).
RX_KERNEL lp_reduce_scatter(Args a) {
  RX_COMM(c, a);
  LP lp(c, a);
  const i64 len = a.x1, cp = roundup(len, lp.unit);
  lp.scaleOff = c.n * cp;
  i64 lo, hi;
  c.part(len, lp.unit, lo, hi);
  if (!stage_codes(lp, a, cp, lo, hi)) return;
  lp.reduce((T*)a.recv + a.x0, c.r * cp, lo, hi);
  c.save();
}

// all_gather round: each rank's codes of its own piece.
RX_KERNEL lp_all_gather(Args a) {
  RX_COMM(c, a);
  LP lp(c, a);
  const i64 len = a.x1;
  lp.scaleOff = roundup(len, 16);
  i64 lo, hi;
  c.part(len, lp.unit, lo, hi);
  lp.quantize(0, (const T*)a.send + a.x0, lo, hi);
  if (!barrier(c, 1)) return;
  RX_FOR_PEERS(c, q) lp.dequantize((T*)a.recv + q * a.count + a.x0, q, 0, lo, hi);
  c.save();
}

// alltoall round: as reduce_scatter's layout; rank r dequantizes piece r of every rank.
RX_KERNEL lp_alltoall(Args a) {
  RX_COMM(c, a);
  LP lp(c, a);
  const i64 len = a.x1, cp = roundup(len, lp.unit);
  lp.scaleOff = c.n * cp;
  i64 lo, hi;
  c.part(len, lp.unit, lo, hi);
  if (!stage_codes(lp, a, cp, lo, hi)) return;
  RX_FOR_PEERS(c, q) lp.dequantize((T*)a.recv + q * a.count + a.x0, q, c.r * cp, lo, hi);
  c.save();
}

#endif
