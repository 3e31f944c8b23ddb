package hostengine

import (
	"math/rand/v2"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

const benchBytes = 128 << 20

// BenchmarkAllReduce8Ranks128MiB times `all_reduce_perf -b 128M -e 128M -g 8` on the host engine: float sum,
// ring, out of place, one thread driving 8 ranks. busbw is nccl-tests' bus bandwidth.
func BenchmarkAllReduce8Ranks128MiB(b *testing.B) {
	c := openGroups(b, 1, 8, nil, 0, 0)
	c8 := c.groups[0]
	coll, dt := collectives.AllReduce, collectives.Float
	call := &collectives.Call{Coll: coll, DType: dt, Op: collectives.Sum}
	input := make([]byte, benchBytes)
	for i := range input {
		input[i] = byte(i % 61) // small finite floats
	}
	for l := range c8.ranks {
		k := coll.Counts(benchBytes, 8, l, dt)
		send, _ := c8.Alloc(l, benchBytes)
		recv, _ := c8.Alloc(l, benchBytes)
		c8.Write(collectives.View{Buf: send}, input)
		c8.Write(collectives.View{Buf: recv}, input) // touch the pages before timing
		call.Counts = append(call.Counts, k)
		call.Send = append(call.Send, collectives.View{Buf: send})
		call.Recv = append(call.Recv, collectives.View{Buf: recv})
	}
	if algo := c8.Algorithm(call); algo != collectives.Ring {
		b.Fatalf("algorithm %s", algo)
	}
	b.SetBytes(benchBytes)
	b.ResetTimer()
	for range b.N {
		if err := c8.Launch(call); err != nil {
			b.Fatal(err)
		}
		if err := c8.Wait(); err != nil {
			b.Fatal(err)
		}
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(coll.BusBW(call.Counts[0], dt, sec, 8), "busbw_GB/s")
}

// BenchmarkMemcpy128MiB is this machine's copy bandwidth (one core, random data, destination pages touched),
// the yardstick for the all_reduce benchmark's busbw.
func BenchmarkMemcpy128MiB(b *testing.B) {
	src, dst := make([]byte, benchBytes), make([]byte, benchBytes)
	for i := range src {
		src[i] = byte(rand.Uint32())
	}
	copy(dst, src)
	b.SetBytes(benchBytes)
	b.ResetTimer()
	for range b.N {
		copy(dst, src)
	}
	b.ReportMetric(float64(benchBytes)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}
