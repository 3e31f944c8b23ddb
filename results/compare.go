package results

import (
	"cmp"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
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

// ShownHalf is the half compare and plot show (true: in-place): the in-place one when asked for, or where the
// runs timed only that one (-O 0); else out-of-place.
func ShownHalf(runs []Run, inPlace bool) bool {
	if inPlace {
		return true
	}
	if keys, _ := collect(runs, false); len(keys) > 0 {
		return false
	}
	keys, _ := collect(runs, true)
	return len(keys) > 0
}

// Unshown lists the runs with no timed row in the half inPlace selects (runs that timed only the other half,
// -O 0 or -O 1 beside runs of both): compare and plot leave them out, and say so.
func Unshown(runs []Run, inPlace bool) []string {
	keys, _ := collect(runs, inPlace)
	shown := map[int]bool{}
	for _, k := range keys {
		shown[k.run] = true
	}
	var out []string
	for i, r := range runs {
		if !shown[i] {
			out = append(out, r.Label)
		}
	}
	return out
}

// UnshownNote is the line that names a run left out of the half shown.
func UnshownNote(label string, inPlace bool) string {
	halves, other := "-O 0", "--in-place" // -O 0 times only the in-place half
	if inPlace {
		halves, other = "-O 1", "no --in-place"
	}
	return fmt.Sprintf("NOTE %s has no timed %s rows and is left out (a run of %s times only the other half: %s "+
		"shows it)", label, HalfName(inPlace), halves, other)
}

// CompareOptions choose the half Compare shows and its format.
type CompareOptions struct {
	InPlace  bool // the in-place half instead of out-of-place
	Markdown bool // a Markdown table, its notes as plain lines before it, instead of "#" lines and an ASCII table
}

// Compare prints one row per type, reduction and size, and for each column
// (each run, and within a run each engine and A/B arm) the
// median time over that size's samples (repeated rows from -N cycles, A/B
// rounds), their spread ((max - min) / median), the bus bandwidth at that
// median time (busbw, as nccl-tests computes it: algorithm bandwidth times
// the collective's bus factor), and each later column's speedup over the first
// (SpeedupEstimator, as the gate and the A/B table compute it; above 1 is
// faster). So one record of
// --engine vendor,gpu, or of --ab, compares its own engines or arms. The
// half is out-of-place unless opt.InPlace, or where the runs timed only the
// in-place one (-O 0).
func Compare(w io.Writer, runs []Run, opt CompareOptions) error {
	if len(runs) == 0 {
		return fmt.Errorf("compare: no runs")
	}
	inPlace := ShownHalf(runs, opt.InPlace)
	keys, points := collect(runs, inPlace)
	type rowID struct {
		dtype, redop, root string
		size               int64
	}
	var cols []seriesKey
	colIndex := map[seriesKey]int{}
	cells := map[rowID]map[int]*Point{}
	var rows []rowID
	samples := 0
	busFactor := map[*Point]float64{} // where a series' bandwidths follow nccl-tests' rule (RateFactor)
	for _, k := range keys {
		var pts []Point
		for _, p := range points[k] {
			pts = append(pts, *p)
		}
		if f, ok := RateFactor(pts, MetricBusBW); ok {
			for _, p := range points[k] {
				busFactor[p] = f
			}
		}
		col := k
		col.dtype, col.redop, col.root = "", "", ""
		c, ok := colIndex[col]
		if !ok {
			c = len(cols)
			colIndex[col] = c
			cols = append(cols, col)
		}
		for size, p := range points[k] {
			id := rowID{k.dtype, k.redop, k.root, size}
			if cells[id] == nil {
				cells[id] = map[int]*Point{}
				rows = append(rows, id)
			}
			cells[id][c] = p
			samples = max(samples, len(p.Time))
		}
	}
	slices.SortStableFunc(rows, func(a, b rowID) int {
		ra, _ := strconv.Atoi(a.root)
		rb, _ := strconv.Atoi(b.root)
		return cmp.Or(cmp.Compare(a.dtype, b.dtype), cmp.Compare(a.redop, b.redop), cmp.Compare(ra, rb), cmp.Compare(a.size, b.size))
	})
	detailed := false
	for _, r := range rows {
		detailed = detailed || r.dtype != rows[0].dtype || r.redop != rows[0].redop
	}
	if len(cols) == 0 {
		_, err := fmt.Fprintf(w, "# %s: no timed rows\n", HalfName(inPlace))
		return err
	}
	names := seriesLabels(cols, len(runs))
	mark := "# "
	if opt.Markdown {
		mark = ""
	}
	if samples > 1 {
		fmt.Fprintf(w, "%s%s; per size: median time over up to %d samples (-N cycles, rounds), spread = (max-min)/median\n",
			mark, HalfName(inPlace), samples)
	} else {
		fmt.Fprintf(w, "%s%s; one sample per size\n", mark, HalfName(inPlace))
	}
	for _, label := range Unshown(runs, inPlace) {
		fmt.Fprintf(w, "%s%s\n", mark, UnshownNote(label, inPlace))
	}
	if len(cols) > 1 {
		fmt.Fprintf(w, "%sbusbw: bus bandwidth in GB/s at the median time (nccl-tests' busbw); speedup of this column over %s: %s\n",
			mark, names[0], SpeedupEstimator)
	} else {
		fmt.Fprintf(w, "%sbusbw: bus bandwidth in GB/s at the median time (nccl-tests' busbw)\n", mark)
	}
	if opt.Markdown {
		fmt.Fprintln(w)
	}
	header := []any{"size"}
	if detailed {
		header = []any{"type", "redop", "size"}
	}
	for i, name := range names {
		header = append(header, name+" us", "spread", "busbw")
		if i > 0 {
			header = append(header, "speedup")
		}
	}
	t := newTableAs(w, opt.Markdown)
	t.Header(header...)
	for _, r := range rows {
		var line []any
		if detailed {
			line = append(line, r.dtype, r.redop)
		}
		if r.root != "" {
			line = append(line, FormatSize(r.size)+" root "+r.root)
		} else {
			line = append(line, FormatSize(r.size))
		}
		var first []float64
		if p := cells[r][0]; p != nil {
			first = p.Time
		}
		for c := range cols {
			p := cells[r][c]
			if p == nil {
				line = append(line, "-", "-", "-")
			} else {
				m := Median(p.Time)
				bw := busBWAt(p, m)
				if f, ok := busFactor[p]; ok {
					bw = float64(p.Size) / m / 1e3 * f
				}
				line = append(line, fmt.Sprintf("%.2f", m), spread(p.Time), fmt.Sprintf("%.2f", bw))
			}
			if c == 0 {
				continue
			}
			if sp, ok := speedupOf(first, p); ok {
				line = append(line, fmt.Sprintf("%.3fx", sp))
			} else {
				line = append(line, "-")
			}
		}
		if err := t.Append(line...); err != nil {
			return err
		}
	}
	return t.Render()
}

// speedupOf is p's speedup over the times first (false where there is none to tell).
func speedupOf(first []float64, p *Point) (float64, bool) {
	if p == nil {
		return 0, false
	}
	return Speedup(first, p.Time)
}

// busBWAt is the bus bandwidth of p at time t (us). A sample's busbw times
// its time is the same for every sample of a size (its bytes times the bus
// factor, up to the printed digits), so their mean over t is the busbw of a
// run of time t. (With an even number of samples the median of the busbw
// values would be the busbw of another time than the median time.)
func busBWAt(p *Point, t float64) float64 {
	var bwTime float64
	for i, bw := range p.BusBW {
		bwTime += bw * p.Time[i]
	}
	return bwTime / float64(len(p.BusBW)) / t
}

// spread is (max - min) / median of xs in percent, "-" for a single sample.
func spread(xs []float64) string {
	if len(xs) < 2 || Median(xs) <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", (Max(xs)-Min(xs))/Median(xs)*100)
}
