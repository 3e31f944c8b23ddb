package results

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
)

// csvHeader is rccl-tests' CSV header for a single-process build, which this
// package writes and reads back.
var csvHeader = []string{"numCycle", "collective", "gpus", "size", "type", "redop", "inplace", "time", "algbw", "busbw", "#wrong"}

// csvAliases maps a normalized header name to the column it means.
var csvAliases = map[string]string{
	"numcycle": "cycle", "cycle": "cycle",
	"collective": "name", "name": "name",
	"gpus": "gpus", "size": "size", "count": "count", "type": "type", "redop": "redop", "root": "root",
	"inplace": "inplace", "in_place": "inplace",
	"time": "time", "algbw": "algbw", "busbw": "busbw",
	"wrong": "wrong", "#wrong": "wrong", "nwrong": "wrong",
}

// csvLeft are the columns counted from the left of a line; all others are
// counted from the right, because rccl-tests' MPI builds write one more value
// (nodes) than their header names between the collective and the size.
var csvLeft = map[string]bool{"cycle": true, "name": true}

func parseCSV(data []byte) (*Record, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	r.Comment = '#'
	header, err := r.Read()
	if err != nil {
		return nil, csvError(err)
	}
	cols := map[string]int{}
	for i, h := range header {
		if c, ok := csvAliases[strings.ToLower(strings.TrimSpace(h))]; ok {
			cols[c] = i
		}
	}
	if _, ok := cols["size"]; !ok {
		return nil, fmt.Errorf("line 1: CSV header has no size column")
	}
	if _, ok := cols["time"]; !ok {
		return nil, fmt.Errorf("line 1: CSV header has no time column")
	}
	rec := &Record{Version: SchemaVersion}
	col := newCollector()
	for {
		fields, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, csvError(err)
		}
		line, _ := r.FieldPos(0)
		if len(fields) < len(header) {
			return nil, fmt.Errorf("line %d: %d fields, the header has %d", line, len(fields), len(header))
		}
		cell := func(name string) (string, bool) {
			i, ok := cols[name]
			if !ok {
				return "", false
			}
			if !csvLeft[name] {
				i += len(fields) - len(header)
			}
			return strings.TrimSpace(fields[i]), true
		}
		if err := addCSVLine(rec, col, cell); err != nil {
			return nil, fmt.Errorf("line %d: %v", line, err)
		}
	}
	if err := col.finish(rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// addCSVLine adds one CSV line, read through cell, to col.
func addCSVLine(rec *Record, col *collector, cell func(string) (string, bool)) error {
	var id rowID
	var s halfSample
	var err error
	sizeCell, _ := cell("size")
	if id.size, err = parseCount("size", sizeCell); err != nil {
		return err
	}
	id.typ, _ = cell("type")
	id.redop, _ = cell("redop")
	id.root, _ = cell("root")
	var count int64
	if v, ok := cell("count"); ok {
		if count, err = parseCount("count", v); err != nil {
			return err
		}
	}
	timeCell, _ := cell("time")
	if s.time, err = parseNumber(timeCell); err != nil {
		return err
	}
	for name, dst := range map[string]*float64{"algbw": &s.algBW, "busbw": &s.busBW} {
		if v, ok := cell(name); ok {
			if *dst, err = parseNumber(v); err != nil {
				return err
			}
		}
	}
	if v, ok := cell("wrong"); ok {
		if s.nwrong, err = parseWrong(v); err != nil {
			return err
		}
	}
	half := 0
	if v, ok := cell("inplace"); ok {
		in, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("bad inplace %q", v)
		}
		if in {
			half = 1
		}
	}
	if name, ok := cell("name"); ok && len(rec.Args) == 0 && name != "" {
		rec.Args = []string{name}
	}
	if v, ok := cell("gpus"); ok && rec.Config.NGpus == 0 {
		rec.Config.NGpus, _ = strconv.Atoi(v)
	}
	col.add(id, count, half, s)
	return nil
}

// csvError gives a CSV reader error the file-relative line it names.
func csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("line %d: %v", pe.Line, pe.Err)
	}
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("line 1: empty CSV")
	}
	return err
}

// WriteCSV stores rec as rccl-tests' CSV reporter does (one line per half,
// repeated rounds as cycles), atomically and without replacing an existing
// file, like Write. It returns the name used.
func WriteCSV(path string, rec *Record) (string, error) {
	data, err := MarshalCSV(rec)
	if err != nil {
		return "", err
	}
	return writeNew(path, data)
}

// MarshalCSV is rec in rccl-tests' CSV, as WriteCSV stores it.
func MarshalCSV(rec *Record) ([]byte, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	if err := w.Write(csvHeader); err != nil {
		return nil, err
	}
	name := collectiveName(rec)
	gpus := strconv.Itoa(rec.Config.NGpus)
	for i := range rec.Results {
		r := &rec.Results[i]
		for inPlace, h := range r.halves() {
			t, ok := h.Micros()
			if !ok {
				continue
			}
			for cycle, round := range roundsOrTime(h.Rounds, t) {
				// Bandwidths scale with 1/time: bring the reported ones to this round's time.
				scale := 1.0
				if round > 0 {
					scale = t / round
				}
				wrong := "N/A"
				if h.NWrong != nil {
					wrong = formatFloat(*h.NWrong)
				}
				if err := w.Write([]string{strconv.Itoa(cycle), name, gpus, strconv.FormatInt(r.Size, 10), r.Type, r.Redop,
					strconv.Itoa(inPlace), formatFloat(round), formatFloat(h.AlgBW * scale), formatFloat(h.BusBW * scale), wrong}); err != nil {
					return nil, err
				}
			}
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func roundsOrTime(rounds []float64, t float64) []float64 {
	if len(rounds) > 0 {
		return rounds
	}
	return []float64{t}
}

// collectiveName is the binary name in args[0] ("all_reduce_perf").
func collectiveName(rec *Record) string {
	if len(rec.Args) == 0 {
		return ""
	}
	return filepath.Base(rec.Args[0])
}

func formatFloat(v float64) string {
	return strconv.FormatFloat(v, 'g', -1, 64)
}
