package numeric

import (
	"math"
	"math/rand/v2"
	"testing"
)

// converter is one float32 -> narrow conversion under test, with its decoder
// and the reference it must agree with.
type converter struct {
	name   string
	ref    *refFormat
	sat    bool
	encode func(float32) uint32
	decode func(uint32) float32
}

var fp8Formats = []struct {
	f   FP8
	ref *refFormat
}{{E4M3, refE4M3}, {E4M3FNUZ, refE4M3FNUZ}, {E5M2, refE5M2}, {E5M2FNUZ, refE5M2FNUZ}}

func converters() []converter {
	cs := []converter{
		{"f16", refF16, false,
			func(x float32) uint32 { return uint32(F32ToF16(x)) },
			func(c uint32) float32 { return F16ToF32(uint16(c)) }},
		{"bf16", refBF16, false,
			func(x float32) uint32 { return uint32(F32ToBF16(x)) },
			func(c uint32) float32 { return BF16ToF32(uint16(c)) }},
	}
	for _, ff := range fp8Formats {
		f := ff.f
		decode := func(c uint32) float32 { return f.Decode(uint8(c)) }
		cs = append(cs,
			converter{f.Name() + "/sat", ff.ref, true, func(x float32) uint32 { return uint32(f.Encode(x)) }, decode},
			converter{f.Name() + "/nosat", ff.ref, false, func(x float32) uint32 { return uint32(f.EncodeNoSat(x)) }, decode})
	}
	return cs
}

// sameFloat is bit equality, except that any NaN equals any NaN.
func sameFloat(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || a != a && b != b
}

func (cv converter) check(t *testing.T, x float32) {
	t.Helper()
	if got, want := cv.encode(x), cv.ref.encode(x, cv.sat); got != want {
		t.Errorf("%s: encode(%g = %#08x) = %#x, want %#x", cv.name, x, math.Float32bits(x), got, want)
	}
}

func TestDecodeAllCodes(t *testing.T) {
	for _, cv := range converters() {
		for c := range uint32(1) << cv.ref.width {
			if got, want := float64(cv.decode(c)), cv.ref.decode(c); !sameFloat(got, want) {
				t.Errorf("%s: decode(%#x) = %g, want %g", cv.name, c, got, want)
			}
		}
	}
}

// TestRoundTripAllCodes: every finite value encodes back to its own code;
// the other codes encode as the reference says (NaN, Inf or saturated).
func TestRoundTripAllCodes(t *testing.T) {
	for _, cv := range converters() {
		for c := range uint32(1) << cv.ref.width {
			x := cv.decode(c)
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				cv.check(t, x)
				if got := cv.decode(cv.encode(x)); math.IsNaN(float64(x)) && !math.IsNaN(float64(got)) {
					t.Errorf("%s: NaN code %#x came back as %g", cv.name, c, got)
				}
				continue
			}
			if got := cv.encode(x); got != c {
				t.Errorf("%s: encode(decode(%#x) = %g) = %#x", cv.name, c, x, got)
			}
		}
	}
}

// TestMidpoints checks every midpoint between adjacent values (including the
// one between the largest finite value and the next, missing, step), the
// float32 neighbours of each, and the values themselves, with both signs.
func TestMidpoints(t *testing.T) {
	for _, cv := range converters() {
		vals := cv.ref.vals
		for c := range len(vals) - 1 {
			mid := float32((vals[c] + vals[c+1]) / 2)
			if float64(mid) != (vals[c]+vals[c+1])/2 {
				t.Fatalf("%s: midpoint after code %#x is not a float32", cv.name, c)
			}
			for _, x := range []float32{mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, float32(math.Inf(1))), float32(vals[c])} {
				cv.check(t, x)
				cv.check(t, -x)
			}
		}
	}
}

func TestRandomValues(t *testing.T) {
	seed := rand.Uint64()
	n := 1_000_000
	if testing.Short() {
		n = 50_000
	}
	for _, cv := range converters() {
		rng := rand.New(rand.NewPCG(seed, 0))
		lo, hi := math.Log2(cv.ref.vals[1]/4), math.Log2(cv.ref.vals[cv.ref.maxCode]*4)
		fails := 0
		for range n {
			x := randomFloat32(rng, lo, hi)
			if got, want := cv.encode(x), cv.ref.encode(x, cv.sat); got != want {
				if fails++; fails <= 10 {
					t.Errorf("%s: encode(%g = %#08x) = %#x, want %#x (seed %d)", cv.name, x, math.Float32bits(x), got, want, seed)
				}
			}
		}
	}
}

// randomFloat32 draws from a mix: log-uniform over the whole float32 range,
// log-uniform over [2^lo, 2^hi] (around the format's own range), and special
// values. Signs are random.
func randomFloat32(rng *rand.Rand, lo, hi float64) float32 {
	sign := rng.Uint32() & f32SignBit
	var bits uint32
	switch p := rng.IntN(100); {
	case p < 45: // exponent field 0..254: subnormals and every binade
		bits = rng.Uint32N(255)<<23 | rng.Uint32()&(1<<23-1)
	case p < 90:
		bits = math.Float32bits(float32(math.Exp2(lo + (hi-lo)*rng.Float64())))
	case p < 93:
		bits = 0
	case p < 96:
		bits = f32InfBits
	default: // NaN with a random payload, quiet or signalling
		bits = f32InfBits | 1 + rng.Uint32N(1<<23-1)
	}
	return math.Float32frombits(sign | bits)
}

func TestKnownValues(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	negZero := math.Float32frombits(f32SignBit)
	cases := []struct {
		name string
		got  uint32
		want uint32
	}{
		{"e4m3 448", uint32(E4M3.Encode(448)), 0x7e},
		{"e4m3 NaN", uint32(E4M3.Encode(nan)), 0x7f},
		{"e4m3 1e9", uint32(E4M3.Encode(1e9)), 0x7e},
		{"e4m3 -500", uint32(E4M3.Encode(-500)), 0xfe},
		{"e4m3 464 (tie to even)", uint32(E4M3.Encode(464)), 0x7e},
		{"e4m3 +Inf", uint32(E4M3.Encode(inf)), 0x7e},
		{"e4m3 -Inf", uint32(E4M3.Encode(-inf)), 0xfe},
		{"e4m3 -0", uint32(E4M3.Encode(negZero)), 0x80},
		{"e4m3 -2^-11", uint32(E4M3.Encode(-0x1p-11)), 0x80},
		{"e4m3 2^-10 (tie to 0)", uint32(E4M3.Encode(0x1p-10)), 0x00},
		{"e4m3 3*2^-10 (tie to 2)", uint32(E4M3.Encode(3 * 0x1p-10)), 0x02},
		{"e4m3 1", uint32(E4M3.Encode(1)), 0x38},
		{"e4m3 nosat 464", uint32(E4M3.EncodeNoSat(464)), 0x7e},
		{"e4m3 nosat 465", uint32(E4M3.EncodeNoSat(465)), 0x7f},
		{"e5m2 nosat Inf", uint32(E5M2.EncodeNoSat(inf)), 0x7c},
		{"e5m2 nosat -Inf", uint32(E5M2.EncodeNoSat(-inf)), 0xfc},
		{"e5m2 nosat 61440", uint32(E5M2.EncodeNoSat(61440)), 0x7c},
		{"e5m2 Inf", uint32(E5M2.Encode(inf)), 0x7b},
		{"e5m2 1", uint32(E5M2.Encode(1)), 0x3c},
		{"e4m3fnuz 240", uint32(E4M3FNUZ.Encode(240)), 0x7f},
		{"e4m3fnuz 1", uint32(E4M3FNUZ.Encode(1)), 0x40},
		{"e4m3fnuz -0", uint32(E4M3FNUZ.Encode(negZero)), 0x00},
		{"e4m3fnuz -1e-9", uint32(E4M3FNUZ.Encode(-1e-9)), 0x00},
		{"e4m3fnuz NaN", uint32(E4M3FNUZ.Encode(nan)), 0x80},
		{"e4m3fnuz nosat 248", uint32(E4M3FNUZ.EncodeNoSat(248)), 0x80},
		{"e5m2fnuz 1", uint32(E5M2FNUZ.Encode(1)), 0x40},
		{"e5m2fnuz -Inf", uint32(E5M2FNUZ.Encode(-inf)), 0xff},
		{"f16 65504", uint32(F32ToF16(65504)), 0x7bff},
		{"f16 65520 (tie to Inf)", uint32(F32ToF16(65520)), 0x7c00},
		{"f16 2^-25 (tie to 0)", uint32(F32ToF16(0x1p-25)), 0x0000},
		{"f16 -2^-24", uint32(F32ToF16(-0x1p-24)), 0x8001},
		{"f16 1", uint32(F32ToF16(1)), 0x3c00},
		{"bf16 1", uint32(F32ToBF16(1)), 0x3f80},
		{"bf16 MaxFloat32", uint32(F32ToBF16(math.MaxFloat32)), 0x7f80},
		{"bf16 -NaN", uint32(F32ToBF16(math.Float32frombits(0xff800001))), 0x7fff},
		{"f16 NaN", uint32(F32ToF16(nan)), 0x7fff},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: got %#x, want %#x", c.name, c.got, c.want)
		}
	}
}

func TestFormatProperties(t *testing.T) {
	cases := []struct {
		f                FP8
		name             string
		max, minSub      float32
		manBits          int
		ulpRel           float64
		nanCode, maxCode uint8
	}{
		{E4M3, "e4m3", 448, 0x1p-9, 3, 0.125, 0x7f, 0x7e},
		{E4M3FNUZ, "e4m3fnuz", 240, 0x1p-10, 3, 0.125, 0x80, 0x7f},
		{E5M2, "e5m2", 57344, 0x1p-16, 2, 0.25, 0x7f, 0x7b},
		{E5M2FNUZ, "e5m2fnuz", 57344, 0x1p-17, 2, 0.25, 0x80, 0x7f},
	}
	for _, c := range cases {
		f := c.f
		if f.Name() != c.name || f.Max() != c.max || f.MinSubnormal() != c.minSub ||
			f.MantissaBits() != c.manBits || f.UlpRel() != c.ulpRel {
			t.Errorf("%s: name %q max %g minSub %g manBits %d ulpRel %g", c.name, f.Name(), f.Max(), f.MinSubnormal(), f.MantissaBits(), f.UlpRel())
		}
		if !math.IsNaN(float64(f.Decode(c.nanCode))) || f.Decode(c.maxCode) != c.max {
			t.Errorf("%s: Decode(%#x) = %g, Decode(%#x) = %g", c.name, c.nanCode, f.Decode(c.nanCode), c.maxCode, f.Decode(c.maxCode))
		}
	}
}
