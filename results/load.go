package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"syscall"
)

// Load reads a run from path, detecting its format: JSON written by this
// suite or by nccl-tests (-J, schema 3), rccl-tests' reporter output
// (-Z csv|json -X file), or the text that nccl-tests and rccl-tests print.
// Malformed input gives a one-line error naming the file and the line.
func Load(path string) (*Record, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// maxFileBytes bounds a result file: a run of thousands of rows with every round and per-iteration key is a
// few MiB.
const maxFileBytes = 256 << 20

// sniffBytes is how much of a file is looked at for binary data before the rest is read.
const sniffBytes = 64 << 10

// ReadFile reads a result file whole, within bounds: a file with a NUL byte in its first 64 KiB (/dev/zero,
// binary data) is refused before more is read, and so is one above 256 MiB, each with an error naming it; a
// named pipe nobody writes to reads as empty.
func ReadFile(path string) ([]byte, error) {
	// Non-blocking: a named pipe without a writer reads as empty instead of waiting for one for ever.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tooLarge := fmt.Errorf("%s: larger than %d MiB, not a result file", path, maxFileBytes>>20)
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > maxFileBytes {
		return nil, tooLarge
	}
	var buf bytes.Buffer
	if _, err := io.CopyN(&buf, f, sniffBytes); err != nil && err != io.EOF {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if bytes.IndexByte(buf.Bytes(), 0) >= 0 {
		return nil, fmt.Errorf("%s: binary data (a NUL byte in its first %d KiB), not a result file", path, sniffBytes>>10)
	}
	n, err := io.CopyN(&buf, f, maxFileBytes+1-int64(buf.Len()))
	switch {
	case err != nil && err != io.EOF:
		return nil, fmt.Errorf("%s: %w", path, err)
	case err == nil && n > 0:
		return nil, tooLarge
	}
	return buf.Bytes(), nil
}

// Parse is Load on data already read; name is used in error messages. A UTF-8 byte order mark (an editor's
// or a Windows tool's) is skipped.
func Parse(name string, data []byte) (*Record, error) {
	var (
		rec *Record
		err error
	)
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	switch detectFormat(data) {
	case formatJSON:
		rec, err = parseJSON(data)
	case formatCSV:
		rec, err = parseCSV(data)
	default:
		rec, err = parseText(data)
	}
	if err == nil {
		err = rec.checkRows()
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return rec, nil
}

// checkRows refuses rows no run writes, naming the field: a negative size or count, a time (or a round's) that
// is not above 0 (a measured call takes time; compared, such a row would read as a speedup of 100% or more),
// a negative or NaN wrong count or bandwidth, a negative out-of-bounds count.
func (rec *Record) checkRows() error {
	if rec.OutOfBounds.Count < 0 {
		return fmt.Errorf("out_of_bounds count %d: want 0 or more", rec.OutOfBounds.Count)
	}
	for i := range rec.Results {
		r := &rec.Results[i]
		if r.Size < 0 || r.Count < 0 {
			return fmt.Errorf("result %d: size %d, count %d: want 0 or more", i+1, r.Size, r.Count)
		}
		for h, half := range r.halves() {
			bad := func(field string, v float64, want string) error {
				return fmt.Errorf("result %d (size %d, %s): %s %g: want %s", i+1, r.Size, halfNames[h], field, v, want)
			}
			if t, ok := half.Micros(); ok && !positive(t) {
				return bad("time", t, "a time above 0")
			}
			for j, t := range half.Rounds {
				if !positive(t) {
					return bad(fmt.Sprintf("rounds[%d]", j), t, "a time above 0")
				}
			}
			for _, f := range []struct {
				name string
				v    *float64
			}{{"nwrong", half.NWrong}, {"alg_bw", &half.AlgBW}, {"bus_bw", &half.BusBW}} {
				if f.v != nil && !(*f.v >= 0) {
					return bad(f.name, *f.v, "0 or more")
				}
			}
		}
	}
	if rec.AB != nil {
		for i, row := range rec.AB.Rows {
			for arm, times := range [][]float64{row.TimesA, row.TimesB} {
				for j, t := range times {
					if !(t >= 0) || math.IsInf(t, 0) {
						return fmt.Errorf("ab row %d (size %d): times_%c[%d] %g: want a time of 0 or more", i+1, row.Size,
							'a'+arm, j, t)
					}
				}
			}
		}
	}
	return nil
}

// positive is a finite number above 0 (not NaN).
func positive(v float64) bool { return v > 0 && !math.IsInf(v, 0) }

type format int

const (
	formatText format = iota
	formatJSON
	formatCSV
)

// detectFormat looks at the first non-blank line: '{' opens JSON, a line of
// comma-separated names that is not a '#' comment is a CSV header, anything
// else is taken as text output.
func detectFormat(data []byte) format {
	for _, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		switch {
		case len(line) == 0:
			continue
		case line[0] == '{' || line[0] == '[':
			return formatJSON
		case line[0] != '#' && bytes.Contains(line, []byte(",")):
			return formatCSV
		}
		return formatText
	}
	return formatText
}

func parseJSON(data []byte) (*Record, error) {
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("[")) {
		return parseRCCLJSON(data)
	}
	var rec Record
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, jsonError(data, err)
	}
	if rec.Version == 0 && rec.Results == nil {
		return nil, fmt.Errorf("line 1: JSON without nccl-tests keys (version, results)")
	}
	return &rec, nil
}

// jsonError places a JSON syntax or type error on its line.
func jsonError(data []byte, err error) error {
	var off int64 = -1
	switch e := err.(type) {
	case *json.SyntaxError:
		off = e.Offset
	case *json.UnmarshalTypeError:
		off = e.Offset
	}
	if off < 0 || off > int64(len(data)) {
		return fmt.Errorf("invalid JSON: %v", err)
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	return fmt.Errorf("line %d (offset %d): invalid JSON: %v", line, off, err)
}
