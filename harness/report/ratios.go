package report

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

func keyRows(rows []Row) map[rowKey]Row {
	out := map[rowKey]Row{}
	seen := map[rowKey]int{}
	for _, r := range rows {
		k := rowKey{size: r.Size, dtype: r.DType, redop: r.Redop}
		k.n = seen[k]
		seen[k]++
		out[k] = r
	}
	return out
}

// WriteRatios compares each engine's times with the first engine's, row by row, as "#" lines: runs are the
// engines' rows in order, by engine name ("" where the engine could not be created).
func WriteRatios(out io.Writer, names []string, runs [][]Row) {
	if names[0] == "" {
		return
	}
	ref := keyRows(runs[0])
	for i, rows := range runs[1:] {
		if names[i+1] == "" {
			continue
		}
		fmt.Fprintf(out, "# Time ratio %s / %s:\n", names[i+1], names[0])
		fmt.Fprintf(out, "# %10s  %8s  %6s  %12s  %12s\n", "size", "type", "redop", "out-of-place", "in-place")
		seen := map[rowKey]int{}
		for _, r := range rows {
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

func ratio(h, base Half) string {
	if !h.Ran || !base.Ran || base.Sec <= 0 {
		return "N/A"
	}
	return fmt.Sprintf("%.3f", h.Sec/base.Sec)
}
