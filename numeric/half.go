package numeric

import "math"

var (
	fp16 = newBinFormat(10, 15, 0x7bff)
	bf16 = newBinFormat(7, 127, 0x7f7f)
)

// F32ToF16 converts to IEEE binary16, rounding to nearest even; overflow
// gives +-Inf and every NaN becomes 0x7fff.
func F32ToF16(f float32) uint16 { return fp16.encodeIEEE16(math.Float32bits(f)) }

// F16ToF32 converts an IEEE binary16 value to float32 exactly.
func F16ToF32(h uint16) float32 { return fp16.decodeIEEE16(h) }

// F32ToBF16 converts to bfloat16, rounding to nearest even; overflow gives
// +-Inf and every NaN becomes 0x7fff.
func F32ToBF16(f float32) uint16 { return bf16.encodeIEEE16(math.Float32bits(f)) }

// BF16ToF32 converts a bfloat16 value to float32 exactly.
func BF16ToF32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// encodeIEEE16 converts float32 bits u to a 16-bit IEEE-style format, whose
// Inf code follows its largest finite one. Every NaN becomes 0x7fff, as on
// NVIDIA GPUs.
func (b *binFormat) encodeIEEE16(u uint32) uint16 {
	sign := uint16(u>>16) & 0x8000
	a := u & f32AbsMask
	if a > f32InfBits {
		return 0x7fff
	}
	return sign | uint16(min(b.roundMag(a), b.maxCode+1))
}

func (b *binFormat) decodeIEEE16(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	c := uint32(h & 0x7fff)
	if c > b.maxCode {
		return math.Float32frombits(sign | f32InfBits | (c&(1<<b.manBits-1))<<b.shift)
	}
	return math.Float32frombits(sign | math.Float32bits(b.decodeMag(c)))
}
