package gpuengine

import (
	"fmt"
	"strconv"
)

// Test hooks, read at Open (cfg.Env overrides the process environment), as package hostengine has them:
//
//	RCCLX_TESTS_SKIP_RANK=<r>     rank r launches nothing, so its peers wait for it until -T expires: Wait
//	                              then returns a *collectives.TimeoutError naming a waiting rank and its phase.
//	RCCLX_TESTS_CORRUPT_RANK=<r>  after each call, rank r flips the bit below the top bit of element 0 of its
//	                              output (a small kernel on its stream), so validation must count it wrong.
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
