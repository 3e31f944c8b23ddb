package numeric

import (
	"math"
	"sort"
)

// refFormat is the tests' independent model of a narrow format, in float64:
// values come from the format's definition and rounding searches the table
// of values, so it shares no code with the package's bit tricks.
type refFormat struct {
	width   int    // 8 or 16 bits
	manBits int    // explicit mantissa bits
	bias    int    // exponent bias
	maxCode uint32 // magnitude code of the largest finite value
	hasInf  bool   // Inf is magnitude code maxCode+1, NaN the codes above it
	fnuz    bool   // the negative-zero code is the only NaN
	nan     uint32 // canonical NaN code (8-bit formats)
	// vals[c] is the value of magnitude code c, for c up to maxCode+1: the
	// last is the step past the largest finite value, for ties at the top.
	vals []float64
}

func newRef(width, manBits, bias int, maxCode uint32, hasInf, fnuz bool, nan uint32) *refFormat {
	r := &refFormat{width: width, manBits: manBits, bias: bias, maxCode: maxCode, hasInf: hasInf, fnuz: fnuz, nan: nan}
	for c := uint32(0); c <= maxCode+1; c++ {
		r.vals = append(r.vals, r.magValue(c))
	}
	return r
}

var (
	refF16      = newRef(16, 10, 15, 0x7bff, true, false, 0)
	refBF16     = newRef(16, 7, 127, 0x7f7f, true, false, 0)
	refE4M3     = newRef(8, 3, 7, 0x7e, false, false, 0x7f)
	refE4M3FNUZ = newRef(8, 3, 8, 0x7f, false, true, 0x80)
	refE5M2     = newRef(8, 2, 15, 0x7b, true, false, 0x7f)
	refE5M2FNUZ = newRef(8, 2, 16, 0x7f, false, true, 0x80)
)

func (r *refFormat) signBit() uint32 { return 1 << (r.width - 1) }

// magValue is the value of magnitude code c by the format's definition.
func (r *refFormat) magValue(c uint32) float64 {
	e := int(c >> r.manBits)
	frac := math.Ldexp(float64(c&(1<<r.manBits-1)), -r.manBits)
	if e == 0 {
		return math.Ldexp(frac, 1-r.bias)
	}
	return math.Ldexp(1+frac, e-r.bias)
}

// decode is the value of code c, with NaN and Inf per the format.
func (r *refFormat) decode(c uint32) float64 {
	mag := c &^ r.signBit()
	neg := c&r.signBit() != 0
	switch {
	case r.fnuz && c == r.signBit(), mag > r.maxCode && !(r.hasInf && mag == r.maxCode+1):
		return math.NaN()
	case mag > r.maxCode:
		return math.Inf(1 - 2*boolInt(neg))
	}
	v := r.vals[mag]
	if neg {
		v = math.Copysign(v, -1)
	}
	return v
}

// round returns the magnitude code nearest to mag >= 0, ties to the even
// code; ok is false when the nearest is past the largest finite value.
func (r *refFormat) round(mag float64) (c uint32, ok bool) {
	i := sort.SearchFloat64s(r.vals, mag)
	if i == len(r.vals) {
		return 0, false
	}
	if r.vals[i] != mag {
		below, above := mag-r.vals[i-1], r.vals[i]-mag
		if below < above || below == above && i%2 == 1 {
			i--
		}
	}
	return uint32(i), uint32(i) <= r.maxCode
}

// encode is the expected code for x. sat: overflow gives the largest
// finite value instead of Inf (or NaN where there is no Inf).
func (r *refFormat) encode(x float32, sat bool) uint32 {
	u := math.Float32bits(x)
	sign := u >> 31 << (r.width - 1)
	if x != x {
		if r.width == 8 {
			return r.nan
		}
		return 0x7fff
	}
	c, ok := r.round(math.Abs(float64(x)))
	switch {
	case ok:
	case sat:
		c = r.maxCode
	case r.hasInf:
		c = r.maxCode + 1
	default:
		return r.nan
	}
	if c == 0 && r.fnuz {
		return 0
	}
	return sign | c
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
