package collectives

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseSize parses a byte count as nccl-tests does: a non-negative integer with an optional K, M or G suffix
// (powers of 1024, case-insensitive; a trailing "B" is accepted too).
func ParseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(t, "B")
	shift := 0
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			shift = 10
		case 'M':
			shift = 20
		case 'G':
			shift = 30
		}
		if shift > 0 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("invalid size %q (want a non-negative integer with an optional K, M or G suffix)", s)
	}
	if v > math.MaxInt64>>shift {
		return 0, fmt.Errorf("size %q overflows 64 bits", s)
	}
	return v << shift, nil
}
