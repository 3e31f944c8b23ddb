package collectives

import "testing"

// The harness generates inputs and expectations once per size: at 128 MiB and 8 ranks this is most of the
// host-side cost of a validated run.
func BenchmarkInputFloat32M(b *testing.B) {
	k := AllReduce.Counts(128<<20, 8, 0, Float)
	b.SetBytes(128 << 20)
	for b.Loop() {
		AllReduce.Input(Float, Sum, 3, 8, k, 42)
	}
}

func BenchmarkExpectFloat32M8Ranks(b *testing.B) {
	k := AllReduce.Counts(128<<20, 8, 0, Float)
	b.SetBytes(128 << 20)
	for b.Loop() {
		AllReduce.Expect(Float, Sum, 0, -1, 8, k, 42, Tolerance{})
	}
}
