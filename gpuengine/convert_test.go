package gpuengine

import (
	"bufio"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/kernels"
	"github.com/rcclx-tests/rcclx-tests/numeric"
)

// hostDriver compiles kernels/convert.cuh as host C++ and converts every float32 bit pattern read from stdin
// (one per line, hex) to fp16, bf16, E4M3 and E5M2, and every 8- and 16-bit code back; its first line is
// RX_E4M3_MAX.
const hostDriver = `#include <cstdio>
#include <cstring>
typedef unsigned char u8; typedef unsigned short u16; typedef unsigned int u32;
#define RX_DEV static inline
static u32 f32_bits(float f) { u32 u; std::memcpy(&u, &f, 4); return u; }
static float bits_f32(u32 u) { float f; std::memcpy(&f, &u, 4); return f; }
#include "convert.cuh"
int main() {
  std::printf("%08x\n", f32_bits(RX_E4M3_MAX));
  for (u32 c = 0; c < 65536; c++) {
    std::printf("%08x %08x", f32_bits(f16_to_f32((u16)c)), f32_bits(bf16_to_f32((u16)c)));
    if (c < 256) std::printf(" %08x %08x", f32_bits(e4m3_to_f32((u8)c)), f32_bits(e5m2_to_f32((u8)c)));
    std::printf("\n");
  }
  u32 u;
  while (std::scanf("%x", &u) == 1) {
    float f = bits_f32(u);
    std::printf("%04x %04x %02x %02x\n", f32_to_f16(f), f32_to_bf16(f), f32_to_e4m3(f), f32_to_e5m2(f));
  }
}
`

// The kernels' bit-arithmetic conversions agree with package numeric: every code decodes alike, and encoding
// agrees on special values, every boundary region and a million random float32 bit patterns; in OCP, and in
// FNUZ as hiprtc compiles them for gfx942 (-DRX_FP8_FNUZ=1).
func TestConversionsMatchNumeric(t *testing.T) {
	cxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("no g++: the host build of kernels/convert.cuh needs a C++ compiler")
	}
	dir := t.TempDir()
	conv, _ := os.ReadFile(filepath.Join("..", "kernels", "convert.cuh"))
	if !strings.Contains(kernels.Source(), string(conv)) {
		t.Fatal("kernels/convert.cuh is not part of kernels.Source()")
	}
	os.WriteFile(filepath.Join(dir, "convert.cuh"), conv, 0o644)
	os.WriteFile(filepath.Join(dir, "main.cpp"), []byte(hostDriver), 0o644)
	inputs := conversionInputs()
	var stdin strings.Builder
	for _, u := range inputs {
		fmt.Fprintf(&stdin, "%x\n", u)
	}
	for _, fl := range []struct {
		e4, e5 numeric.FP8
		define string
	}{{numeric.E4M3, numeric.E5M2, "-DRX_FP8_FNUZ=0"}, {numeric.E4M3FNUZ, numeric.E5M2FNUZ, "-DRX_FP8_FNUZ=1"}} {
		t.Run(fl.e4.Name(), func(t *testing.T) {
			bin := filepath.Join(dir, fl.e4.Name())
			cmd := exec.Command(cxx, "-O2", fl.define, "-o", bin, filepath.Join(dir, "main.cpp"))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("g++: %v\n%s", err, out)
			}
			compareConversions(t, bin, stdin.String(), inputs, fl.e4, fl.e5)
		})
	}
}

// compareConversions runs the host driver bin on stdin, the bit patterns inputs, and compares its codes with
// package numeric's, the FP8 types in formats e4 and e5.
func compareConversions(t *testing.T, bin, stdin string, inputs []uint32, e4, e5 numeric.FP8) {
	cmd := exec.Command(bin)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	bad := 0
	report := func(format string, args ...any) {
		if bad++; bad <= 20 {
			t.Errorf(format, args...)
		}
	}
	same := func(a uint32, b float32) bool { return a == math.Float32bits(b) || (isNaN32(a) && b != b) }
	sc.Scan()
	var max4 uint32
	if fmt.Sscanf(sc.Text(), "%x", &max4); !same(max4, e4.Max()) {
		t.Errorf("RX_E4M3_MAX is %g, %s's largest value %g", math.Float32frombits(max4), e4.Name(), e4.Max())
	}
	for c := range 65536 {
		sc.Scan()
		var h, b, d4, d5 uint32
		n, _ := fmt.Sscanf(sc.Text(), "%x %x %x %x", &h, &b, &d4, &d5)
		if !same(h, numeric.F16ToF32(uint16(c))) || !same(b, numeric.BF16ToF32(uint16(c))) {
			report("decode %04x: fp16 %08x bf16 %08x", c, h, b)
		}
		if n == 4 && (!same(d4, e4.Decode(uint8(c))) || !same(d5, e5.Decode(uint8(c)))) {
			report("decode %02x: %s %08x %s %08x", c, e4.Name(), d4, e5.Name(), d5)
		}
	}
	for _, u := range inputs {
		sc.Scan()
		var h, b, c4, c5 uint32
		fmt.Sscanf(sc.Text(), "%x %x %x %x", &h, &b, &c4, &c5)
		f := math.Float32frombits(u)
		want := [4]uint32{uint32(numeric.F32ToF16(f)), uint32(numeric.F32ToBF16(f)),
			uint32(e4.Encode(f)), uint32(e5.Encode(f))}
		if [4]uint32{h, b, c4, c5} != want {
			report("encode %08x (%g): got %04x %04x %02x %02x, numeric %04x %04x %02x %02x", u, f, h, b, c4, c5,
				want[0], want[1], want[2], want[3])
		}
	}
}

func isNaN32(u uint32) bool { return u&0x7fffffff > 0x7f800000 }

// conversionInputs are float32 bit patterns: specials, dense runs around every exponent (ties and
// subnormal/overflow edges of all four formats) and random patterns, all with both signs.
func conversionInputs() []uint32 {
	var out []uint32
	add := func(u uint32) { out = append(out, u, u|0x80000000) }
	for _, u := range []uint32{0, 1, 0x7fffff, 0x800000, 0x7f800000, 0x7fc00000, 0x7f800001} {
		add(u)
	}
	for e := uint32(90); e < 160; e++ {
		for m := uint32(0); m < 1<<23; m += 1<<23/512 - 1 {
			add(e<<23 | m)
		}
		for _, low := range []uint32{0x0fff, 0x1000, 0x1001, 0x8000, 0x7fff, 0x8001, 0x10000, 0x100000, 0x80000, 0x7ffff, 0x80001} {
			add(e<<23 | low)
			add(e<<23 | 0x7fffff ^ low)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1 << 19 {
		add(rng.Uint32() & 0x7fffffff)
	}
	return out
}
