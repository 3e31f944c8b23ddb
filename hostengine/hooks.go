package hostengine

import (
	"fmt"
	"strconv"
)

// Test hooks, read at Open (cfg.Env overrides the process environment). They exist so that the suite can prove
// its failure paths end to end; neither is meant for measurements.
//
//	RCCLX_TESTS_SKIP_RANK=<r>     rank r returns from every call at once without taking part, so its peers
//	                              wait for it until -T expires: Wait then returns a *collectives.TimeoutError
//	                              (exit code 4) naming a waiting rank and its phase. Without -T they wait forever.
//	RCCLX_TESTS_CORRUPT_RANK=<r>  after each call, rank r flips one bit of element 0 of its output (the bit
//	                              below the top bit: a large change for every type, never a sign flip of zero),
//	                              so validation must report exactly one wrong element for that rank.
const (
	envSkipRank    = "RCCLX_TESTS_SKIP_RANK"
	envCorruptRank = "RCCLX_TESTS_CORRUPT_RANK"
)

type hooks struct {
	skipRank, corruptRank int // -1: none
}

func readHooks(getenv func(string) string, nranks int) (hooks, error) {
	h := hooks{skipRank: -1, corruptRank: -1}
	for _, v := range []struct {
		name string
		dst  *int
	}{{envSkipRank, &h.skipRank}, {envCorruptRank, &h.corruptRank}} {
		s := getenv(v.name)
		if s == "" {
			continue
		}
		r, err := strconv.Atoi(s)
		if err != nil || r < 0 || r >= nranks {
			return hooks{}, fmt.Errorf("%s=%q: want a rank in [0, %d)", v.name, s, nranks)
		}
		*v.dst = r
	}
	return h, nil
}

// corrupt flips the bit below the top bit of element 0 of out (little-endian elements of size bytes).
func corrupt(out []byte, size int) {
	if len(out) >= size {
		out[size-1] ^= 0x40
	}
}
