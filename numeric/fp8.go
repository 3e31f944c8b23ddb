package numeric

import "math"

// FP8 is one 8-bit floating-point format: 1 sign bit, then exponent and
// mantissa bits. Use the package's E4M3, E4M3FNUZ, E5M2 and E5M2FNUZ.
type FP8 struct {
	name string
	bin  binFormat
	nan  uint8 // canonical NaN code
	// inf is the magnitude code of Inf, 0 when the format has none.
	inf uint8
	// unsignedZero: FNUZ formats have no -0; 0x80 is their NaN.
	unsignedZero bool
	values       *[256]float32 // Decode's table
	// Encode's table, indexed by the float32 bits above lowBits (sign,
	// exponent, kept mantissa bits and the rounding bit) and one bit saying
	// whether any bit below is set: all that rounding to nearest even needs.
	encoded []uint8
	lowBits uint32
}

var (
	// E4M3 is OCP E4M3FN: bias 7, no Inf, NaN = S.1111.111, max 448.
	E4M3 = newFP8("e4m3", 3, 7, 0x7e, 0x7f, 0, false)
	// E4M3FNUZ is the AMD/Graphcore variant: bias 8, no Inf, no -0,
	// NaN = 0x80, max 240.
	E4M3FNUZ = newFP8("e4m3fnuz", 3, 8, 0x7f, 0x80, 0, true)
	// E5M2 is OCP E5M2: bias 15, IEEE-like with Inf (0x7c) and NaN, max 57344.
	E5M2 = newFP8("e5m2", 2, 15, 0x7b, 0x7f, 0x7c, false)
	// E5M2FNUZ: bias 16, no Inf, no -0, NaN = 0x80, max 57344.
	E5M2FNUZ = newFP8("e5m2fnuz", 2, 16, 0x7f, 0x80, 0, true)
)

func newFP8(name string, manBits, bias, maxCode uint32, nan, inf uint8, unsignedZero bool) FP8 {
	f := FP8{
		name:         name,
		bin:          newBinFormat(manBits, bias, maxCode),
		nan:          nan,
		inf:          inf,
		unsignedZero: unsignedZero,
		values:       new([256]float32),
	}
	for c := range f.values {
		f.values[c] = f.decodeCode(uint8(c))
	}
	f.lowBits = f.bin.shift - 1
	f.encoded = make([]uint8, 1<<(32-f.lowBits+1))
	for i := range f.encoded {
		// The smallest float32 with these top bits and this sticky bit.
		f.encoded[i] = f.encodeBits(uint32(i>>1)<<f.lowBits|uint32(i&1), true)
	}
	return f
}

func (f FP8) decodeCode(b uint8) float32 {
	mag := uint32(b & 0x7f)
	if f.unsignedZero && b == f.nan || mag > f.bin.maxCode && mag != uint32(f.inf) {
		return float32(math.NaN())
	}
	bits := uint32(f32InfBits)
	if mag <= f.bin.maxCode {
		bits = math.Float32bits(f.bin.decodeMag(mag))
	}
	return math.Float32frombits(uint32(b>>7)<<31 | bits)
}

// Name returns "e4m3", "e4m3fnuz", "e5m2" or "e5m2fnuz".
func (f FP8) Name() string { return f.name }

// Encode rounds x to nearest even, saturating: overflow and +-Inf give
// +-Max, NaN gives the format's NaN (see the package comment).
func (f FP8) Encode(x float32) uint8 { return lookupEncoded(f.encoded, f.lowBits, x) }

// lookupEncoded finds x in an FP8's Encode table; EncodeSlice calls it with
// the table and shift hoisted out of its loop. The &31 spares the compiler
// its code for shifts of 32 or more.
func lookupEncoded(encoded []uint8, lowBits uint32, x float32) uint8 {
	u := math.Float32bits(x)
	lowMask := uint32(1)<<(lowBits&31) - 1
	sticky := (u&lowMask + lowMask) >> (lowBits & 31)
	return encoded[u>>(lowBits&31)<<1|sticky]
}

// EncodeNoSat rounds x to nearest even; overflow gives +-Inf where the
// format has Inf, otherwise NaN.
func (f FP8) EncodeNoSat(x float32) uint8 { return f.encodeBits(math.Float32bits(x), false) }

// encodeBits rounds the float32 with bits u; sat chooses Encode's overflow
// rule over EncodeNoSat's.
func (f FP8) encodeBits(u uint32, sat bool) uint8 {
	a := u & f32AbsMask
	if a > f32InfBits {
		return f.nan
	}
	c := f.bin.roundMag(a)
	switch {
	case c <= f.bin.maxCode:
	case sat:
		c = f.bin.maxCode
	case f.inf != 0:
		c = uint32(f.inf)
	default:
		return f.nan
	}
	if c == 0 && f.unsignedZero {
		return 0
	}
	return uint8(c | (u>>31)<<7)
}

// Decode returns the exact value of code b (NaN for NaN codes).
func (f FP8) Decode(b uint8) float32 { return f.values[b] }

// Max returns the largest finite value.
func (f FP8) Max() float32 { return f.values[f.bin.maxCode] }

// MinSubnormal returns the smallest positive value.
func (f FP8) MinSubnormal() float32 { return f.values[1] }

// MantissaBits returns the number of explicit mantissa bits (3 or 2).
func (f FP8) MantissaBits() int { return int(f.bin.manBits) }

// UlpRel returns 2^-MantissaBits, the bound on the spacing of adjacent
// normal values relative to their size, for error bounds.
func (f FP8) UlpRel() float64 { return math.Ldexp(1, -f.MantissaBits()) }
