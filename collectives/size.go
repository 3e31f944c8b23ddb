package collectives

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseSize parses a byte count as nccl-tests does: a non-negative number with an optional K, M or G suffix
// (powers of 1024, case-insensitive; a trailing "B" is accepted too). A fraction is allowed and the product is
// truncated to whole bytes, as nccl-tests' cast does: "1.5M" is 1572864, "0.5" is 0.
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
	bad := fmt.Errorf("invalid size %q (want a non-negative number with an optional K, M or G suffix)", s)
	if v, err := strconv.ParseInt(t, 10, 64); err == nil || !strings.Contains(t, ".") {
		// Whole numbers stay exact; only a decimal point takes the floating-point path.
		if err != nil && !errors.Is(err, strconv.ErrRange) || v < 0 {
			return 0, bad
		}
		if err != nil || v > math.MaxInt64>>shift {
			return 0, fmt.Errorf("size %q overflows 64 bits", s)
		}
		return v << shift, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || math.IsNaN(f) || strings.ContainsAny(t, "EXPNI+-") {
		return 0, bad
	}
	f = math.Ldexp(f, shift)
	if f >= math.MaxInt64 {
		return 0, fmt.Errorf("size %q overflows 64 bits", s)
	}
	return int64(f), nil
}
