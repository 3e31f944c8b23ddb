package results

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// FormatSize writes a byte count the short way: 64MiB, 12KiB, 100B.
func FormatSize(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d%s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%dB", n)
}

// ParsePercent reads "10%" or "10" as the fraction 0.10. A bare number above 0 and up to 1 is refused: "0.1"
// is as likely meant as a fraction (10%) as a percentage, and a gate must not guess.
func ParsePercent(s string) (float64, error) {
	t := strings.TrimSpace(s)
	number := strings.TrimSuffix(t, "%")
	v, err := strconv.ParseFloat(number, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("bad percentage %q (want e.g. 10%%)", s)
	}
	if number == t && v > 0 && v <= 1 {
		return 0, fmt.Errorf("ambiguous percentage %q: write %s%% or %s%%", s, number, strconv.FormatFloat(100*v, 'g', -1, 64))
	}
	return v / 100, nil
}

// SizeRange gives the sizes Min..Max (inclusive) their own gate threshold.
type SizeRange struct {
	Min, Max  int64
	Threshold float64
}

// ParseSizeRange reads "MIN-MAX=PCT", for example "0-64K=25%"; MAX may be
// left out ("1G-=5%") to mean every larger size.
func ParseSizeRange(s string) (SizeRange, error) {
	bad := fmt.Errorf("bad range %q (want MIN-MAX=PCT, e.g. 0-64K=25%%)", s)
	span, pct, ok := strings.Cut(s, "=")
	lo, hi, ok2 := strings.Cut(span, "-")
	if !ok || !ok2 {
		return SizeRange{}, bad
	}
	var r SizeRange
	var err error
	if r.Min, err = collectives.ParseSize(lo); err != nil {
		return SizeRange{}, bad
	}
	r.Max = math.MaxInt64
	if strings.TrimSpace(hi) != "" {
		if r.Max, err = collectives.ParseSize(hi); err != nil {
			return SizeRange{}, bad
		}
	}
	if r.Threshold, err = ParsePercent(pct); err != nil || r.Min > r.Max {
		return SizeRange{}, bad
	}
	return r, nil
}
