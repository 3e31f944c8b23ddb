// lowprec.cu: RCCLX's low-precision (FP8 E4M3) collectives for float and bfloat16, sum only, DDA-style over
// the data halves (see dda.cu). One launch per call runs its chunks as a pipeline (lp_chunk): Args.x1 is
// the chunk length (a multiple of the unit below), x2 the LP block, x3 the mode, 0 for mode rcclx (lp_*, where
// the engine passes 0) and 1 for mode scaled (lp_*_scaled, which sets it); x0 is 1 where all_gather pushes.
//
// As hostengine's lowprec.go: mode rcclx quantizes with a plain saturating cast to E4M3; mode scaled keeps one
// fp32 scale per LP block (scale = block amax / RX_E4M3_MAX, 448 or 240 in FNUZ, or 1 where that is 0;
// code = E4M3(x / scale); value = decode(code) * scale). Blocks count from the start of each piece
// (all_reduce: each rank's slice; the others: each per-rank piece), so chunks start at multiples of the block.
// Ranks exchange codes and scales, dequantize and accumulate in fp32 in rank order 0..n-1. all_reduce
// re-quantizes the reduced slice (new scales) for its gather phase and every rank dequantizes every slice, its
// own included, so all ranks hold the same bits.
// reduce_scatter rounds the fp32 sum to T directly; all_gather and alltoall dequantize what they receive.
//
// all_reduce pushes: codes go straight from registers into the half of the rank that sums or decodes them
// (16-byte stores over the link), a slot per source rank, and its loads of codes are from its own half. The
// other collectives pull: each rank quantizes into its own half and reads its peers' (on 2 H100s pushing
// measured 5-10% slower for all_gather; for float reduce_scatter 4% faster at 1 GiB but 24% slower at 256 MiB,
// and 2% slower for alltoall, on 2 H200s 9-19% slower from 64 MiB), except an all_gather of one chunk, which
// pushes (gpuengine's makePlan says why), and float alltoall on sm_90 in mode rcclx, which pushes through the
// SMs' bulk copies (lp_alltoall_bulk). The launch's half is split in two buffers
// (LP::sub, gpuengine's lpBuffer), chunk k in buffer k % 2; a buffer holds the codes, then (16-byte aligned)
// the fp32 scales, scale j for the codes at [j*B, (j+1)*B) of the buffer (pieces and slots start at multiples
// of the unit, so no LP block straddles two). A call of several chunks gives each stage warps of its own
// (lp_split).

#if RX_OP == RX_SUM && (RX_DTYPE == RX_FLOAT || RX_DTYPE == RX_BFLOAT16)

RX_DEV float abs32(float x) { return bits_f32(f32_bits(x) & 0x7fffffffu); }
RX_DEV float scale_of(float amax) {
  float s = amax / RX_E4M3_MAX;
  return s == 0 ? 1.0f : s;
}

// 16 elements at a 16-byte aligned address, as floats. bfloat16's inputs and outputs (load16, store16) are
// evict-first in L2 (ld_stream, st_stream): on 2 H200s that moved bfloat16 LP times by -5..+2%, most sizes
// faster (all_reduce mostly -1..-3%, alltoall -2..-5%); float's stay plain (streamed loads, stores or both:
// -2..+4% across its LP collectives).
RX_DEV void unpack16(const V16* x, float* f) {
#if RX_DTYPE == RX_FLOAT
#pragma unroll
  for (int k = 0; k < 4; k++) {
#pragma unroll
    for (int j = 0; j < 4; j++) f[4 * k + j] = bits_f32(x[k].w[j]);
  }
#else
#pragma unroll
  for (int k = 0; k < 2; k++) {
#pragma unroll
    for (int j = 0; j < 4; j++) {
      f[8 * k + 2 * j] = bf16_to_f32((u16)(x[k].w[j] & 0xffffu));
      f[8 * k + 2 * j + 1] = bf16_to_f32((u16)(x[k].w[j] >> 16));
    }
  }
#endif
}
RX_DEV void load16(const T* p, float* f) {
  const V16* v = (const V16*)p;
  V16 x[4];
#if RX_DTYPE == RX_FLOAT
#pragma unroll
  for (int k = 0; k < 4; k++) x[k] = v[k];
#else
#pragma unroll
  for (int k = 0; k < 2; k++) x[k] = ld_stream(v + k);
#endif
  unpack16(x, f);
}

// Two floats as bfloat16 (lo in the low half), the bits of convert.cuh's f32_to_bf16.
RX_DEV u32 bf16x2(float lo, float hi) {
#ifdef RX_HW_BF16
  return bf16x2_hw(lo, hi);
#else
  return (u32)f32_to_bf16(lo) | (u32)f32_to_bf16(hi) << 16;
#endif
}

RX_DEV void pack16(const float* f, V16* x) {
#if RX_DTYPE == RX_FLOAT
#pragma unroll
  for (int k = 0; k < 4; k++) {
#pragma unroll
    for (int j = 0; j < 4; j++) x[k].w[j] = f32_bits(f[4 * k + j]);
  }
#else
#pragma unroll
  for (int k = 0; k < 2; k++) {
#pragma unroll
    for (int j = 0; j < 4; j++) x[k].w[j] = bf16x2(f[8 * k + 2 * j], f[8 * k + 2 * j + 1]);
  }
#endif
}
RX_DEV void store16(T* p, const float* f) {
  V16* v = (V16*)p;
  V16 x[4];
  pack16(f, x);
#if RX_DTYPE == RX_FLOAT
#pragma unroll
  for (int k = 0; k < 4; k++) v[k] = x[k];
#else
#pragma unroll
  for (int k = 0; k < 2; k++) st_stream(v + k, x[k]);
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

// The stages' crews are whole hardware warps of 1 << RX_WARP_SHIFT threads: 6 where a wavefront has 64 lanes (AMD
// Instinct), whose half-wave crews would put two stages in one wavefront, which then runs both in turn. Every
// block size of these kernels is a multiple of 64.
#ifndef RX_WARP_SHIFT
#define RX_WARP_SHIFT 5
#endif

// The element loops below take 16-element groups (a 16-byte vector of codes), one per thread of the stage's
// crew (LP::tid, nt) per step. Every lane of a warp runs the same steps (groups past the end are marked off),
// so the lanes of one LP block can combine their maxima with shuffles. (Four groups per thread per step in
// every loop, their loads issued together, measured slower on H100: 128 registers with spills.)
#define RX_LP_GROUPS(full, g) for (i64 g = tid; g - (tid & 31) < (full); g += nt)

#define RX_LP_PEERS (-1)  // LP::each: every peer's half
#define RX_LP_NONE (-2)   // LP::each: no half (the codes' values stay on this rank)

struct LP {
  Comm& c;
  int h;
  i64 B;        // elements per scale
  bool scaled;
  i64 unit;     // slots, pieces and block sub-ranges start at multiples of this (16, and of B when scaled)
  i64 scaleOff; // bytes from a buffer's start to its scales
  i64 sub;      // bytes of each of the half's two buffers, 16-byte aligned
  i64 sb = 0;   // the present chunk's buffer: its offset in the half
  // Mode scaled in groups: a group lies in one LP block when B is a multiple of 16 (grouped), and the w = B/16
  // lanes of a block combine their maxima when w is a power of two up to 32 (w > 0); otherwise, or for the
  // last partial LP block, a 32-lane group walks each block (per_block).
  bool grouped;
  int w;
  // The threads that run this thread's stages (crew): this thread's index among them and their number, a
  // multiple of 32 (the element loops stride by it).
  int tid = (int)threadIdx.x, nt = (int)blockDim.x;

  RX_DEV LP(Comm& cc, const Args& a) : c(cc), B(a.x2), scaled(a.x3 != 0) {
    h = c.next_half();
    sub = a.half / 2 / 16 * 16;
    i64 g = B & -B;
    unit = scaled ? B * 16 / (g < 16 ? g : 16) : 16;
    grouped = !scaled || B % 16 == 0;
    w = !scaled ? 1 : (grouped && B <= 512 && g == B ? (int)(B / 16) : 0);
  }
  RX_DEV void at(i64 chunk) { sb = (chunk & 1) * sub; }
  // Splits the block's warps between the stages, stage j taking warps[j] of them (the last stage the rest),
  // and makes this thread one of its stage's crew; returns that stage.
  RX_DEV int crew(const int* warps, int stages) {
    const int warp = (int)(threadIdx.x >> RX_WARP_SHIFT), all = (int)(blockDim.x >> RX_WARP_SHIFT);
    int first = 0, j = 0;
    for (; j < stages - 1 && warp >= first + warps[j]; j++) first += warps[j];
    const int count = j < stages - 1 ? warps[j] : all - first;
    tid = (int)threadIdx.x - (first << RX_WARP_SHIFT);
    nt = count << RX_WARP_SHIFT;
    return j;
  }
  RX_DEV u8* codes(int owner) const { return c.data(owner, h) + sb; }
  RX_DEV float* scales(int owner) const { return (float*)(c.data(owner, h) + sb + scaleOff); }
  // f(o) for every rank o whose half takes a piece: rank to, every peer (RX_LP_PEERS), or none (RX_LP_NONE).
  template <class F>
  RX_DEV void each(int to, F f) const {
    if (to >= 0) {
      f(to);
      return;
    }
    if (to == RX_LP_PEERS) RX_FOR_PEERS(c, o) if (o != c.r) f(o);
  }
  // Where source rank q's codes of a piece start: pulled (stride 0), at offset 0 of rank q's half; pushed,
  // in slot q of this rank's half, at q * stride.
  RX_DEV int src_owner(int q, i64 stride) const { return stride ? c.r : q; }
  // The value of owner's code at i.
  RX_DEV float value(int owner, i64 i) const {
    float v = e4m3_to_f32(ld_volatile(codes(owner) + i));
    return scaled ? v * ld_volatile(scales(owner) + i / B) : v;
  }
  // The fp32 sum in rank order of the values at i of every source (src_owner).
  RX_DEV float sum(i64 stride, i64 i) const {
    float acc = value(src_owner(0, stride), i);
    for (int q = 1; q < c.n; q++) acc += value(src_owner(q, stride), q * stride + i);
    return acc;
  }
  // The group loops take the mode as a template argument S (scaled), so that mode rcclx's loops hold no trace
  // of mode scaled.
  // Owner's codes of the 16 elements from i and, in mode scaled, their block's scale (1 in mode rcclx).
  template <bool S>
  RX_DEV void load_codes(int owner, i64 i, V16& v, float& s) const {
    v = ld_cg((const V16*)(codes(owner) + i));
    s = S ? ld_volatile(scales(owner) + i / B) : 1.0f;
  }
  // v decoded, and in mode scaled times s (mode rcclx multiplies by nothing, which could change a NaN's bits).
  template <bool S>
  RX_DEV static void decode_scaled(V16 v, float s, float* f) {
    decode16(v, f);
    if (S) {
#pragma unroll
      for (int j = 0; j < 16; j++) f[j] *= s;
    }
  }
  // Owner's code group g from offset at, decoded into f; zeros past full. Both loads are issued before the
  // decode, so their latencies overlap.
  template <bool S>
  RX_DEV void load_group(int owner, i64 at, i64 full, i64 g, float* f) const {
    if (g < full) {
      V16 v;
      float s;
      load_codes<S>(owner, at + 16 * g, v, s);
      decode_scaled<S>(v, s, f);
    } else {
#pragma unroll
      for (int j = 0; j < 16; j++) f[j] = 0;
    }
  }
  // acc = the rank-order sum of group g of every source (src_owner; the groups from at), this rank's own
  // value made from its input in (encoded and decoded here, the bits its codes would give).
  template <bool S>
  RX_DEV void sum_group(i64 stride, i64 at, i64 full, i64 g, float* acc, const T* in) const {
    float f[16];
    if (c.r == 0) {
      own_group<S>(in, full, g, acc);
    } else {
      load_group<S>(src_owner(0, stride), at, full, g, acc);
    }
    for (int q = 1; q < c.n; q++) {
      if (q == c.r) {
        own_group<S>(in, full, g, f);
      } else {
        load_group<S>(src_owner(q, stride), q * stride + at, full, g, f);
      }
#pragma unroll
      for (int j = 0; j < 16; j++) acc[j] += f[j];
    }
  }
  // The codes of f (16 values) and, in mode scaled, their block's scale: the block's lanes combine their
  // maxima (lanes of groups past the end take part with 0) and divide.
  template <bool S>
  RX_DEV V16 encode_group(float* f, float& scale) const {
    scale = 1.0f;
    if (S) {
      float amax = 0;
#pragma unroll
      for (int j = 0; j < 16; j++) amax = go_max(amax, abs32(f[j]));
      for (int m = w / 2; m > 0; m >>= 1) amax = go_max(amax, shfl_xor32(amax, m));
      scale = scale_of(amax);
#pragma unroll
      for (int j = 0; j < 16; j++) f[j] = f[j] / scale;
    }
    return encode16(f);
  }
  // Group g of in as floats; zeros past full.
  RX_DEV static void input_group(const T* in, i64 full, i64 g, float* f) {
    if (g < full) {
      load16(in + 16 * g, f);
    } else {
#pragma unroll
      for (int j = 0; j < 16; j++) f[j] = 0;
    }
  }
  // Group g of in (zeros past full) through encode and decode, as every rank decodes its codes.
  template <bool S>
  RX_DEV void own_group(const T* in, i64 full, i64 g, float* f) const {
    input_group(in, full, g, f);
    float scale;
    const V16 v = encode_group<S>(f, scale);
    decode_scaled<S>(v, scale, f);
  }
  // Stores group g's codes at offset at + 16 g of the halves of the ranks to, and in mode scaled (one lane per
  // LP block) its scale.
  template <bool S>
  RX_DEV void store_group(int to, i64 at, i64 g, V16 v, float scale) const {
    each(to, [&](int o) {
      *(V16*)(codes(o) + at + 16 * g) = v;
      if (S && g % w == 0) scales(o)[at / B + g / w] = scale;
    });
  }
  // quantize's first full groups from lo.
  template <bool S>
  RX_DEV void quantize_groups(int to, i64 at, const T* src, T* own, i64 lo, i64 full) const {
    RX_LP_GROUPS(full, g) {
      float f[16], scale;
      input_group(src + lo, full, g, f);
      const V16 v = encode_group<S>(f, scale);
      if (g < full) {
        store_group<S>(to, at + lo, g, v, scale);
        if (own) {
          decode_scaled<S>(v, scale, f);
          store16(own + lo + 16 * g, f);
        }
      }
    }
  }
  // dequantize's first full groups from lo, U groups per thread per step: their loads are issued before any
  // store (which the compiler may not move a load across), so each thread keeps U loads in flight. On H100 at
  // one rank, U = 4 made bfloat16 3-7% faster and float 5-9% slower than U = 1 (on 2 H100s, with the codes a
  // peer's, float all_gather and alltoall 15% and 21% slower at 1 GiB; on 2 H200s with the stages split, U = 2
  // and 4 made float 2-12% and 5-18% slower from 256 MiB). The loop's condition is the warp's, as in
  // RX_LP_GROUPS: with each lane's own condition float was 5% slower.
  static constexpr int U = sizeof(T) == 2 ? 4 : 1;
  template <bool S>
  RX_DEV void dequantize_groups(T* dst, int owner, i64 at, i64 lo, i64 full) const {
    for (i64 g0 = tid; g0 - (tid & 31) < full; g0 += U * nt) {
      V16 v[U];
      float s[U];
#pragma unroll
      for (int u = 0; u < U; u++) {
        const i64 g = g0 + u * nt;
        if (g < full) load_codes<S>(owner, at + lo + 16 * g, v[u], s[u]);
      }
#pragma unroll
      for (int u = 0; u < U; u++) {
        const i64 g = g0 + u * nt;
        if (g < full) {
          float f[16];
          decode_scaled<S>(v[u], s[u], f);
          store16(dst + lo + 16 * g, f);
        }
      }
    }
  }
  // The sum loops (reduce, requantize) bring what sum_group reads at their next step into L2: its input group
  // (each 32-byte sector) and, where the codes were pushed (stride), the peers' codes. On 2 H100s that took
  // 1-14% off float all_reduce from 64 MiB to 1 GiB and 3-6% off reduce_scatter from 256 MiB.
  // The same hint in quantize's loop made all_gather 17% slower, two steps ahead was
  // slower than one, and on a peer's memory (pulled codes) it made calls 20-26x slower: own memory only.
  RX_DEV void ahead(const T* in, i64 stride, i64 at, i64 g, i64 full) const {
    const i64 h = g + nt;
    if (h >= full) return;
#pragma unroll
    for (int j = 0; j < 16; j += 32 / (int)sizeof(T)) prefetch_l2(in + 16 * h + j);
    if (stride) RX_FOR_PEERS(c, q) if (q != c.r) prefetch_l2(codes(c.r) + q * stride + at + 16 * h);
  }
  // reduce's first full groups from lo.
  template <bool S>
  RX_DEV void reduce_groups(T* dst, const T* in, i64 stride, i64 at, i64 lo, i64 full) const {
    RX_LP_GROUPS(full, g) {
      float acc[16];
      ahead(in + lo, stride, at + lo, g, full);
      sum_group<S>(stride, at + lo, full, g, acc, in + lo);
      if (g < full) store16(dst + lo + 16 * g, acc);
    }
  }
  // requantize's first full groups from lo.
  template <bool S>
  RX_DEV void requantize_groups(T* own, const T* in, i64 stride, i64 at, i64 ag, i64 lo, i64 full) const {
    RX_LP_GROUPS(full, g) {
      float acc[16], scale;
      ahead(in + lo, stride, at + lo, g, full);
      sum_group<S>(stride, at + lo, full, g, acc, in + lo);
      const V16 v = encode_group<S>(acc, scale);
      if (g < full) {
        store_group<S>(RX_LP_PEERS, ag + lo, g, v, scale);
        decode_scaled<S>(v, scale, acc);
        store16(own + lo + 16 * g, acc);
      }
    }
  }

  // Mode scaled where groups cannot be used: one LP block per 32-lane group, the lanes taking its elements in
  // turn (neighbouring lanes, neighbouring addresses). per_block runs f(s0, s1) for every LP block [s0, s1) of
  // [lo, hi) (lo a multiple of B), every lane of the group together.
  RX_DEV static int lane() { return (int)(threadIdx.x & 31); }
  template <class F>
  RX_DEV void per_block(i64 lo, i64 hi, F f) const {
    const i64 group = tid >> 5, groups = nt >> 5;
    for (i64 s0 = lo + group * B; s0 < hi; s0 += groups * B) f(s0, s0 + B < hi ? s0 + B : hi);
  }
  // The scale of the LP block [s0, s1) of values x(i): its largest magnitude maps to RX_E4M3_MAX. Max is exact,
  // so the lanes' order does not change it.
  template <class X>
  RX_DEV float block_scale(i64 s0, i64 s1, X x) const {
    float amax = 0;
    for (i64 i = s0 + lane(); i < s1; i += 32) amax = go_max(amax, abs32(x(i)));
    for (int m = 16; m > 0; m >>= 1) amax = go_max(amax, shfl_xor32(amax, m));
    return scale_of(amax);
  }
  // The groups of [lo, hi) that encode_group can take: all whole ones in mode rcclx, whole LP blocks when
  // scaled (0 where w is 0 or ok is false).
  RX_DEV i64 encodable(i64 lo, i64 hi, bool ok) const {
    if (!ok || w == 0) return 0;
    return scaled ? (hi - lo) / B * B / 16 : (hi - lo) / 16;
  }
  // The codes of values x(i), i in [lo, hi), into the halves of the ranks to at offset at + i (with their
  // scales), each code also passed to own(i, code, scale).
  template <class X, class O>
  RX_DEV void encode_rest(int to, i64 at, i64 lo, i64 hi, X x, O own) const {
    if (scaled) {
      per_block(lo, hi, [&](i64 s0, i64 s1) {
        const float scale = block_scale(s0, s1, x);
        for (i64 i = s0 + lane(); i < s1; i += 32) {
          const u8 code = f32_to_e4m3(x(i) / scale);
          each(to, [&](int o) { codes(o)[at + i] = code; });
          own(i, code, scale);
        }
        if (lane() == 0) each(to, [&](int o) { scales(o)[(at + s0) / B] = scale; });
      });
      return;
    }
    for (i64 i = lo + tid; i < hi; i += nt) {
      const u8 code = f32_to_e4m3(x(i));
      each(to, [&](int o) { codes(o)[at + i] = code; });
      own(i, code, 1.0f);
    }
  }

  // own[i] = the value of code (with its scale), the bits every rank's dequantize gives.
  RX_DEV void put(T* own, i64 i, u8 code, float scale) const {
    const float v = e4m3_to_f32(code);
    own[i] = from_acc(scaled ? v * scale : v);
  }

  // The codes of src[i], i in [lo, hi) (lo a multiple of unit, at of B), at offset at + i of the halves of the
  // ranks to; with own, their values also into own[i] (this rank's copy of what the others decode, without
  // a pass over the codes).
  RX_DEV void quantize(int to, i64 at, const T* src, i64 lo, i64 hi, T* own = nullptr) const {
    const i64 full = encodable(lo, hi, al16(src + lo) && (!own || al16(own + lo)));
    if (scaled) {
      quantize_groups<true>(to, at, src, own, lo, full);
    } else {
      quantize_groups<false>(to, at, src, own, lo, full);
    }
    encode_rest(to, at, lo + 16 * full, hi, [&](i64 i) { return to_acc(src[i]); }, [&](i64 i, u8 code, float scale) {
      if (own) put(own, i, code, scale);
    });
  }

  // dst[i] = T(value of owner's code at + i) for i in [lo, hi).
  RX_DEV void dequantize(T* dst, int owner, i64 at, i64 lo, i64 hi) const {
    const i64 full = grouped && al16(dst + lo) ? (hi - lo) / 16 : 0;
    if (scaled) {
      dequantize_groups<true>(dst, owner, at, lo, full);
    } else {
      dequantize_groups<false>(dst, owner, at, lo, full);
    }
    for (i64 i = lo + 16 * full + tid; i < hi; i += nt) dst[i] = from_acc(value(owner, at + i));
  }

  // dst[i] = T(the fp32 sum over the sources of the values at at + i), i in [lo, hi).
  // The kept groups take this rank's own value from its input in, as requantize's do.
  RX_DEV void reduce(T* dst, const T* in, i64 stride, i64 at, i64 lo, i64 hi) const {
    const i64 full = kept(in, dst, lo, hi);
    if (scaled) {
      reduce_groups<true>(dst, in, stride, at, lo, full);
    } else {
      reduce_groups<false>(dst, in, stride, at, lo, full);
    }
    for (i64 i = lo + 16 * full + tid; i < hi; i += nt) dst[i] = from_acc(sum(stride, at + i));
  }

  // The groups of [lo, hi) whose sum requantize (or reduce with in) takes this rank's value of from its input
  // in rather than from its codes: quantize leaves their codes out.
  RX_DEV i64 kept(const T* in, const T* own, i64 lo, i64 hi) const {
    return encodable(lo, hi, al16(in + lo) && al16(own + lo));
  }

  // The same sums re-quantized (new scales): the codes go to offset ag + i of every peer's half, and own[i]
  // takes their value, the bits a peer's dequantize gives. The kept groups take this rank's own value from its
  // input in (the others from the codes quantize stored).
  RX_DEV void requantize(T* own, const T* in, i64 stride, i64 at, i64 ag, i64 lo, i64 hi) const {
    const i64 full = kept(in, own, lo, hi);
    if (scaled) {
      requantize_groups<true>(own, in, stride, at, ag, lo, full);
    } else {
      requantize_groups<false>(own, in, stride, at, ag, lo, full);
    }
    encode_rest(RX_LP_PEERS, ag, lo + 16 * full, hi, [&](i64 i) { return sum(stride, at + i); },
                [&](i64 i, u8 code, float scale) { put(own, i, code, scale); });
  }
};

RX_DEV i64 clip(i64 hi, i64 len) { return hi < len ? hi : len; }

// A call's chunks run as a pipeline of stages: step s runs stage j on chunk s - j (lp_chunk), the oldest
// chunk's stage first, then a barrier (lp_step_end; none after the last step). What stage j of chunk k writes
// (step k + j) stage j + 1 reads one barrier later, and stage j of chunk k + 2, the next to write that buffer's
// area, comes after the barrier that ends that step. One barrier a step rather than one a stage, no launch
// between chunks, and the stages' different traffic (the input from HBM, codes over the link, stores to HBM)
// overlaps across a block's warps, the more so when each stage has warps of its own (lp_split). The loops are
// written out in each kernel: the same pipeline as a template calling one lambda for every stage ran float
// all_reduce and all_gather 2.5-3.4x slower on 2 H100s.
RX_DEV i64 lp_chunk(i64 s, int stage, i64 chunks) {
  const i64 k = s - stage;
  return k >= 0 && k < chunks ? k : -1;
}
// A call of at least RX_LP_SPLIT_CHUNKS chunks splits the block's warps between the stages that have a chunk
// at step s, stage j taking a share weight[j] / (sum of those stages' weights), so that the stages run side by
// side rather than one after another in each step; in the steps that fill and drain the pipeline a stage
// without a chunk leaves its warps to the others. A call of fewer chunks, where a split leaves warps idle in
// more of its steps, runs every stage on every warp. lp_split returns the stage this thread runs at step s, or
// -1 for every stage. The threshold and weights are what measured fastest on 2 ranks;
// gpuengine cuts a large call into that many chunks (lpSplitLen).
#define RX_LP_SPLIT_CHUNKS 4
RX_DEV int lp_split(LP& lp, i64 s, i64 chunks, const int* weight, int stages) {
  if (chunks < RX_LP_SPLIT_CHUNKS) return -1;
  const int all = (int)(blockDim.x >> RX_WARP_SHIFT);
  int w[3], warps[3], sum = 0, left = 0, first = 0;
  for (int j = 0; j < stages; j++) {
    w[j] = lp_chunk(s, j, chunks) >= 0 ? weight[j] : 0;
    sum += w[j];
    left += w[j] > 0;
  }
  for (int j = 0; j < stages; j++) {
    warps[j] = 0;
    if (w[j] == 0) continue;
    left--;
    warps[j] = left == 0 ? all - first : clamp0((all * w[j] + sum / 2) / sum, all - first - left);
    if (warps[j] < 1) warps[j] = 1;
    first += warps[j];
  }
  return lp.crew(warps, stages);
}
RX_DEV bool lp_step_end(Comm& c, i64 s, i64 steps) {
  return s + 1 == steps || barrier(c, (int)(s < 0xfffe ? s + 1 : 0xffff));
}

// all_reduce: rank q's slice is [q*count/n, (q+1)*count/n) (as hostengine), and chunk k covers elements
// [k*x1, (k+1)*x1) of every slice. A buffer holds 2n slots of x1 codes: slot q, rank q's codes of this rank's
// slice (reduce-scatter), and slot n + q, rank q's reduced slice (all-gather). Stages: 0 quantizes every slice
// into its owner's slot (its own slice only where stage 1 cannot take it from the input: LP::kept), 1 sums
// and re-quantizes the own slice into every rank's slot, 2 dequantizes the peers' slices.
RX_DEV void lp_all_reduce_body(Args a) {
  RX_COMM(c, a);
  LP lp(c, a);
  const i64 R = a.x1, chunks = cdiv(cdiv(a.count, c.n), R), steps = chunks + 2;
  lp.scaleOff = 2 * c.n * R;
  i64 lo, hi;
  c.part(R, lp.unit, lo, hi);
  auto first = [&](int q, i64 k) { return q * a.count / c.n + k * R; };  // chunk k's first element of slice q
  auto end = [&](int q, i64 k) { return clip(hi, (q + 1) * a.count / c.n - first(q, k)); };
  const int weight[3] = {3, 3, 2};
  for (i64 s = 0; s < steps; s++) {
    const int mine = lp_split(lp, s, chunks, weight, 3);
    i64 k;
    if ((mine < 0 || mine == 2) && (k = lp_chunk(s, 2, chunks)) >= 0) {
      lp.at(k);
      RX_FOR_PEERS(c, q) if (q != c.r) lp.dequantize((T*)a.recv + first(q, k), c.r, (c.n + q) * R, lo, end(q, k));
    }
    if ((mine < 0 || mine == 1) && (k = lp_chunk(s, 1, chunks)) >= 0) {
      lp.at(k);
      lp.requantize((T*)a.recv + first(c.r, k), (const T*)a.send + first(c.r, k), R, 0, (c.n + c.r) * R, lo,
                    end(c.r, k));
    }
    if ((mine < 0 || mine == 0) && (k = lp_chunk(s, 0, chunks)) >= 0) {
      lp.at(k);
      RX_FOR_PEERS(c, q) {
        const T* in = (const T*)a.send + first(q, k);
        const i64 from = q == c.r ? lo + 16 * lp.kept(in, (T*)a.recv + first(q, k), lo, end(q, k)) : lo;
        lp.quantize(q, c.r * R, in, from, end(q, k));
      }
    }
    if (!lp_step_end(c, s, steps)) return;
  }
  c.save();
}

// gpuengine's tests: block RX_LP_LAG_BLOCK of rank 1 lags (about 50 us) before each read of its peers' codes.
RX_DEV void lp_lag(const Comm& c) {
#ifdef RX_LP_LAG_BLOCK
  if (c.r == 1 && c.b == RX_LP_LAG_BLOCK) {
    for (const long long t0 = clock64(); clock64() - t0 < 100000;) {
    }
  }
#endif
}

// The other collectives cut each per-rank piece into chunks of x1 elements, chunk k at k*x1 (the last one
// shorter), in two stages: 0 writes this rank's codes into its own buffer, 1 reads its peers'. lp_piece moves
// lp to chunk k of stage j at step s, if there is one and this thread runs stage j (mine, from lp_split): its
// first element x0 and this block's sub-range [lo, hi) of it. A block's sub-range is the same in every chunk
// (cut from x1, clipped to the last chunk's end): a barrier pairs each block with the same block of its peers
// only, so a block may overwrite a buffer's codes only where that block of every peer read them.
RX_DEV bool lp_piece(LP& lp, const Args& a, int mine, i64 s, int stage, i64& x0, i64& lo, i64& hi) {
  const i64 k = mine < 0 || mine == stage ? lp_chunk(s, stage, cdiv(a.count, a.x1)) : -1;
  if (k < 0) return false;
  lp.at(k);
  x0 = k * a.x1;
  lp.c.part(a.x1, lp.unit, lo, hi);
  lo = clip(lo, a.count - x0);
  hi = clip(hi, a.count - x0);
  if (stage == 1) lp_lag(lp.c);
  return true;
}
RX_DEV i64 lp_piece_steps(const Args& a) { return cdiv(a.count, a.x1) + 1; }

// alltoall's own piece, which no peer reads, goes straight to its place in the output as values (its codes
// made and decoded in registers), [lo, hi) of the block's sub-range of the chunk at x0. For float, stage 0
// takes the first half of the sub-range and stage 1 the rest beside the peers' decode, so that both move
// about the same bytes an element (5 for a peer's piece quantized or decoded, 4 for half the own piece): on
// 2x H200 that took 2.6-4.0% off float alltoall from 64 MiB to 1 GiB against the whole own piece in stage 0,
// which bfloat16 keeps (halved, it was 0.5-4.0% slower).
#if RX_DTYPE == RX_FLOAT
#define RX_A2A_OWN_HALVED true
#else
#define RX_A2A_OWN_HALVED false
#endif
RX_DEV i64 own_split(const LP& lp, i64 lo, i64 hi) {
  return RX_A2A_OWN_HALVED ? lo + (hi - lo) / 2 / lp.unit * lp.unit : hi;
}
RX_DEV void keep_own(LP& lp, const Args& a, i64 x0, i64 lo, i64 hi) {
  const i64 at = lp.c.r * a.count + x0;
  lp.quantize(RX_LP_NONE, 0, (const T*)a.send + at, lo, hi, (T*)a.recv + at);
}

// The codes of every piece q of this rank's input at q * cp of its own buffer (cp: the chunk length rounded up
// to the unit), for this block's [lo, hi) of the chunk at x0, but of this rank's own piece: with keep
// (alltoall) its part before own_split goes to the output (keep_own), without (reduce_scatter) it has codes only
// where reduce cannot take it from the input (LP::kept).
RX_DEV void stage_codes(LP& lp, const Args& a, i64 cp, i64 x0, i64 lo, i64 hi, bool keep) {
  for (int q = 0; q < lp.c.n; q++) {
    const T* src = (const T*)a.send + q * a.count + x0;
    if (q != lp.c.r) {
      lp.quantize(lp.c.r, q * cp, src, lo, hi);
    } else if (keep) {
      keep_own(lp, a, x0, lo, own_split(lp, lo, hi));
    } else {
      lp.quantize(lp.c.r, q * cp, src, lo + 16 * lp.kept(src, (T*)a.recv + x0, lo, hi), hi);
    }
  }
}

// reduce_scatter: the codes of piece q sit at q * cp; rank r sums piece r of every rank, its own from its input.
RX_DEV void lp_reduce_scatter_body(Args a) {
  RX_COMM(c, a);
  LP lp(c, a);
  const i64 cp = roundup(a.x1, lp.unit), steps = lp_piece_steps(a);
  lp.scaleOff = c.n * cp;
  const int weight[2] = {3, 5};
  for (i64 s = 0; s < steps; s++) {
    const int mine = lp_split(lp, s, cdiv(a.count, a.x1), weight, 2);
    i64 x0, lo, hi;
    if (lp_piece(lp, a, mine, s, 1, x0, lo, hi)) {
      lp.reduce((T*)a.recv + x0, (const T*)a.send + c.r * a.count + x0, 0, c.r * cp, lo, hi);
    }
    if (lp_piece(lp, a, mine, s, 0, x0, lo, hi)) stage_codes(lp, a, cp, x0, lo, hi, false);
    if (!lp_step_end(c, s, steps)) return;
  }
  c.save();
}

// all_gather: each rank's codes of its own piece; their values go into its own output piece as they are made.
// Pulled, a buffer holds the rank's own codes; pushed (x0 = 1), a slot per source rank q at q * cp of every
// rank's buffer, each rank storing its codes into its slot of every peer's and decoding from its own.
RX_DEV void lp_all_gather_body(Args a) {
  RX_COMM(c, a);
  LP lp(c, a);
  const bool push = a.x0 != 0;
  const i64 steps = lp_piece_steps(a), cp = roundup(a.x1, lp.unit);
  lp.scaleOff = push ? c.n * cp : cp;
  const int weight[2] = {3, 5};
  for (i64 s = 0; s < steps; s++) {
    const int mine = lp_split(lp, s, cdiv(a.count, a.x1), weight, 2);
    i64 x0, lo, hi;
    if (lp_piece(lp, a, mine, s, 1, x0, lo, hi)) {
      RX_FOR_PEERS(c, q) if (q != c.r) {
        lp.dequantize((T*)a.recv + q * a.count + x0, push ? c.r : q, push ? q * cp : 0, lo, hi);
      }
    }
    if (lp_piece(lp, a, mine, s, 0, x0, lo, hi)) {
      lp.quantize(push ? RX_LP_PEERS : c.r, push ? c.r * cp : 0, (const T*)a.send + x0, lo, hi,
                  (T*)a.recv + c.r * a.count + x0);
    }
    if (!lp_step_end(c, s, steps)) return;
  }
  c.save();
}

// alltoall: as reduce_scatter's layout; rank r dequantizes piece r of every peer, and keeps its own (float:
// half in each stage, own_split). With the own piece halved the decode stage has more warps, its loads
// crossing the link (3:4 measured fastest on 2x H200; 1:1 with the own piece whole in stage 0).
RX_DEV void lp_alltoall_body(Args a) {
  RX_COMM(c, a);
  LP lp(c, a);
  const i64 cp = roundup(a.x1, lp.unit), steps = lp_piece_steps(a);
  lp.scaleOff = c.n * cp;
  const int weight[2] = {RX_A2A_OWN_HALVED ? 3 : 1, RX_A2A_OWN_HALVED ? 4 : 1};
  for (i64 s = 0; s < steps; s++) {
    const int mine = lp_split(lp, s, cdiv(a.count, a.x1), weight, 2);
    i64 x0, lo, hi;
    if (lp_piece(lp, a, mine, s, 1, x0, lo, hi)) {
      RX_FOR_PEERS(c, q) if (q != c.r) lp.dequantize((T*)a.recv + q * a.count + x0, q, c.r * cp, lo, hi);
      if (RX_A2A_OWN_HALVED) keep_own(lp, a, x0, own_split(lp, lo, hi), hi);
    }
    if (lp_piece(lp, a, mine, s, 0, x0, lo, hi)) stage_codes(lp, a, cp, x0, lo, hi, true);
    if (!lp_step_end(c, s, steps)) return;
  }
  c.save();
}

#if defined(RX_BULK) && RX_DTYPE == RX_FLOAT
// Float alltoall in mode rcclx on sm_90 through each SM's bulk copy unit (prelude's RX_BULK): the block's threads
// only convert, in shared memory, what the unit loads and stores, so the loads in flight are not bounded by the
// threads' registers, and every store is of whole lines. The chunks, steps and block sub-ranges are
// lp_alltoall's, but the codes are pushed: rank r stores its codes of piece q into slot r (at r * cp) of rank
// q's buffer and decodes slot q of its own. A step is a list of jobs, each a tile of at most RX_BULK_TILE
// elements of the block's sub-range: decode a peer's codes (stage 1's chunk), encode a piece for its peer, or
// pass the own piece through its codes into the output (stage 0's chunk). Thread RX_BULK_LOADER keeps the
// loads of the next RX_BULK_STAGES - 1 jobs in flight while the block converts one; thread 0 then stores what
// it converted, from one of RX_BULK_OUTS output tiles. A job whose addresses or length the unit cannot take
// (not 16-byte aligned: a piece of odd length) is converted by the threads straight from global memory. Each
// job costs two block barriers and a wait, so tiles are large: on 2x H200 tiles of 4096 elements in 4 stages
// took 854 us at 1 GiB, 8192 in 3 took 668 (the pulling lp_alltoall 739); bfloat16, twice the jobs for the
// same bytes, stays on lp_alltoall (1127 us against 920 with 8192-element tiles). In the same shared memory,
// 4 input tiles and 2 output ones took 6.6% off 3 of each at 64 MiB on 2x H100, 1-3% from 256 MiB; 5 and 1,
// or 2 and 1 of 16384 elements, were no faster. A block of 512 threads converts a tile in one pass of 16
// elements a thread: 0.5% off 256 threads at 1 GiB and 3% at 128 MiB on 2x H200; 1024 threads were 14% slower.
// The loader issues the next step's leading encode loads before the step's barrier (they read only the
// input), so the ring does not drain at each barrier: 1% off at 1 GiB on 2x H200, and a fifth input tile
// (224 KiB of shared memory in all) 0.3% more.
#define RX_BULK_TILE 8192
#define RX_BULK_STAGES 5  // input tiles: the loads of RX_BULK_STAGES - 1 jobs in flight
#define RX_BULK_OUTS 2    // output tiles: the store of the job before still reading one
#define RX_BULK_THREADS 512
#define RX_BULK_LOADER 32  // the thread that issues the loads (thread 0 issues the stores)

// A job: kind 0 the own piece, 1 encode, 2 decode; len elements from src (T, or codes for kind 2) to dst.
struct BulkJob {
  int kind;
  const u8* src;
  u8* dst;
  i64 len;
  RX_DEV u32 in_bytes() const { return (u32)(kind == 2 ? len : len * (i64)sizeof(T)); }
  RX_DEV u32 out_bytes() const { return (u32)(kind == 1 ? len : len * (i64)sizeof(T)); }
  RX_DEV bool bulk() const { return len % 16 == 0 && al16(src) && al16(dst); }
};

// The jobs of step s: tile by tile of the block's sub-ranges, first the n - 1 peers' encodes and the own piece
// of chunk ke (stage 0), then the n - 1 decodes of chunk kd (stage 1); a stage without a chunk has none. The
// encodes come first so that their loads can be issued before the barrier that ends the step before.
struct BulkStep {
  int n, me, dn = 0, en = 0, td = 0, te = 0;  // jobs a tile of each stage, and each stage's tiles
  i64 hid = 0, hie = 0;                       // the lengths of the sub-ranges
  const u8* dcodes = nullptr;                 // this rank's buffer of chunk kd at the sub-range's start
  T* dout = nullptr;                          // the output at chunk kd's sub-range of piece 0
  const T* ein = nullptr;                     // the input at chunk ke's sub-range of piece 0
  T* eown = nullptr;                          // the output at chunk ke's sub-range of the own piece
  i64 eat = 0;                                // chunk ke's sub-range in the buffers: its offset in the half
  i64 cp, count;
  const LP& lp;

  RX_DEV BulkStep(const LP& l, const Args& a, i64 s, i64 cpiece)
      : n(l.c.n), me(l.c.r), cp(cpiece), count(a.count), lp(l) {
    const i64 chunks = cdiv(a.count, a.x1), kd = lp_chunk(s, 1, chunks), ke = lp_chunk(s, 0, chunks);
    i64 lo;
    if (kd >= 0) {
      dn = n - 1;
      td = range(a, kd, lo, hid);
      dcodes = l.c.data(me, l.h) + (kd & 1) * l.sub + lo;
      dout = (T*)a.recv + kd * a.x1 + lo;
    }
    if (ke >= 0) {
      en = n;
      te = range(a, ke, lo, hie);
      eat = (ke & 1) * l.sub + lo;
      ein = (const T*)a.send + ke * a.x1 + lo;
      eown = (T*)a.recv + me * a.count + ke * a.x1 + lo;
    }
  }
  // The block's sub-range [lo, lo + len) of chunk k (as lp_piece) and its tiles.
  RX_DEV int range(const Args& a, i64 k, i64& lo, i64& len) const {
    i64 hi;
    const i64 x0 = k * a.x1;
    lp.c.part(a.x1, lp.unit, lo, hi);
    lo = clip(lo, a.count - x0);
    len = clip(hi, a.count - x0) - lo;
    return (int)cdiv(len, RX_BULK_TILE);
  }
  RX_DEV int jobs() const { return td * dn + te * en; }
  RX_DEV BulkJob job(int j) const {
    const int both = td < te ? td : te, per = dn + en;
    int t, r;
    if (j < both * per) {
      t = j / per;
      r = j - t * per;
    } else if (j -= both * per, td > both) {
      t = both + j / dn;
      r = en + (j - (t - both) * dn);
    } else {
      t = both + j / en;
      r = j - (t - both) * en;
    }
    const i64 i = (i64)t * RX_BULK_TILE;
    const bool dec = r >= en;
    int q = me + 1 + (dec ? r - en : r);  // the last encode of a tile: q == me, the own piece
    q -= q >= n ? n : 0;
    if (dec) return {2, dcodes + q * cp + i, (u8*)(dout + q * count + i), clip(RX_BULK_TILE, hid - i)};
    const i64 len = clip(RX_BULK_TILE, hie - i);
    const u8* src = (const u8*)(ein + q * count + i);
    if (q == me) return {0, src, (u8*)(eown + i), len};
    return {1, src, lp.c.data(q, lp.h) + eat + me * cp + i, len};
  }
};

// Converts job jb's tile in (shared memory) into out. Thread t takes, of each 16 * blockDim.x elements, the
// float4 vectors numbered t, t + blockDim.x, ... (and their codes), so that a warp's accesses to shared memory
// are consecutive.
RX_DEV void bulk_convert(const BulkJob& jb, const u8* in, u8* out) {
  const int nt = (int)blockDim.x;
  for (i64 v0 = threadIdx.x; v0 * 4 < jb.len; v0 += 4 * nt) {
    V16 x[4] = {}, codes = {};
    float f[16];
#pragma unroll
    for (int k = 0; k < 4; k++) {
      const i64 v = v0 + (i64)k * nt;
      if (v * 4 >= jb.len) continue;
      if (jb.kind != 2) {
        x[k] = ((const V16*)in)[v];
      } else {
        codes.w[k] = ((const u32*)in)[v];
      }
    }
    if (jb.kind != 2) {
      unpack16(x, f);
      codes = encode16(f);
    }
    if (jb.kind != 1) {
      decode16(codes, f);
      pack16(f, x);
    }
#pragma unroll
    for (int k = 0; k < 4; k++) {
      const i64 v = v0 + (i64)k * nt;
      if (v * 4 >= jb.len) continue;
      if (jb.kind != 1) {
        ((V16*)out)[v] = x[k];
      } else {
        ((u32*)out)[v] = codes.w[k];
      }
    }
  }
}

// Converts job jb element by element in global memory (the codes pushed into this rank's buffer are read
// volatile: the same block read that buffer two steps ago).
RX_DEV void bulk_convert_global(const BulkJob& jb) {
  for (i64 i = threadIdx.x; i < jb.len; i += blockDim.x) {
    if (jb.kind == 2) {
      ((T*)jb.dst)[i] = from_acc(e4m3_to_f32(ld_volatile(jb.src + i)));
      continue;
    }
    const u8 code = f32_to_e4m3(to_acc(((const T*)jb.src)[i]));
    if (jb.kind == 1) {
      jb.dst[i] = code;
    } else {
      ((T*)jb.dst)[i] = from_acc(e4m3_to_f32(code));
    }
  }
}

// Shared memory: the stages' barriers (128 bytes), then RX_BULK_STAGES input tiles, then RX_BULK_OUTS output
// tiles, each of RX_BULK_TILE floats (gpuengine's lpBulkShared).
RX_DEV void lp_alltoall_bulk_body(Args a) {
  RX_COMM(c, a);
  LP lp(c, a);
  extern __shared__ __align__(128) u8 rx_dynamic[];
  constexpr int S = RX_BULK_STAGES, O = RX_BULK_OUTS, TB = RX_BULK_TILE * (int)sizeof(T);
  u64* bar = (u64*)rx_dynamic;
  u8* tin = rx_dynamic + 128;
  u8* tout = tin + S * TB;
  const i64 cp = roundup(a.x1, lp.unit), steps = lp_piece_steps(a);
  if (threadIdx.x == 0) {
    for (int j = 0; j < S; j++) mbar_init(bar + j);
  }
  block_sync();
  // The codes pushed into a peer's buffer are evicted last, so that as many as L2 holds are still there when it
  // decodes them one barrier later. The floats take no hint: evicted first, they made 1 GiB 3-5% slower on 2x
  // H200, where the codes kept took 2% off no policy.
  const u64 keep = l2_evict_last();
  // Job g of the launch (counted across steps) uses stage g % S, in phase g / S of its barrier.
  auto issue = [&](const BulkJob& jb, u32 g) {
    u64* b = bar + g % S;
    if (jb.bulk()) {
      bulk_load(tin + g % S * TB, jb.src, jb.in_bytes(), b);
    } else {
      mbar_arrive(b);
    }
  };
  u32 g = 0;
  int pre = 0;  // the loader's count of this step's first jobs whose loads it issued before the barrier
  for (i64 s = 0; s < steps; s++) {
    const BulkStep st(lp, a, s, cp);
    const int jobs = st.jobs();
    if (st.dn) lp_lag(c);
    if (threadIdx.x == RX_BULK_LOADER) {
      for (int j = pre; j < S - 1 && j < jobs; j++) issue(st.job(j), g + j);
    }
    for (int j = 0; j < jobs; j++, g++) {
      if (threadIdx.x == RX_BULK_LOADER && j + S - 1 < jobs) issue(st.job(j + S - 1), g + S - 1);
      const BulkJob jb = st.job(j);
      const int at = (int)(g % S);
      mbar_wait(bar + at, (u32)(g / S & 1));
      if (threadIdx.x == 0) bulk_wait_read<O - 1>();  // the store of job g - O has read its output tile
      block_sync();
      if (jb.bulk()) {
        bulk_convert(jb, tin + at * TB, tout + g % O * TB);
      } else {
        bulk_convert_global(jb);
      }
      bulk_fence_shared();
      block_sync();
      if (threadIdx.x == 0) {
        if (jb.bulk() && jb.kind == 1) {
          bulk_store(jb.dst, tout + g % O * TB, jb.out_bytes(), keep);
        } else if (jb.bulk()) {
          bulk_store(jb.dst, tout + g % O * TB, jb.out_bytes());
        }
        bulk_commit();
      }
    }
    // The next step's first jobs up to its first decode read only the input: their loads go before the
    // barrier, into the stages of jobs this step has converted.
    if (threadIdx.x == RX_BULK_LOADER && s + 1 < steps) {
      const BulkStep nx(lp, a, s + 1, cp);
      const int jn = nx.jobs();
      for (pre = 0; pre < S - 1 && pre < jn; pre++) {
        const BulkJob jb = nx.job(pre);
        if (jb.kind == 2) break;
        issue(jb, g + pre);
      }
    }
    if (threadIdx.x == 0) bulk_wait_all();  // the codes are in the peers' buffers before the barrier
    if (!lp_step_end(c, s, steps)) {
      // The barrier gave up: the block exits only once the loads it issued have landed in its shared memory.
      if (threadIdx.x == RX_BULK_LOADER) {
        for (int j = 0; j < pre; j++) mbar_wait(bar + (g + j) % S, (u32)((g + j) / S & 1));
      }
      return;
    }
  }
  c.save();
}

extern "C" __global__ void __launch_bounds__(RX_BULK_THREADS) lp_alltoall_bulk(Args a) {
  grid_dep_sync();
  a.x3 = 0;
  lp_alltoall_bulk_body(a);
}
#endif

// Each kernel has an entry point per mode, so that each mode's code has its own block size: one block per SM
// either way (RCCLX_TESTS_GPU_LP_BLOCKS), but at 1024 threads ptxas holds a thread to 64 registers, and the
// extra warps keep more loads in flight. That made every mode faster but rcclx on float, whose loops are the
// lightest and which is fastest at 512 threads with up to 102 registers.
// gpuengine's lpThreads says the same. A float all_gather that pushes launches the rcclx entry on 256
// of its 512 threads (gpuengine's lpThreadsFor says why).
#if RX_DTYPE == RX_FLOAT
#define RX_LP_RCCLX_THREADS 512
#else
#define RX_LP_RCCLX_THREADS 1024
#endif
#define RX_LP_SCALED_THREADS 1024
// Mode rcclx of bfloat16 is compiled for that mode alone; float's keeps reading Args.x3 (0 from the engine):
// compiled for mode rcclx alone, float all_gather and alltoall ran 8-9% slower.
#if RX_DTYPE == RX_FLOAT
#define RX_LP_RCCLX_MODE(a)
#else
#define RX_LP_RCCLX_MODE(a) (a).x3 = 0
#endif
#define RX_LP_ENTRIES(name)                                                                                 \
  extern "C" __global__ void __launch_bounds__(RX_LP_RCCLX_THREADS) name(Args a) {                         \
    grid_dep_sync(); /* launched early (gpuengine plan.early) */                                          \
    RX_LP_RCCLX_MODE(a);                                                                                  \
    name##_body(a);                                                                                       \
  }                                                                                                       \
  extern "C" __global__ void __launch_bounds__(RX_LP_SCALED_THREADS) name##_scaled(Args a) {               \
    grid_dep_sync();                                                                                      \
    a.x3 = 1;                                                                                             \
    name##_body(a);                                                                                       \
  }
RX_LP_ENTRIES(lp_all_reduce)
RX_LP_ENTRIES(lp_reduce_scatter)
RX_LP_ENTRIES(lp_all_gather)
RX_LP_ENTRIES(lp_alltoall)

// bfloat16's all_reduce and all_gather have a third entry for mode rcclx, of 512 threads (up to 128
// registers), which gpuengine launches for calls up to 64 MiB (lpNarrow): on 2x H200 it took 1.5-9% off
// all_reduce and 4-9% off all_gather from 16 to 64 MiB; from 128 MiB all_reduce ran 0.7-2.1% slower, and
// alltoall 5-10% slower from 64 MiB. 512 threads of the 1024-thread entry were no faster (-5..+5%).
#define RX_LP_NARROW_THREADS 512
#if RX_DTYPE == RX_BFLOAT16
#define RX_LP_NARROW(name)                                                                                  \
  extern "C" __global__ void __launch_bounds__(RX_LP_NARROW_THREADS) name##_narrow(Args a) {               \
    grid_dep_sync();                                                                                      \
    RX_LP_RCCLX_MODE(a);                                                                                  \
    name##_body(a);                                                                                       \
  }
#else
#define RX_LP_NARROW(name)
#endif
RX_LP_NARROW(lp_all_reduce)
RX_LP_NARROW(lp_all_gather)

#endif
