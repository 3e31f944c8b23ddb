package numeric

import "math"

// The slice conversions below give the same bits as the scalar functions in half.go (half_slice_test.go
// checks): the rounding is written out for each format's constants, so the loops inline and only rare
// inputs (half's subnormals, overflow, NaN) take a branch.

// F32ToBF16Slice sets dst[i] = F32ToBF16(src[i]); dst must be at least as long as src.
func F32ToBF16Slice(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, f := range src {
		dst[i] = bf16RoundBits(math.Float32bits(f))
	}
}

// BF16ToF32Slice sets dst[i] = BF16ToF32(src[i]); dst must be at least as long as src.
func BF16ToF32Slice(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, b := range src {
		dst[i] = math.Float32frombits(uint32(b) << 16)
	}
}

// F32ToF16Slice sets dst[i] = F32ToF16(src[i]); dst must be at least as long as src.
func F32ToF16Slice(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, f := range src {
		dst[i] = f16RoundBits(math.Float32bits(f))
	}
}

// F16ToF32Slice sets dst[i] = F16ToF32(src[i]); dst must be at least as long as src.
func F16ToF32Slice(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] = f16Value(h)
	}
}

// bf16RoundBits drops float32's low 16 bits, ties to even. Float32 and bfloat16 share the exponent field, so
// the rounding carry handles subnormals and overflow (to Inf) alike and never reaches the sign.
func bf16RoundBits(u uint32) uint16 {
	r := uint16((u + 0x7fff + (u>>16)&1) >> 16)
	if u&f32AbsMask > f32InfBits {
		r = 0x7fff
	}
	return r
}

const (
	f16MinNormalF32 = 0x38800000 // 2^-14
	f16OverflowF32  = 0x477ff000 // 65520: the midpoint between 65504 and the missing next step, rounds to Inf
	f16Rebias       = (127 - 15) << 23
	f16SubMagic     = 0.5 // its float32 ulp, 2^-24, is half's subnormal step
)

// f16RoundBits rounds float32 bits to binary16, ties to even.
func f16RoundBits(u uint32) uint16 {
	sign := uint16(u>>16) & 0x8000
	a := u & f32AbsMask
	switch {
	case a < f16MinNormalF32:
		// The float32 addition rounds the value to a multiple of 2^-24, which is half's subnormal code.
		return sign | uint16(math.Float32bits(math.Float32frombits(a)+f16SubMagic)-math.Float32bits(f16SubMagic))
	case a >= f16OverflowF32:
		if a > f32InfBits {
			return 0x7fff
		}
		return sign | 0x7c00
	}
	return sign | uint16((a-f16Rebias+0xfff+(a>>13)&1)>>13)
}

// f16Value decodes binary16 exactly: normals re-bias the exponent, Inf and NaN keep their payload, and
// subnormals are their code times 2^-24.
func f16Value(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	m := uint32(h&0x7fff) << 13
	switch e := m & 0x0f800000; e {
	case 0:
		return math.Float32frombits(sign | math.Float32bits(float32(h&0x3ff)*0x1p-24))
	case 0x0f800000:
		return math.Float32frombits(sign | f32InfBits | m&0x7fffff)
	}
	return math.Float32frombits(sign | (m + f16Rebias))
}
