package numeric

import (
	"math/rand/v2"
	"testing"
)

const benchElems = 1 << 16

// Throughput is reported per byte of float32 data (4 bytes an element), the
// side the host engine works in.
func BenchmarkEncodeSlice(b *testing.B) {
	src := make([]float32, benchElems)
	for i := range src {
		src[i] = float32(rand.NormFloat64() * 100)
	}
	dst := make([]uint8, benchElems)
	for _, ff := range fp8Formats {
		b.Run(ff.f.Name(), func(b *testing.B) {
			b.SetBytes(4 * benchElems)
			for b.Loop() {
				ff.f.EncodeSlice(dst, src)
			}
		})
	}
}

func BenchmarkDecodeAdd(b *testing.B) {
	src := make([]uint8, benchElems)
	for i := range src {
		src[i] = uint8(rand.Uint32())
	}
	dst := make([]float32, benchElems)
	b.SetBytes(4 * benchElems)
	for b.Loop() {
		E4M3.DecodeAdd(dst, src)
	}
}

func TestSlicesMatchScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), 0))
	for _, ff := range fp8Formats {
		f := ff.f
		n := 1000 + rng.IntN(1000)
		src := make([]float32, n)
		for i := range src {
			src[i] = randomFloat32(rng, -20, 20)
		}
		enc := make([]uint8, n+1)
		enc[n] = 0xaa // poison past the end: must stay
		f.EncodeSlice(enc, src)
		dec := make([]float32, n)
		f.DecodeSlice(dec, enc[:n])
		sum := make([]float32, n)
		for i := range sum {
			sum[i] = float32(rng.NormFloat64())
		}
		base := append([]float32(nil), sum...)
		f.DecodeAdd(sum, enc[:n])
		for i, x := range src {
			c := f.Encode(x)
			if enc[i] != c || !sameFloat(float64(dec[i]), float64(f.Decode(c))) ||
				!sameFloat(float64(sum[i]), float64(base[i]+f.Decode(c))) {
				t.Fatalf("%s [%d] x=%g: EncodeSlice %#x DecodeSlice %g DecodeAdd %g, want %#x %g %g",
					f.Name(), i, x, enc[i], dec[i], sum[i], c, f.Decode(c), base[i]+f.Decode(c))
			}
		}
		if enc[n] != 0xaa {
			t.Errorf("%s: EncodeSlice wrote past len(src)", f.Name())
		}
	}
}

// BenchmarkHalfSlices compares the 16-bit slice conversions with a loop over the scalar ones (what callers
// had before the slice functions).
func BenchmarkHalfSlices(b *testing.B) {
	src := make([]float32, benchElems)
	for i := range src {
		src[i] = float32(rand.NormFloat64() * 100)
	}
	codes := make([]uint16, benchElems)
	dec := make([]float32, benchElems)
	for _, h := range halfSlices {
		loops := []struct {
			name string
			run  func()
		}{
			{"encode/scalar", func() {
				for i, x := range src {
					codes[i] = h.encode(x)
				}
			}},
			{"encode/slice", func() { h.encodeS(codes, src) }},
			{"decode/scalar", func() {
				for i, c := range codes {
					dec[i] = h.decode(c)
				}
			}},
			{"decode/slice", func() { h.decodeS(dec, codes) }},
		}
		for _, l := range loops {
			b.Run(h.name+"/"+l.name, func(b *testing.B) {
				b.SetBytes(4 * benchElems)
				for b.Loop() {
					l.run()
				}
			})
		}
	}
}
