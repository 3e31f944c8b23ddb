// convert.cuh: fp16, bf16 and fp8 conversions as plain bit arithmetic (portable, and compiled on the host by
// gpuengine's tests to compare with package numeric): round to nearest even; fp8 saturates like
// numeric.FP8.Encode, fp16/bf16 overflow to Inf; NaN becomes the format's positive NaN (0x7fff, 0x7f; 0x80 in
// FNUZ). fp8 is OCP, or FNUZ where RX_FP8_FNUZ is 1; RX_E4M3_MAX is E4M3's largest value in either.

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

#if defined(RX_FP8_FNUZ) && RX_FP8_FNUZ
// E4M3FNUZ (bias 8, max 240) and E5M2FNUZ (bias 16, max 57344), the FP8 of AMD's gfx942 (MI300): no Inf, no -0
// (what rounds to zero is +0), 0x80 the only NaN; saturating as numeric.FP8.Encode. hiprtc gets -DRX_FP8_FNUZ=1
// for such a device, so f32_to_e4m3 and the rest mean the device's own FP8 everywhere in the kernels.
#ifdef RX_HW_E4M3
#error "RX_FP8_FNUZ with the OCP hardware conversions (RX_HW_E4M3)"
#endif
#define RX_E4M3_MAX 240.0f
RX_DEV u8 fnuz_encode(float f, int man, int bias) {
  u32 u = f32_bits(f), a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x80;
  u32 c = round_mag(a, man, bias);
  if (c > 0x7fu) c = 0x7fu;
  return c == 0 ? 0 : (u8)(c | ((u >> 31) << 7));
}
RX_DEV u8 f32_to_e4m3(float f) { return fnuz_encode(f, 3, 8); }
RX_DEV u8 f32_to_e5m2(float f) { return fnuz_encode(f, 2, 16); }
RX_DEV float e4m3_to_f32(u8 b) {
  u32 s = (u32)(b & 0x80) << 24, e = (b >> 3) & 0xf, m = b & 7u;
  if (b == 0x80) return bits_f32(0x7fc00000u);
  if (e == 0) return bits_f32(s | f32_bits((float)m * 0.0009765625f));  // m * 2^-10
  return bits_f32(s | ((e + 119) << 23) | (m << 20));
}
RX_DEV float e5m2_to_f32(u8 b) {
  u32 s = (u32)(b & 0x80) << 24, e = (b >> 2) & 0x1f, m = b & 3u;
  if (b == 0x80) return bits_f32(0x7fc00000u);
  if (e == 0) return bits_f32(s | f32_bits((float)m * 7.62939453125e-6f));  // m * 2^-17
  return bits_f32(s | ((e + 111) << 23) | (m << 21));
}
#else
#define RX_E4M3_MAX 448.0f
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
#endif
