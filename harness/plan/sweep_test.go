package plan

import "testing"

// TestSizes: the sweep between -b and -e, by -f or -i, never overflowing.
func TestSizes(t *testing.T) {
	for _, c := range []struct {
		lo, hi, step, factor int64
		want                 []int64
	}{
		{8, 64, 1, 2, []int64{8, 16, 32, 64}},
		{8, 100, 1, 2, []int64{8, 16, 32, 64}},
		{1, 10, 4, 1, []int64{1, 5, 9}},
		{0, 0, 1, 2, []int64{0}},
		{32 << 20, 32 << 20, 1 << 20, 1, []int64{32 << 20}},
		{1 << 62, 1<<63 - 1, 1, 4, []int64{1 << 62}},
		{1<<63 - 2, 1<<63 - 1, 1 << 62, 1, []int64{1<<63 - 2}},
	} {
		got := Sizes(c.lo, c.hi, c.step, c.factor)
		if len(got) != len(c.want) {
			t.Errorf("Sizes(%d, %d, %d, %d) = %v, want %v", c.lo, c.hi, c.step, c.factor, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("Sizes(%d, %d, %d, %d) = %v, want %v", c.lo, c.hi, c.step, c.factor, got, c.want)
			}
		}
	}
}
