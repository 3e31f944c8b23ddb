package report

import "testing"

func TestFitNumber(t *testing.T) {
	for _, c := range []struct {
		v     float64
		width int
		want  string
	}{
		{0, 6, "  0.00"}, {18.6, 7, "  18.60"}, {3259.7, 7, "3259.70"}, {51702.14, 7, "51702.1"},
		{103274.4, 7, " 103274"}, {9999999, 7, "9999999"}, {12345678, 7, "1.2e+07"}, {1234.5, 6, "1234.5"},
		{123456, 6, "123456"}, {1234567, 6, " 1e+06"}, {0.004, 6, "  0.00"},
	} {
		if got := fitNumber(c.v, c.width); got != c.want {
			t.Errorf("fitNumber(%v, %d) = %q, want %q", c.v, c.width, got, c.want)
		}
	}
}

func TestCG(t *testing.T) {
	for v, want := range map[float64]string{86.56523: "86.5652", 0: "0", 1234567: "1.23457e+06", 2.5: "2.5"} {
		if got := cG(v); got != want {
			t.Errorf("cG(%v) = %q, want %q", v, got, want)
		}
	}
}
