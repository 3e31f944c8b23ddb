package results

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// textHeader is what the '#' lines of text output say about the table.
type textHeader struct {
	perIter bool  // -I: each half has 4 more columns (i_min i_max i_p99 i_cv%)
	halves  []int // the halves the table's top line names (rccl-tests' -O prints one); nil: both
}

var (
	reLibrary = regexp.MustCompile(`nccl-library=(\d+)`)
	reStart   = regexp.MustCompile(`^# Collective test starting: (\S+)`)
	reDevice  = regexp.MustCompile(`^#\s+Rank\s+(\d+)\s+Group\s+(\d+)\s+Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*)$`)
	reOOB     = regexp.MustCompile(`^# Out of bounds values\s*:\s*(\d+)\s*(\S*)`)
	reAvgBW   = regexp.MustCompile(`^# Avg bus bandwidth\s*:\s*(\S+)\s*(\S*)`)
	reStep    = regexp.MustCompile(`step: (\d+)\((factor|bytes)\)`)
	reHalves  = regexp.MustCompile(`^#\s+(out-of-place|in-place)( \(\+ per-iteration\))?(\s+in-place( \(\+ per-iteration\))?)?\s*$`)
	reParams  = map[string]*regexp.Regexp{
		"nthreads":   regexp.MustCompile(`nThread (\d+)`),
		"ngpus":      regexp.MustCompile(`nGpus (\d+)`),
		"minbytes":   regexp.MustCompile(`minBytes (\d+)`),
		"maxbytes":   regexp.MustCompile(`maxBytes (\d+)`),
		"warmup":     regexp.MustCompile(`warmup iters: (\d+)`),
		"iters":      regexp.MustCompile(`\d iters: (\d+)`),
		"agg":        regexp.MustCompile(`agg iters: (\d+)`),
		"validation": regexp.MustCompile(`validation: (\d+)`),
		"graph":      regexp.MustCompile(`graph: (\d+)`),
	}
)

// parseText reads the output nccl-tests and rccl-tests print. Table lines
// are "size count type redop root" then per half "time algbw busbw #wrong"
// (plus four per-iteration columns with -I); rccl-tests' -O prints one half,
// which the table's top line names, and a line with only one half's columns
// under a two-half header is in-place only (the out-of-place columns left
// blank). Lines that do not start with a number (library logs mixed into the
// output) are skipped.
func parseText(data []byte) (*Record, error) {
	rec := &Record{Version: SchemaVersion}
	col := newCollector()
	var hdr textHeader
	var oob, avg []string
	for i, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "#") {
			if m := reOOB.FindStringSubmatch(t); m != nil {
				oob = m
			} else if m := reAvgBW.FindStringSubmatch(t); m != nil {
				avg = m
			} else {
				parseTextComment(rec, &hdr, col, t)
			}
			continue
		}
		f := RowFields(strings.TrimRight(line, "\r"))
		if len(f) == 0 {
			continue
		}
		if _, err := strconv.ParseInt(f[0], 10, 64); err != nil {
			continue
		}
		if err := addTextLine(col, hdr, f); err != nil {
			return nil, fmt.Errorf("line %d: %v", i+1, err)
		}
	}
	if err := col.finish(rec); err != nil {
		return nil, err
	}
	applyFooter(rec, oob, avg)
	return rec, nil
}

// RowFields splits a table line into its columns. The redop column may be empty (nccl-tests' hypercube prints
// "%6s" of ""), which splitting at white space would lose: where the line's redop columns (after
// "%12li  %12li  %8s  ") are blank, an empty field stands in for it.
func RowFields(line string) []string {
	const redopAt, redopEnd = 38, 44
	f := strings.Fields(line)
	if len(f) > 3 && len(line) > redopEnd && strings.TrimSpace(line[redopAt:redopEnd]) == "" {
		f = slices.Insert(f, 3, "")
	}
	return f
}

// parseTextComment reads the header lines nccl-tests prints before the table.
func parseTextComment(rec *Record, hdr *textHeader, col *collector, t string) {
	if m := reLibrary.FindStringSubmatch(t); m != nil {
		rec.NcclVersion, _ = strconv.Atoi(m[1])
	}
	if m := reStart.FindStringSubmatch(t); m != nil {
		rec.Args = []string{m[1]}
	}
	if m := reDevice.FindStringSubmatch(t); m != nil {
		d := Device{Hostname: m[4], DeviceHex: m[6], DeviceInfo: strings.TrimSpace(m[7])}
		d.Rank, _ = strconv.Atoi(m[1])
		d.Group, _ = strconv.Atoi(m[2])
		d.Pid, _ = strconv.Atoi(m[3])
		d.Device, _ = strconv.Atoi(m[5])
		rec.Config.Devices = append(rec.Config.Devices, d)
	}
	if strings.Contains(t, "nThread") {
		parseTextParams(&rec.Config, t)
	}
	if m := reHalves.FindStringSubmatch(t); m != nil {
		switch {
		case m[3] != "":
			hdr.halves = nil
		case m[1] == "out-of-place":
			hdr.halves = []int{0}
		default:
			hdr.halves = []int{1}
		}
	}
	switch {
	case strings.Contains(t, "#wrong"):
		hdr.perIter = strings.Contains(t, "i_min")
		col.cpuTime = strings.Contains(t, "cputime")
	case strings.Contains(t, "Blocking Enabled"):
		rec.Config.Blocking = Bool(true)
	case strings.Contains(t, "Per-Iteration Report"):
		rec.Config.PerIterTime = Bool(true)
	case strings.Contains(t, "Parallel Init Enabled"):
		rec.Config.ParallelInit = Bool(true)
	}
}

// parseTextParams reads the "# nThread 1 nGpus 2 minBytes ..." line.
func parseTextParams(c *Config, t string) {
	num := func(key string) int64 {
		m := reParams[key].FindStringSubmatch(t)
		if m == nil {
			return 0
		}
		v, _ := strconv.ParseInt(m[1], 10, 64)
		return v
	}
	c.NThreads, c.NGpus = int(num("nthreads")), int(num("ngpus"))
	c.MinimumBytes, c.MaximumBytes = num("minbytes"), num("maxbytes")
	c.WarmupIters, c.Iterations, c.AggIters = int(num("warmup")), int(num("iters")), int(num("agg"))
	c.Validation, c.Graph = int(num("validation")), int(num("graph"))
	if m := reStep.FindStringSubmatch(t); m != nil {
		v, _ := strconv.ParseInt(m[1], 10, 64)
		if m[2] == "factor" {
			c.StepFactor = &v
		} else {
			c.StepBytes = &v
		}
	}
	for _, p := range []*string{&c.Blocking, &c.PerIterTime, &c.ParallelInit} {
		if *p == "" {
			*p = Bool(false)
		}
	}
}

// addTextLine adds one table line, split into fields, to col.
func addTextLine(col *collector, hdr textHeader, f []string) error {
	per := 4
	if hdr.perIter {
		per = 8
	}
	if len(f) < 5+per {
		return fmt.Errorf("%d fields, a table line has at least %d", len(f), 5+per)
	}
	id := rowID{typ: f[2], redop: f[3], root: fmt.Sprintf("%6s", f[4])}
	var err error
	if id.size, err = parseCount("size", f[0]); err != nil {
		return err
	}
	count, err := parseCount("count", f[1])
	if err != nil {
		return err
	}
	halves := hdr.halves
	switch {
	case halves != nil:
	case len(f) < 5+2*per:
		halves = []int{1} // the out-of-place columns are left blank
	default:
		halves = []int{0, 1}
	}
	for i, half := range halves {
		s, err := parseTextHalf(f[5+i*per : 5+(i+1)*per])
		if err != nil {
			return err
		}
		col.add(id, count, half, s)
	}
	return nil
}

// parseTextHalf reads "time algbw busbw #wrong" [i_min i_max i_p99 i_cv%].
func parseTextHalf(f []string) (halfSample, error) {
	var s halfSample
	var err error
	for i, dst := range []*float64{&s.time, &s.algBW, &s.busBW} {
		if *dst, err = parseNumber(f[i]); err != nil {
			return s, err
		}
	}
	if s.nwrong, err = parseWrong(f[3]); err != nil {
		return s, err
	}
	if len(f) == 8 {
		var it [4]float64
		for i := range it {
			if it[i], err = parseNumber(f[4+i]); err != nil {
				return s, err
			}
		}
		s.perIter = &PerIter{MinUs: it[0], MaxUs: it[1], P99Us: it[2], CVPct: it[3]}
	}
	return s, nil
}

// applyFooter takes the summary lines as printed, when present.
func applyFooter(rec *Record, oob, avg []string) {
	if oob != nil {
		rec.OutOfBounds.Count, _ = strconv.Atoi(oob[1])
		rec.OutOfBounds.Okay = Bool(oob[2] != "FAILED")
	}
	if avg != nil {
		if v, err := parseNumber(avg[1]); err == nil {
			rec.AverageBusBandwidth.Bandwidth = Float(v)
		}
		switch avg[2] {
		case "OK":
			rec.AverageBusBandwidth.Okay = Bool(true)
		case "FAILED":
			rec.AverageBusBandwidth.Okay = Bool(false)
		}
	}
}
