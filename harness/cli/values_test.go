package cli

import "testing"

// FuzzSizeFlag: the size flag never panics, and what it accepts prints back to the same value.
func FuzzSizeFlag(f *testing.F) {
	for _, s := range []string{"8", "32M", "1G", "4k", "0", "12Q", "-1", "9223372036854775807", "8589934592G", "1.5M", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var n int64
		v := &sizeValue{p: &n}
		if err := v.Set(s); err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("%q parsed to negative %d", s, n)
		}
		var back int64
		if err := (&sizeValue{p: &back}).Set(v.String()); err != nil || back != n {
			t.Fatalf("%q -> %d -> %q -> %d (%v)", s, n, v.String(), back, err)
		}
	})
}
