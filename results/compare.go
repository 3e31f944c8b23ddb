package results

import (
	"fmt"
	"io"
	"path/filepath"
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

// Compare prints, per row, each run's time and busbw of one half (in-place
// when inPlace) and each later run's speedup over the first (first time /
// its time; above 1 is faster).
func Compare(w io.Writer, runs []Run, inPlace bool) error {
	if len(runs) == 0 {
		return fmt.Errorf("compare: no runs")
	}
	half := 0
	if inPlace {
		half = 1
	}
	var keys []rowKey
	seen := map[rowKey]bool{}
	byRun := make([]map[rowKey]*Half, len(runs))
	for i, run := range runs {
		byRun[i] = map[rowKey]*Half{}
		for _, row := range keyRows(run.Record) {
			if !seen[row.key] {
				seen[row.key] = true
				keys = append(keys, row.key)
			}
			byRun[i][row.key] = row.res.halves()[half]
		}
	}
	sortKeys(keys)
	names := newLabeler(keys)
	header := []any{"row (" + halfNames[half] + ")"}
	for i, run := range runs {
		header = append(header, run.Label+" us", run.Label+" GB/s")
		if i > 0 {
			header = append(header, "speedup")
		}
	}
	t := newTable(w)
	t.Header(header...)
	for _, k := range keys {
		cells := []any{names.label(k)}
		first, firstOK := timeOf(byRun[0][k])
		for i := range runs {
			h := byRun[i][k]
			us, ok := timeOf(h)
			if !ok {
				cells = append(cells, "-", "-")
			} else {
				cells = append(cells, fmt.Sprintf("%.2f", us), fmt.Sprintf("%.2f", h.BusBW))
			}
			if i > 0 {
				cells = append(cells, speedup(first, us, firstOK && ok))
			}
		}
		if err := t.Append(cells...); err != nil {
			return err
		}
	}
	return t.Render()
}

// timeOf is the reported time of h, a half that may be missing (nil).
func timeOf(h *Half) (float64, bool) {
	if h == nil {
		return 0, false
	}
	return h.Micros()
}

func speedup(first, us float64, ok bool) string {
	if !ok || us <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.3fx", first/us)
}
