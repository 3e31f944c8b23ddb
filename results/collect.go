package results

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// halfSample is one measurement of one half read from a CSV or text line.
type halfSample struct {
	time, algBW, busBW float64
	nwrong             *float64
	perIter            *PerIter
}

// rowID is what makes table lines the same row: repeated lines are cycles
// (-N) of one row.
type rowID struct {
	size             int64
	typ, redop, root string
}

type collectedRow struct {
	res     Result
	samples [2][]halfSample
}

// collector turns table lines of CSV and text output into Results, one per
// row, with repeated cycles kept as rounds.
type collector struct {
	cpuTime bool
	order   []rowID
	rows    map[rowID]*collectedRow
}

func newCollector() *collector {
	return &collector{rows: map[rowID]*collectedRow{}}
}

func (c *collector) add(id rowID, count int64, half int, s halfSample) {
	row := c.rows[id]
	if row == nil {
		row = &collectedRow{res: Result{Size: id.size, Count: count, Type: id.typ, Redop: id.redop, Root: id.root}}
		c.rows[id] = row
		c.order = append(c.order, id)
	}
	row.samples[half] = append(row.samples[half], s)
}

// finish stores the rows in rec with the summary lines nccl-tests derives
// from them (out-of-bounds count, average bus bandwidth over every line).
func (c *collector) finish(rec *Record) error {
	if len(c.order) == 0 {
		return fmt.Errorf("no result rows")
	}
	var bwSum float64
	var bwN int
	for _, id := range c.order {
		row := c.rows[id]
		for i, h := range row.res.halves() {
			if len(row.samples[i]) == 0 {
				continue
			}
			*h = c.merge(row.samples[i])
			if i == 0 {
				row.res.OutOfPlacePerIter = row.samples[i][0].perIter
			} else {
				row.res.InPlacePerIter = row.samples[i][0].perIter
			}
			if h.NWrong != nil && *h.NWrong > 0 {
				rec.OutOfBounds.Count++
			}
			for _, s := range row.samples[i] {
				bwSum += s.busBW
			}
			bwN += len(row.samples[i])
		}
		rec.Results = append(rec.Results, row.res)
	}
	rec.OutOfBounds.Okay = Bool(rec.OutOfBounds.Count == 0)
	rec.AverageBusBandwidth = AvgBusBW{Bandwidth: Float(bwSum / float64(bwN)), Okay: "unchecked"}
	return nil
}

// merge makes one Half of the cycles of a row: the mean time, the bandwidths
// at that time, summed wrong counts, and every cycle's time as a round. A
// cycle's bandwidth is its bytes over its time, so the bandwidth at the mean
// time is the time-weighted mean of the cycles' bandwidths (their plain mean
// is not), and scaling it by the mean time over a round's time (Aggregate)
// gives back that cycle's bandwidth (up to its printed digits).
func (c *collector) merge(ss []halfSample) Half {
	var h Half
	var t float64
	var wrong *float64
	for _, s := range ss {
		t += s.time
		h.AlgBW += s.algBW * s.time
		h.BusBW += s.busBW * s.time
		if s.nwrong != nil {
			w := *s.nwrong
			if wrong != nil {
				w += *wrong
			}
			wrong = &w
		}
	}
	if t > 0 {
		h.AlgBW /= t
		h.BusBW /= t
	}
	t /= float64(len(ss))
	h.NWrong = wrong
	if c.cpuTime {
		h.CPUTime = &t
	} else {
		h.Time = &t
	}
	if len(ss) > 1 {
		for _, s := range ss {
			h.Rounds = append(h.Rounds, s.time)
		}
	}
	return h
}

// parseNumber reads a finite float; JSON cannot carry NaN or Inf.
func parseNumber(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("bad number %q", s)
	}
	return v, nil
}

// parseWrong reads a #wrong cell: "N/A" (not checked) gives nil.
func parseWrong(s string) (*float64, error) {
	if strings.EqualFold(s, "N/A") {
		return nil, nil
	}
	v, err := parseNumber(s)
	if err != nil || v < 0 {
		return nil, fmt.Errorf("bad #wrong %q", s)
	}
	return &v, nil
}

// parseCount reads a non-negative integer cell.
func parseCount(what, s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("bad %s %q", what, s)
	}
	return v, nil
}
