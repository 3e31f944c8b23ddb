package numeric

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

// halfSlice is one 16-bit format's slice conversions with the scalar ones they must match bit for bit.
type halfSlice struct {
	name    string
	encode  func(float32) uint16
	decode  func(uint16) float32
	encodeS func([]uint16, []float32)
	decodeS func([]float32, []uint16)
}

var halfSlices = []halfSlice{
	{"f16", F32ToF16, F16ToF32, F32ToF16Slice, F16ToF32Slice},
	{"bf16", F32ToBF16, BF16ToF32, F32ToBF16Slice, BF16ToF32Slice},
}

// checkEncode encodes src with the slice function into a poisoned buffer one longer than src and compares
// every code with the scalar function's; it returns how many differ, reporting the first few.
func (h halfSlice) checkEncode(t *testing.T, src []float32, dst []uint16) int {
	t.Helper()
	dst = dst[:len(src)+1]
	for i := range dst {
		dst[i] = 0xdead
	}
	h.encodeS(dst, src)
	bad := 0
	for i, x := range src {
		if want := h.encode(x); dst[i] != want {
			if bad++; bad <= 5 {
				t.Errorf("%s: slice encode(%g = %#08x) = %#04x, scalar %#04x", h.name, x, math.Float32bits(x), dst[i], want)
			}
		}
	}
	if dst[len(src)] != 0xdead {
		t.Errorf("%s: encode wrote past len(src)", h.name)
	}
	return bad
}

func TestHalfSliceDecodeAllCodes(t *testing.T) {
	codes := make([]uint16, 1<<16)
	for i := range codes {
		codes[i] = uint16(i)
	}
	rand.Shuffle(len(codes), func(i, j int) { codes[i], codes[j] = codes[j], codes[i] })
	for _, h := range halfSlices {
		dst := make([]float32, len(codes)+1)
		for i := range dst {
			dst[i] = float32(rand.NormFloat64())
		}
		guard := dst[len(codes)]
		h.decodeS(dst, codes)
		for i, c := range codes {
			if got, want := math.Float32bits(dst[i]), math.Float32bits(h.decode(c)); got != want {
				t.Errorf("%s: slice decode(%#04x) = %#08x, scalar %#08x", h.name, c, got, want)
			}
		}
		if dst[len(codes)] != guard {
			t.Errorf("%s: decode wrote past len(src)", h.name)
		}
	}
}

// boundaryInputs are, for every code of the format, its value, the midpoint to the next code (the one past the
// largest finite value included) and the float32 neighbours of both, with both signs, plus float32's own
// specials.
func boundaryInputs(decode func(uint16) float32) []float32 {
	xs := []float32{math.MaxFloat32, math.SmallestNonzeroFloat32, float32(math.Inf(1)), float32(math.NaN()),
		math.Float32frombits(0x7f800001), math.Float32frombits(0x7fffffff), math.Float32frombits(f32AbsMask - 0x7fff)}
	c := uint16(0)
	for ; !math.IsInf(float64(decode(c)), 0); c++ {
		v := float64(decode(c))
		next := float64(decode(c + 1))
		if math.IsInf(next, 0) {
			next = 2*v - float64(decode(c-1)) // the missing step after the largest finite value
		}
		for _, y := range []float32{float32(v), float32((v + next) / 2)} {
			xs = append(xs, y, math.Nextafter32(y, 0), math.Nextafter32(y, float32(math.Inf(1))))
		}
	}
	for ; c < 0x8000; c++ { // Inf and the NaNs
		xs = append(xs, decode(c))
	}
	for i, n := 0, len(xs); i < n; i++ {
		xs = append(xs, -xs[i])
	}
	return xs
}

func TestHalfSliceEncodeBoundaries(t *testing.T) {
	for _, h := range halfSlices {
		src := boundaryInputs(h.decode)
		h.checkEncode(t, src, make([]uint16, len(src)+1))
	}
}

// TestHalfSliceEncodeRandom checks 10^7 inputs per format: random bit patterns and randomFloat32's mix.
func TestHalfSliceEncodeRandom(t *testing.T) {
	total := 10_000_000
	if testing.Short() {
		total = 1_000_000
	}
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 0))
	src := make([]float32, 1<<16)
	dst := make([]uint16, len(src)+1)
	for _, h := range halfSlices {
		for done := 0; done < total; done += len(src) {
			for i := range src {
				if i%2 == 0 {
					src[i] = math.Float32frombits(rng.Uint32())
				} else {
					src[i] = randomFloat32(rng, -26, 17)
				}
			}
			if h.checkEncode(t, src, dst) > 0 {
				t.Fatalf("%s: seed %d", h.name, seed)
			}
		}
	}
}

// TestHalfSliceEncodeAllFloat32 checks every float32 bit pattern (a minute or more on two cores).
func TestHalfSliceEncodeAllFloat32(t *testing.T) {
	if testing.Short() {
		t.Skip("all 2^32 inputs: skipped under -short")
	}
	const chunk = 1 << 16
	for _, h := range halfSlices {
		next := make(chan uint32)
		var wg sync.WaitGroup
		for range runtime.GOMAXPROCS(0) {
			wg.Go(func() {
				src := make([]float32, chunk)
				dst := make([]uint16, chunk+1)
				for base := range next {
					for i := range src {
						src[i] = math.Float32frombits(base + uint32(i))
					}
					h.checkEncode(t, src, dst)
				}
			})
		}
		for base := uint64(0); base < 1<<32; base += chunk {
			next <- uint32(base)
		}
		close(next)
		wg.Wait()
	}
}
