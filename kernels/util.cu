// util.cu: small helpers of the engine.

// Flips the bits of mask in the byte at p (the RCCLX_TESTS_CORRUPT_RANK hook plants a wrong element with it).
extern "C" __global__ void rx_flip_bits(u8* p, u32 mask) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *p ^= (u8)mask;
}

#ifdef RX_HW_E4M3
// Counts into bad[0] the non-NaN float32 bit patterns whose hardware E4M3 code differs from convert.cuh's, and
// into bad[1] the non-NaN codes whose hardware decoding differs.
extern "C" __global__ void rx_e4m3_check(u64* bad) {
  u64 n = 0;
  const u64 stride = (u64)gridDim.x * blockDim.x;
  for (u64 u = blockIdx.x * (u64)blockDim.x + threadIdx.x; u < (1ull << 32); u += stride) {
    float f = bits_f32((u32)u);
    if (f == f && (e4m3x2_hw(f, 0.0f) & 0xffu) != f32_to_e4m3(f)) n++;
  }
  if (n) atomic_add(&bad[0], n);
  if (blockIdx.x == 0 && threadIdx.x < 256 && (threadIdx.x & 0x7f) != 0x7f) {
    float lo, hi;
    e4m3x2_decode_hw(threadIdx.x, lo, hi);
    if (f32_bits(lo) != f32_bits(e4m3_to_f32((u8)threadIdx.x))) atomic_add(&bad[1], 1);
  }
}
#endif

#ifdef RX_HW_BF16
// Counts into bad[0] the float32 bit patterns, NaNs included, whose hardware bfloat16 (in either half of a
// pair) differs from convert.cuh's.
extern "C" __global__ void rx_bf16_check(u64* bad) {
  u64 n = 0;
  const u64 stride = (u64)gridDim.x * blockDim.x;
  for (u64 u = blockIdx.x * (u64)blockDim.x + threadIdx.x; u < (1ull << 32); u += stride) {
    const float f = bits_f32((u32)u);
    const u32 want = f32_to_bf16(f);
    if ((bf16x2_hw(f, 1.0f) & 0xffffu) != want || bf16x2_hw(1.0f, f) >> 16 != want) n++;
  }
  if (n) atomic_add(&bad[0], n);
}
#endif
