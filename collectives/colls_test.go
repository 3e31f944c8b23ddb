package collectives

import (
	"strings"
	"testing"
)

// Counts, in-place offsets and bandwidth of nccl-tests 2.19.6's other collectives (src/<name>.cu).
func TestOtherCollectivesCounts(t *testing.T) {
	const size, n, rank = 1024, 3, 2
	p := int64(84) // 256 floats / 3 ranks, rounded down to 16 bytes
	for _, c := range []struct {
		coll                     *Collective
		send, recv, param        int64
		sendInPlace, recvInPlace int64
		bytes                    int64 // the size column
		algBytes                 int64 // bytes the algorithm bandwidth counts
		busFactor                float64
	}{
		{Broadcast, 256, 256, 256, 0, 0, 1024, 1024, 1},
		{Reduce, 256, 256, 256, 0, 0, 1024, 1024, 1},
		{Gather, p, 3 * p, p, rank * p, 0, 3 * p * 4, 3 * p * 4, 2.0 / 3},
		{Scatter, 3 * p, p, p, 0, rank * p, 3 * p * 4, 3 * p * 4, 2.0 / 3},
		{SendRecv, 256, 256, 256, 0, 0, 1024, 1024, 1},
		{HyperCube, p, 3 * p, p, rank * p, 0, 3 * p * 4, 2 * p * 4, 1},
		{AllReduceBias, 512, 256, 256, 0, 0, 1024, 1024, 4.0 / 3},
	} {
		k := c.coll.Counts(size, n, rank, Float)
		if k.Send != c.send || k.Recv != c.recv || k.Param != c.param || k.SendInPlace != c.sendInPlace ||
			k.RecvInPlace != c.recvInPlace || c.coll.Bytes(k, Float) != c.bytes {
			t.Errorf("%s: counts %+v, size column %d", c.coll.Name, k, c.coll.Bytes(k, Float))
		}
		if alg, bus := c.coll.AlgBW(k, Float, 1e-9), c.coll.BusBW(k, Float, 1e-9, n); !near(alg, float64(c.algBytes)) || !near(bus, float64(c.algBytes)*c.busFactor) {
			t.Errorf("%s: algbw %v busbw %v for 1 ns, want %v", c.coll.Name, alg, bus, c.algBytes)
		}
	}
}

// alltoallv's generated pattern on 4 ranks, 4096 bytes of floats: 1024 bytes per peer on average; spread 1
// sends distance d a share d/6 (rounded down to 16 bytes: 672, 1360, 2048), spread 0 the same 1024 to all.
func TestAllToAllVGeneratedPattern(t *testing.T) {
	for spread, want := range map[string][]int64{"1": {0, 168, 340, 512}, "0": {256, 256, 256, 256}, "0.5": {128, 212, 296, 384}} {
		env := map[string]string{envVSpread: spread}
		c, err := AllToAllV.Prepare(func(k string) string { return env[k] }, 4, 8, 4096)
		if err != nil {
			t.Fatal(err)
		}
		for r := range 4 {
			k := c.Counts(4096, 4, r, Float)
			var total int64
			for d := range 4 {
				if got := k.SendCounts[(r+d)%4]; got != want[d] {
					t.Errorf("spread %s: rank %d sends %d to distance %d, want %d", spread, r, got, d, want[d])
				}
				if got := k.RecvCounts[(r-d+4)%4]; got != want[d] {
					t.Errorf("spread %s: rank %d receives %d from distance %d, want %d", spread, r, got, d, want[d])
				}
				total += want[d]
			}
			if k.Param != 256 || k.Send != total || k.Recv != total || c.Bytes(k, Float) != total*4 || c.Checked(r, -1, 4, k) != total {
				t.Errorf("spread %s rank %d: %+v", spread, r, k)
			}
			// Peer p's part for r starts after what p sends to the ranks below r.
			for p := range 4 {
				var off int64
				for q := range r {
					off += c.Counts(4096, 4, p, Float).SendCounts[q]
				}
				if k.SrcDispls[p] != off {
					t.Errorf("spread %s: rank %d's part of rank %d's send view at %d, want %d", spread, r, p, k.SrcDispls[p], off)
				}
			}
		}
	}
}

func TestPrepare(t *testing.T) {
	none := func(string) string { return "" }
	for _, c := range All() {
		got, err := c.Prepare(none, 4, 8, 1024)
		if err != nil || got.Base() != c {
			t.Errorf("%s on 4 ranks: %v", c.Name, err)
		}
	}
	if _, err := HyperCube.Prepare(none, 6, 8, 8); err == nil || !strings.Contains(err.Error(), "power-of-two") {
		t.Errorf("hypercube on 6 ranks: %v", err)
	}
	if Reduce.Checked(1, 0, 3, Reduce.Counts(64, 3, 1, Float)) != 0 || Gather.Checked(0, 0, 3, Gather.Counts(64, 3, 0, Float)) != 12 {
		t.Error("reduce and gather: output only at the root")
	}
	if HyperCube.RedOpName(Max) != "" || SendRecv.RedOpName(Max) != "max" || Broadcast.RedOpName(Max) != "none" || !SendRecv.SweepsOps() {
		t.Error("redop columns")
	}
}
