package results

import (
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// anchorPath is the copy of nccl-tests' all_reduce -J output in testdata.
var anchorPath = filepath.Join("testdata", "nccl-tests-all_reduce.json")

func loadAnchor(t *testing.T) *Record {
	t.Helper()
	rec, err := Load(anchorPath)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// synthRecord makes an all_reduce record over sizes 8B..2^(n+2)B with random
// times around base(size) scaled by factor; rounds > 0 adds that many rounds
// with relative noise.
func synthRecord(rng *rand.Rand, n int, factor float64, rounds int, noise float64) *Record {
	rec := &Record{Version: SchemaVersion, Args: []string{"./all_reduce_perf"}}
	for i := 0; i < n; i++ {
		size := int64(8) << i
		base := 10 + float64(size)/2e5
		res := Result{Size: size, Count: size / 4, Type: "float", Redop: "sum", Root: RootString(-1)}
		for _, h := range res.halves() {
			*h = synthHalf(rng, size, base*factor, rounds, noise)
		}
		rec.Results = append(rec.Results, res)
	}
	return rec
}

func synthHalf(rng *rand.Rand, size int64, mean float64, rounds int, noise float64) Half {
	var h Half
	t := mean
	for r := 0; r < rounds; r++ {
		h.Rounds = append(h.Rounds, mean*(1+noise*rng.NormFloat64()))
	}
	if rounds > 0 {
		t = 0
		for _, x := range h.Rounds {
			t += x / float64(rounds)
		}
	}
	zero := 0.0
	h.Time, h.NWrong = &t, &zero
	h.AlgBW = float64(size) / t / 1e3
	h.BusBW = h.AlgBW
	return h
}

func newRand() *rand.Rand {
	return rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
}
