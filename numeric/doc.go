// Package numeric converts between float32 and the narrow floating-point
// formats the suite moves over the wire: IEEE binary16 (fp16), bfloat16 and
// four 8-bit formats (FP8).
//
// Every float32 -> narrow conversion rounds to nearest, ties to even, on the
// exact float32 value (subnormal inputs and outputs included). Every
// narrow -> float32 conversion is exact.
//
// Overflow and special values:
//
//   - fp16 and bf16 follow IEEE: a value that rounds past the largest finite
//     becomes +-Inf, Inf stays Inf, -0 stays -0. Every NaN becomes the quiet
//     NaN 0x7fff, as on NVIDIA GPUs (sign and payload are not kept).
//   - FP8.Encode saturates, as CUDA's __NV_SATFINITE and PTX
//     cvt.rn.satfinite do: any finite value whose rounded magnitude would
//     exceed Max, and +-Inf, become +-Max. For E4M3 that means 464 (the
//     midpoint between 448 and the missing next step 480, a tie that rounds
//     to the even code 448) and everything above encode to 448. NaN becomes
//     the format's canonical NaN (0x7f for the OCP formats, 0x80 for FNUZ).
//   - FP8.EncodeNoSat rounds the same way but lets overflow through: to
//     +-Inf where the format has Inf (E5M2: 61440 and up), otherwise to NaN
//     (E4M3: above 464; E4M3FNUZ: 248 and up; E5M2FNUZ: 61440 and up). +-Inf
//     input becomes Inf or NaN likewise.
//   - Zero: the OCP formats (E4M3, E5M2) keep the sign of zero, so -0 and
//     negative values that round to zero give 0x80. The FNUZ formats have no
//     -0 (0x80 is their only NaN): those give 0x00.
//
// The OCP encoders match NVIDIA hardware (PTX cvt.rn.satfinite.e4m3x2.f32 and
// .e5m2x2.f32) bit for bit, as does F32ToF16 / F32ToBF16 with cvt.rn.f16.f32 /
// cvt.rn.bf16.f32; hw_test.go checks all 2^32 inputs on a GPU when one is
// present.
package numeric
