// convert.cuh: fp16, bf16 and fp8 conversions as plain bit arithmetic (portable, and compiled on the host by
// gpuengine's tests to compare with package numeric): round to nearest even; fp8 saturates like
// numeric.FP8.Encode, fp16/bf16 overflow to Inf; NaN becomes the format's positive NaN (0x7fff, 0x7f).

// Shifts m right by shift bits (1..31), rounding to nearest even.
RX_DEV u32 shift_rne(u32 m, int shift) {
  u32 c = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
  return c + (rem > half || (rem == half && (c & 1)) ? 1 : 0);
}

// Rounds the magnitude a (float32 bits, not NaN) to a binary format with man mantissa bits and exponent bias
// bias; returns the code, which may exceed the format's largest finite code (the caller saturates or makes Inf).
RX_DEV u32 round_mag(u32 a, int man, int bias) {
  int e = (int)(a >> 23);
  u32 m = a & 0x7fffffu;
  if (e == 0) {
    e = 1;  // float32 subnormal: no implicit bit
  } else {
    m |= 0x800000u;
  }
  int emin = 1 - bias;  // the target's smallest normal exponent
  if (e - 127 >= emin) return shift_rne(a - ((u32)(127 - bias) << 23), 23 - man);  // rebias, round mantissa
  int shift = (23 - man) + (emin - (e - 127));  // target subnormal: value / 2^(emin-man)
  return shift > 24 ? 0 : shift_rne(m, shift);
}

RX_DEV u16 f32_to_f16(float f) {
  u32 u = f32_bits(f), a = u & 0x7fffffffu, s = (u >> 16) & 0x8000u;
  if (a > 0x7f800000u) return 0x7fffu;
  u32 c = round_mag(a, 10, 15);
  return (u16)(s | (c > 0x7c00u ? 0x7c00u : c));
}
RX_DEV float f16_to_f32(u16 h) {
  u32 s = (u32)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ffu;
  if (e == 0x1f) return bits_f32(s | 0x7f800000u | (m << 13));
  if (e == 0) return bits_f32(s | f32_bits((float)m * 5.9604644775390625e-8f));  // m * 2^-24
  return bits_f32(s | ((e + 112) << 23) | (m << 13));
}
RX_DEV u16 f32_to_bf16(float f) {
  u32 u = f32_bits(f), a = u & 0x7fffffffu, s = (u >> 16) & 0x8000u;
  if (a > 0x7f800000u) return 0x7fffu;
  u32 c = round_mag(a, 7, 127);
  return (u16)(s | (c > 0x7f80u ? 0x7f80u : c));
}
RX_DEV float bf16_to_f32(u16 b) { return bits_f32((u32)b << 16); }

// OCP E4M3FN (no Inf, NaN 0x7f, max 448) and E5M2 (Inf 0x7c, max 57344), saturating as numeric.FP8.Encode.
RX_DEV u8 f32_to_e4m3(float f) {
  u32 u = f32_bits(f), a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7f;
  u32 c = round_mag(a, 3, 7);
  return (u8)((c > 0x7eu ? 0x7eu : c) | ((u >> 31) << 7));
}
RX_DEV u8 f32_to_e5m2(float f) {
  u32 u = f32_bits(f), a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7f;
  u32 c = round_mag(a, 2, 15);
  return (u8)((c > 0x7bu ? 0x7bu : c) | ((u >> 31) << 7));
}
RX_DEV float e4m3_to_f32(u8 b) {
  u32 s = (u32)(b & 0x80) << 24, e = (b >> 3) & 0xf, m = b & 7u;
  if ((b & 0x7f) == 0x7f) return bits_f32(s | 0x7fc00000u);
  if (e == 0) return bits_f32(s | f32_bits((float)m * 0.001953125f));  // m * 2^-9
  return bits_f32(s | ((e + 120) << 23) | (m << 20));
}
RX_DEV float e5m2_to_f32(u8 b) {
  u32 s = (u32)(b & 0x80) << 24, e = (b >> 2) & 0x1f, m = b & 3u;
  if (e == 0x1f) return bits_f32(s | 0x7f800000u | (m << 21));
  if (e == 0) return bits_f32(s | f32_bits((float)m * 1.52587890625e-5f));  // m * 2^-16
  return bits_f32(s | ((e + 112) << 23) | (m << 21));
}
