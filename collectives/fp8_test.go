package collectives

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// useFP8 sets the run's FP8 flavour for one test and restores the previous one after it.
func useFP8(t *testing.T, f FP8Flavour) {
	before := RunFP8Flavour()
	UseFP8Flavour(f)
	t.Cleanup(func() { UseFP8Flavour(before) })
}

func TestParseFP8Flavour(t *testing.T) {
	for in, want := range map[string]FP8Flavour{"": FP8OCP, "ocp": FP8OCP, "FNUZ": FP8FNUZ, " fnuz": FP8FNUZ} {
		if got, err := ParseFP8Flavour(in); err != nil || got != want {
			t.Errorf("ParseFP8Flavour(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	if _, err := ParseFP8Flavour("e4m3"); err == nil {
		t.Error("ParseFP8Flavour(e4m3) must fail")
	}
}

// TestFNUZData: under FNUZ the generated inputs and expected outputs of the FP8 types are the same values as
// under OCP, in FNUZ codes (bytes that differ, since 1.0 is 0x38 in OCP E4M3 and 0x40 in FNUZ).
func TestFNUZData(t *testing.T) {
	seed := rand.Uint64()
	const n = 4
	for _, dt := range []DType{F8E4M3, F8E5M2} {
		for _, op := range []Op{Sum, Prod, Max, MulSum} {
			k := AllReduce.Counts(999, n, 1, dt)
			gen := func(f FP8Flavour) ([]byte, *Expectation) {
				useFP8(t, f)
				return AllReduce.Input(dt, op, 1, n, k, seed), AllReduce.Expect(dt, op, 1, -1, n, k, seed, Tolerance{})
			}
			ocpIn, ocpWant := gen(FP8OCP)
			fnuzIn, fnuzWant := gen(FP8FNUZ)
			if bytes.Equal(ocpIn, fnuzIn) || bytes.Equal(ocpWant.Want(), fnuzWant.Want()) {
				t.Fatalf("%s %s: FNUZ data has OCP's bytes", dt, op)
			}
			ocp, fnuz := FP8OCP.Format(dt), FP8FNUZ.Format(dt)
			pairs := map[string][2][]byte{"input": {ocpIn, fnuzIn}, "expected": {ocpWant.Want(), fnuzWant.Want()}}
			for name, pair := range pairs {
				for i := range pair[0] {
					if a, b := ocp.Decode(pair[0][i]), fnuz.Decode(pair[1][i]); a != b {
						t.Fatalf("%s %s %s element %d: OCP %#x = %g, FNUZ %#x = %g", dt, op, name, i, pair[0][i], a, pair[1][i], b)
					}
				}
			}
		}
	}
}

// TestFP8FlavourCodecs: EncodeFloat and DecodeFloat follow the flavour for the FP8 types only; FP8 saturates.
func TestFP8FlavourCodecs(t *testing.T) {
	cases := []struct {
		f         FP8Flavour
		dt        DType
		v         float64
		bits      uint64
		roundTrip float64
	}{
		{FP8OCP, F8E4M3, 1, 0x38, 1}, {FP8FNUZ, F8E4M3, 1, 0x40, 1}, {FP8FNUZ, F8E4M3, 1000, 0x7f, 240},
		{FP8FNUZ, F8E4M3, -1000, 0xff, -240}, {FP8OCP, F8E4M3, 1000, 0x7e, 448}, {FP8OCP, F8E5M2, -2, 0xc0, -2},
		{FP8FNUZ, F8E5M2, -2, 0xc4, -2}, {FP8FNUZ, Half, 1, 0x3c00, 1},
	}
	for _, c := range cases {
		if got := c.f.EncodeFloat(c.dt, c.v); got != c.bits {
			t.Errorf("%s %s %g: %#x, want %#x", c.f, c.dt, c.v, got, c.bits)
		}
		if got := c.f.DecodeFloat(c.dt, c.bits); got != c.roundTrip {
			t.Errorf("%s %s decode %#x: %g, want %g", c.f, c.dt, c.bits, got, c.roundTrip)
		}
	}
	useFP8(t, FP8FNUZ)
	if EncodeFloat(F8E4M3, 1) != 0x40 || DecodeFloat(F8E5M2, 0x44) != 2 {
		t.Error("EncodeFloat/DecodeFloat do not follow the run's flavour")
	}
}
