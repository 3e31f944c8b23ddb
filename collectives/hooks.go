package collectives

import (
	"fmt"
	"strconv"
)

// Test hooks, read by every engine (host, GPU and vendor) at communicator creation, Config.Env first. They exist so
// the suite can prove its failure paths end to end; neither is meant for measurements.
//
//	RCCLX_TESTS_SKIP_RANK=<r>     rank r returns from every call at once without taking part, so its peers
//	                              wait for it until -T expires: Wait then returns a *TimeoutError (exit code 4)
//	                              naming r as missing (where r is in the process that timed out), and a waiting
//	                              rank and its phase. Without -T they wait forever.
//	RCCLX_TESTS_CORRUPT_RANK=<r>  after each call, rank r flips CorruptMask in byte CorruptByte(size) of element
//	                              0 of its output (the bit below the top bit: a large change for every type,
//	                              never a sign flip of zero), so validation reports exactly one wrong element.
const (
	EnvSkipRank    = "RCCLX_TESTS_SKIP_RANK"
	EnvCorruptRank = "RCCLX_TESTS_CORRUPT_RANK"
	CorruptMask    = 0x40
)

// Hooks are the test hooks in force; -1 means none.
type Hooks struct {
	SkipRank, CorruptRank int
}

// HooksFromEnv reads the hooks; a value that is not a rank in [0, nranks) is an error naming the variable.
func HooksFromEnv(getenv func(string) string, nranks int) (Hooks, error) {
	h := Hooks{SkipRank: -1, CorruptRank: -1}
	for _, v := range []struct {
		name string
		dst  *int
	}{{EnvSkipRank, &h.SkipRank}, {EnvCorruptRank, &h.CorruptRank}} {
		s := getenv(v.name)
		if s == "" {
			continue
		}
		r, err := strconv.Atoi(s)
		if err != nil || r < 0 || r >= nranks {
			return Hooks{}, fmt.Errorf("%s=%q: want a rank in [0, %d)", v.name, s, nranks)
		}
		*v.dst = r
	}
	return h, nil
}

// CorruptByte is the byte of a little-endian element of size bytes that the corrupt hook flips: its top byte.
func CorruptByte(size int) int { return size - 1 }
