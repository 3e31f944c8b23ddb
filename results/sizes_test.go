package results

import (
	"math"
	"testing"
)

func TestFormatSize(t *testing.T) {
	for in, want := range map[int64]string{0: "0B", 8: "8B", 1000: "1000B", 1024: "1KiB", 1536: "1536B", 64 << 20: "64MiB", 1 << 30: "1GiB", 3 << 30: "3GiB"} {
		if got := FormatSize(in); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestParsePercentAndRange(t *testing.T) {
	if v, err := ParsePercent("12.5%"); err != nil || v != 0.125 {
		t.Errorf("ParsePercent = %v, %v", v, err)
	}
	if v, err := ParsePercent("10"); err != nil || v != 0.1 {
		t.Errorf("ParsePercent(10) = %v, %v", v, err)
	}
	if v, err := ParsePercent("0.5%"); err != nil || v != 0.005 {
		t.Errorf("ParsePercent(0.5%%) = %v, %v", v, err)
	}
	for _, in := range []string{"x", "-3%", "Inf%", "", "0.1", "1", "0.25"} {
		if _, err := ParsePercent(in); err == nil {
			t.Errorf("ParsePercent(%q) accepted", in)
		}
	}
	r, err := ParseSizeRange("0-64K=25%")
	if err != nil || r.Min != 0 || r.Max != 65536 || r.Threshold != 0.25 {
		t.Errorf("ParseSizeRange = %+v, %v", r, err)
	}
	r, err = ParseSizeRange("1G-=5%")
	if err != nil || r.Min != 1<<30 || r.Max != math.MaxInt64 {
		t.Errorf("open range = %+v, %v", r, err)
	}
	for _, in := range []string{"64K=25%", "0-64K", "64K-1K=5%", "a-b=1%"} {
		if _, err := ParseSizeRange(in); err == nil {
			t.Errorf("ParseSizeRange(%q) accepted", in)
		}
	}
}
