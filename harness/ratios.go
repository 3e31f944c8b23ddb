package harness

import (
	"fmt"
	"io"
)

// rowKey identifies a row across engines; n counts repeats of the same key (-N cycles).
type rowKey struct {
	size         int64
	dtype, redop string
	n            int
}

func keyRows(rows []row) map[rowKey]row {
	out := map[rowKey]row{}
	seen := map[rowKey]int{}
	for _, r := range rows {
		k := rowKey{size: r.size, dtype: r.dtype, redop: r.redop}
		k.n = seen[k]
		seen[k]++
		out[k] = r
	}
	return out
}

// writeRatios compares each engine's times with the first engine's, row by row, as "#" lines.
func writeRatios(out io.Writer, runs []*session) {
	base := runs[0]
	if base.eng == nil {
		return
	}
	ref := keyRows(base.rows)
	for _, s := range runs[1:] {
		if s.eng == nil {
			continue
		}
		fmt.Fprintf(out, "# Time ratio %s / %s:\n", s.eng.Name(), base.eng.Name())
		fmt.Fprintf(out, "# %10s  %8s  %6s  %12s  %12s\n", "size", "type", "redop", "out-of-place", "in-place")
		seen := map[rowKey]int{}
		for _, r := range s.rows {
			k := rowKey{size: r.size, dtype: r.dtype, redop: r.redop}
			k.n = seen[k]
			seen[k]++
			b, ok := ref[k]
			if !ok {
				continue
			}
			fmt.Fprintf(out, "# %10d  %8s  %6s  %12s  %12s\n", r.size, r.dtype, r.redop,
				ratio(r.halves[0], b.halves[0]), ratio(r.halves[1], b.halves[1]))
		}
	}
}

func ratio(h, base halfResult) string {
	if !h.ran || !base.ran || base.sec <= 0 {
		return "N/A"
	}
	return fmt.Sprintf("%.3f", h.sec/base.sec)
}
