package harness

import (
	"fmt"
	"io"

	"github.com/rcclx-tests/rcclx-tests/harness/report"
)

// rowKey identifies a row across engines; n counts repeats of the same key (-N cycles).
type rowKey struct {
	size         int64
	dtype, redop string
	n            int
}

func keyRows(rows []report.Row) map[rowKey]report.Row {
	out := map[rowKey]report.Row{}
	seen := map[rowKey]int{}
	for _, r := range rows {
		k := rowKey{size: r.Size, dtype: r.DType, redop: r.Redop}
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
			k := rowKey{size: r.Size, dtype: r.DType, redop: r.Redop}
			k.n = seen[k]
			seen[k]++
			b, ok := ref[k]
			if !ok {
				continue
			}
			fmt.Fprintf(out, "# %10d  %8s  %6s  %12s  %12s\n", r.Size, r.DType, r.Redop,
				ratio(r.Halves[0], b.Halves[0]), ratio(r.Halves[1], b.Halves[1]))
		}
	}
}

func ratio(h, base report.Half) string {
	if !h.Ran || !base.Ran || base.Sec <= 0 {
		return "N/A"
	}
	return fmt.Sprintf("%.3f", h.Sec/base.Sec)
}
