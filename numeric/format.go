package numeric

import "math"

const (
	f32SignBit = 1 << 31
	f32AbsMask = f32SignBit - 1
	f32InfBits = 0x7f800000
)

// binFormat holds what rounding a float32 into a narrower binary format
// needs. Magnitude codes of the format's finite values are consecutive
// integers in order of value, from 0 (zero) to maxCode, as in IEEE formats.
type binFormat struct {
	manBits   uint32  // explicit mantissa bits
	shift     uint32  // 23 - manBits: float32 mantissa bits dropped
	rebias    uint32  // (127 - bias) << manBits: float32 minus format exponent bias, in code units
	minNormal uint32  // float32 bits of the format's smallest normal value
	subMagic  float32 // 2^(emin - manBits + 23): its float32 ulp is the format's subnormal step
	minSub    float32 // the format's smallest subnormal
	maxCode   uint32  // magnitude code of the largest finite value
}

func newBinFormat(manBits, bias, maxCode uint32) binFormat {
	emin := 1 - int(bias)
	return binFormat{
		manBits:   manBits,
		shift:     23 - manBits,
		rebias:    (127 - bias) << manBits,
		minNormal: uint32(127+emin) << 23,
		subMagic:  float32(math.Ldexp(1, emin-int(manBits)+23)),
		minSub:    float32(math.Ldexp(1, emin-int(manBits))),
		maxCode:   maxCode,
	}
}

// roundMag rounds the non-NaN float32 magnitude with bits a to the format,
// ties to even. The result exceeds maxCode when the value overflows.
func (b *binFormat) roundMag(a uint32) uint32 {
	if a < b.minNormal {
		// Adding subMagic makes the float32 unit round the value to the
		// format's subnormal step; a result of 1<<manBits is the smallest
		// normal, whose code it also is.
		y := float32(math.Float32frombits(a) + b.subMagic)
		return math.Float32bits(y) - math.Float32bits(b.subMagic)
	}
	// Add just under half a unit, plus one more when the kept part is odd;
	// a carry out of the mantissa moves the exponent up, as it must.
	r := a + (1<<(b.shift-1) - 1) + (a>>b.shift)&1
	return r>>b.shift - b.rebias
}

// decodeMag returns the value of the finite magnitude code c.
func (b *binFormat) decodeMag(c uint32) float32 {
	if c>>b.manBits == 0 {
		return float32(c) * b.minSub
	}
	return math.Float32frombits(c<<b.shift + b.rebias<<b.shift)
}
