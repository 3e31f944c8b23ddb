package results

import (
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
)

// Run is a loaded record with the name it is shown under.
type Run struct {
	Label  string
	Record *Record
}

// LoadRuns loads each path; runs are labelled by file name, or by the whole
// path where two files share a name.
func LoadRuns(paths []string) ([]Run, error) {
	seen := map[string]int{}
	for _, p := range paths {
		seen[filepath.Base(p)]++
	}
	runs := make([]Run, len(paths))
	for i, p := range paths {
		rec, err := Load(p)
		if err != nil {
			return nil, err
		}
		label := filepath.Base(p)
		if seen[label] > 1 {
			label = p
		}
		runs[i] = Run{Label: label, Record: rec}
	}
	return runs, nil
}

// Compare prints one row per series and size: for each run the median time
// over that size's samples (repeated rows from -N cycles, A/B rounds), their
// spread ((max - min) / median), the median bus bandwidth (busbw, as
// nccl-tests computes it: algorithm bandwidth times the collective's bus
// factor), and each later run's speedup over the first (ratio of median
// times; above 1 is faster). The half is out-of-place unless inPlace.
func Compare(w io.Writer, runs []Run, inPlace bool) error {
	if len(runs) == 0 {
		return fmt.Errorf("compare: no runs")
	}
	keys, points := collect(runs, inPlace)
	// A line is a series of any run: its key without the run.
	type line struct {
		key   seriesKey
		sizes map[int64]bool
		byRun []map[int64]*Point
	}
	var lines []*line
	index := map[seriesKey]*line{}
	for _, k := range keys {
		lk := k
		lk.run, lk.runLabel = 0, ""
		l := index[lk]
		if l == nil {
			l = &line{key: lk, sizes: map[int64]bool{}, byRun: make([]map[int64]*Point, len(runs))}
			index[lk] = l
			lines = append(lines, l)
		}
		l.byRun[k.run] = points[k]
		for size := range points[k] {
			l.sizes[size] = true
		}
	}
	lineKeys := make([]seriesKey, len(lines))
	for i, l := range lines {
		lineKeys[i] = l.key
	}
	names := seriesLabels(lineKeys, 1)
	samples := 0
	for _, k := range keys {
		for _, p := range points[k] {
			samples = max(samples, len(p.Time))
		}
	}
	if samples > 1 {
		fmt.Fprintf(w, "# %s; per size: median time over up to %d samples (-N cycles, rounds), spread = (max-min)/median\n",
			HalfName(inPlace), samples)
	} else {
		fmt.Fprintf(w, "# %s; one sample per size\n", HalfName(inPlace))
	}
	fmt.Fprintf(w, "# busbw: bus bandwidth in GB/s (nccl-tests' busbw); speedup: first run's median time / this run's\n")
	header := []any{"size"}
	if len(lines) > 1 {
		header = []any{"series", "size"}
	}
	for i, run := range runs {
		header = append(header, run.Label+" us", "spread", "busbw")
		if i > 0 {
			header = append(header, "speedup")
		}
	}
	t := newTable(w)
	t.Header(header...)
	for li, l := range lines {
		sizes := slices.Sorted(maps.Keys(l.sizes))
		for _, size := range sizes {
			var cells []any
			if len(lines) > 1 {
				cells = append(cells, names[li])
			}
			cells = append(cells, FormatSize(size))
			var first float64
			for i := range runs {
				var p *Point
				if l.byRun[i] != nil {
					p = l.byRun[i][size]
				}
				if p == nil || len(p.Time) == 0 {
					cells = append(cells, "-", "-", "-")
				} else {
					med := Median(p.Time)
					cells = append(cells, fmt.Sprintf("%.2f", med), spread(p.Time), fmt.Sprintf("%.2f", Median(p.BusBW)))
				}
				if i == 0 {
					if p != nil {
						first = Median(p.Time)
					}
					continue
				}
				if p == nil || first <= 0 || Median(p.Time) <= 0 {
					cells = append(cells, "-")
				} else {
					cells = append(cells, fmt.Sprintf("%.3fx", first/Median(p.Time)))
				}
			}
			if err := t.Append(cells...); err != nil {
				return err
			}
		}
	}
	return t.Render()
}

// spread is (max - min) / median of xs in percent, "-" for a single sample.
func spread(xs []float64) string {
	if len(xs) < 2 || Median(xs) <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", (Max(xs)-Min(xs))/Median(xs)*100)
}
