package collectives

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// AllToAllV: every rank sends a different amount to each peer. The amounts come from a generated pattern
// (NCCL_TESTS_ALLTOALLV_SPREAD, 0..1, default 1: peers further away in rank order get more, 0: uniform; a size
// is what each rank sends in all) or from a matrix file (NCCL_TESTS_ALLTOALLV_MATRIX_FILE: square, whitespace
// separated, [i][j] = bytes rank i sends to rank j, times NCCL_TESTS_ALLTOALLV_MATRIX_SCALE; -b must equal -e
// and cover the largest total; the count column is 0). Every peer amount is rounded down to 16 bytes. The size
// column and algorithm bandwidth count the most any rank sends or receives; the in-place half is unchecked.
// NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY=1 adds per-rank bandwidth lines (Summary).
var AllToAllV = &Collective{
	Name:             "alltoallv",
	inPlaceUnchecked: true,
	algorithm:        Direct,
	busFactor:        func(n int) float64 { return float64(n-1) / float64(n) },
	prepare:          prepareAllToAllV,
}

func init() {
	// Unprepared (tests, tools), alltoallv runs the default generated pattern.
	v := &vPattern{spread: 1}
	AllToAllV.counts, AllToAllV.source, AllToAllV.checked = v.counts, v.source, v.checked
	AllToAllV.summary = v.summaryLines
}

// vPattern is alltoallv's traffic: a spread for the generated pattern, or a matrix of bytes.
type vPattern struct {
	spread, scale float64
	file          string
	matrix        [][]int64 // bytes, rounded down to 16; nil for the generated pattern
	summary       bool
}

const (
	envVSpread  = "NCCL_TESTS_ALLTOALLV_SPREAD"
	envVMatrix  = "NCCL_TESTS_ALLTOALLV_MATRIX_FILE"
	envVScale   = "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE"
	envVSummary = "NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY"
)

func prepareAllToAllV(c *Collective, getenv func(string) string, nranks int, minBytes, maxBytes int64) (*Collective, error) {
	v := &vPattern{file: getenv(envVMatrix)}
	for _, e := range []struct {
		name string
		read func(string) error
	}{
		{envVSpread, func(s string) (err error) { v.spread, err = vSpread(s); return }},
		{envVScale, func(s string) (err error) { v.scale, err = vScale(s); return }},
		{envVSummary, func(s string) (err error) { v.summary, err = vSummary(s); return }},
	} {
		if err := e.read(getenv(e.name)); err != nil {
			return nil, fmt.Errorf("%s=%q: %v", e.name, getenv(e.name), err)
		}
	}
	if v.file != "" {
		if err := v.readMatrix(nranks); err != nil {
			return nil, err
		}
		// nccl-tests checks -e against the matrix before it checks that -b equals -e.
		need := int64(0)
		for i := range nranks {
			var s, r int64
			for j := range nranks {
				s += v.matrix[i][j]
				r += v.matrix[j][i]
			}
			need = max(need, s, r)
		}
		if maxBytes < need {
			return nil, fmt.Errorf("alltoallv: -e must be at least %d bytes for the matrix in %s (got %d)", need, v.file, maxBytes)
		}
		if minBytes != maxBytes {
			return nil, fmt.Errorf("alltoallv with %s: -b and -e must be equal (got %d and %d)", envVMatrix, minBytes, maxBytes)
		}
	}
	p := *c
	p.counts, p.source, p.checked, p.base = v.counts, v.source, v.checked, c
	p.summary = v.summaryLines
	if v.matrix != nil && len(v.matrix) > nranks {
		n := len(v.matrix)
		p.note = fmt.Sprintf("alltoallv matrix %s is %dx%d: its first %d rows and columns are used, one per rank", v.file, n, n, nranks)
	}
	return &p, nil
}

// vSpread, vScale and vSummary read the pattern's variables, an empty value as the default: the spread (0..1,
// default 1), the matrix scale (above 0, default 1) and the summary (an integer, on when not 0). Any other
// value is bad input, refused before the run: read some other way (a word as a default, a spread clamped, a
// scale of -1 sending nothing) it would run something other than what was meant.
func vSpread(s string) (float64, error) {
	f, err := vNumber(s, 1)
	if err == nil && (f < 0 || f > 1) {
		err = errors.New("want a number from 0 to 1")
	}
	return f, err
}

func vScale(s string) (float64, error) {
	f, err := vNumber(s, 1)
	if err == nil && f <= 0 {
		err = errors.New("want a number above 0")
	}
	return f, err
}

func vSummary(s string) (bool, error) {
	if strings.TrimSpace(s) == "" {
		return false, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return false, errors.New("want an integer (0: off)")
	}
	return n != 0, nil
}

// vNumber reads a finite number; empty is def.
func vNumber(s string, def float64) (float64, error) {
	if strings.TrimSpace(s) == "" {
		return def, nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, errors.New("want a number")
	}
	return f, nil
}

// maxMatrixLine bounds a line of the matrix file: 1024 ranks of 20-character entries fit many times over.
const maxMatrixLine = 1 << 20

// maxMatrixRanks bounds the rows of a matrix file (more ranks than any run has).
const maxMatrixRanks = 1 << 16

// readMatrix reads the matrix file, a line at a time (a file that is no matrix, /dev/zero or a large binary
// one, fails at its first line, read no further); every error names the file and what is wrong, in one line.
// The matrix has a row and a column for each rank (a larger one is used in part: Note says so), and sends
// something among the ranks.
func (v *vPattern) readMatrix(nranks int) error {
	f, err := os.OpenFile(v.file, os.O_RDONLY|syscall.O_NONBLOCK, 0) // a named pipe nobody writes to is empty
	if err != nil {
		return fmt.Errorf("alltoallv: cannot read %s: %v", envVMatrix, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxMatrixLine)
	var rows [][]int64
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if len(rows) > 0 && len(fields) != len(rows[0]) {
			return fmt.Errorf("alltoallv matrix %s: row %d has %d columns, row 0 has %d", v.file, len(rows), len(fields), len(rows[0]))
		}
		if len(rows) >= maxMatrixRanks {
			return fmt.Errorf("alltoallv matrix %s has more than %d rows", v.file, maxMatrixRanks)
		}
		row := make([]int64, len(fields))
		for j, f := range fields {
			x, err := matrixValue(f)
			scaled := x * v.scale
			switch {
			case err != nil || math.IsNaN(x):
				return fmt.Errorf("alltoallv matrix %s: row %d column %d: %q is not a number", v.file, len(rows), j, f)
			case x < 0:
				return fmt.Errorf("alltoallv matrix %s: row %d column %d: %q is negative", v.file, len(rows), j, f)
			case scaled >= math.MaxInt64/2:
				return fmt.Errorf("alltoallv matrix %s: row %d column %d: %q times scale %g overflows", v.file, len(rows), j, f, v.scale)
			}
			row[j] = int64(scaled) &^ 15
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("a line is longer than %d bytes", maxMatrixLine)
		}
		return fmt.Errorf("alltoallv matrix %s: after row %d: %v: not a matrix", v.file, len(rows), err)
	}
	switch {
	case len(rows) == 0:
		return fmt.Errorf("alltoallv matrix %s is empty", v.file)
	case len(rows) != len(rows[0]):
		return fmt.Errorf("alltoallv matrix %s must be square, got %dx%d", v.file, len(rows), len(rows[0]))
	case len(rows) < nranks:
		return fmt.Errorf("alltoallv matrix %s is %dx%d, smaller than the %d ranks", v.file, len(rows), len(rows), nranks)
	}
	var sum int64
	for _, row := range rows[:nranks] {
		for _, x := range row[:nranks] {
			sum = min(sum+x, math.MaxInt64/2)
		}
	}
	if sum == 0 {
		return fmt.Errorf("alltoallv matrix %s sends nothing among %d ranks: every entry used is 0 once scaled by %g and rounded down to 16 bytes", v.file, nranks, v.scale)
	}
	v.matrix = rows
	return nil
}

// matrixValue reads one matrix entry as C's strtod does (nccl-tests' reader): decimal or hexadecimal, the
// latter with or without a binary exponent ("0x100" is 256).
func matrixValue(f string) (float64, error) {
	if strings.Contains(f, "_") {
		return 0, strconv.ErrSyntax
	}
	if h := strings.TrimLeft(f, "+-"); len(h) > 2 && h[0] == '0' && h[1]|0x20 == 'x' && !strings.ContainsAny(h, "pP") {
		f += "p0"
	}
	return strconv.ParseFloat(f, 64)
}

// peerBytes is what rank i sends to rank j when each rank sends total bytes (generated pattern): a blend of
// the uniform share and a share proportional to the distance (j-i) mod n, rounded down to 16 bytes.
func (v *vPattern) peerBytes(i, j, n int, total int64) int64 {
	if v.matrix != nil {
		return v.matrix[i][j]
	}
	if n == 1 {
		return total &^ 15
	}
	dist := float64((j - i + n) % n)
	uniform := float64(total) / float64(n)
	weighted := dist * float64(total) / float64(n*(n-1)/2)
	return int64((1-v.spread)*uniform+v.spread*weighted) &^ 15
}

// total is the generated pattern's bytes per rank for a requested size, and the count column.
func (v *vPattern) total(elems int64, n int, dt DType) (bytes, param int64) {
	if v.matrix != nil {
		return 0, 0
	}
	param = perRank(elems, n, dt)
	return param * int64(n) * int64(dt.Size()), param
}

func (v *vPattern) counts(elems int64, n, rank int, dt DType) Counts {
	total, param := v.total(elems, n, dt)
	es := int64(dt.Size())
	k := Counts{Param: param, SendCounts: make([]int64, n), SendDispls: make([]int64, n),
		RecvCounts: make([]int64, n), RecvDispls: make([]int64, n), SrcDispls: make([]int64, n)}
	var s, r int64
	for p := range n {
		k.SendDispls[p], k.SendCounts[p] = s, v.peerBytes(rank, p, n, total)/es
		k.RecvDispls[p], k.RecvCounts[p] = r, v.peerBytes(p, rank, n, total)/es
		s += k.SendCounts[p]
		r += k.RecvCounts[p]
		for q := range rank {
			k.SrcDispls[p] += v.peerBytes(p, q, n, total) / es
		}
	}
	for i := range n {
		var si, ri int64
		for j := range n {
			c := v.peerBytes(i, j, n, total) / es
			si += c
			ri += v.peerBytes(j, i, n, total) / es
			k.MaxPeer = max(k.MaxPeer, c)
		}
		k.Send, k.Recv = max(k.Send, si), max(k.Recv, ri)
	}
	return k
}

// source finds the peer element i of rank's receive view came from.
func (v *vPattern) source(rank, root, n int, k Counts, i int64) (int, int64, bool) {
	p := n - 1
	for p > 0 && k.RecvDispls[p] > i {
		p--
	}
	return p, k.SrcDispls[p] + i - k.RecvDispls[p], false
}

func (v *vPattern) checked(rank, root, n int, k Counts) int64 {
	return k.RecvDispls[n-1] + k.RecvCounts[n-1]
}

// summaryLines are the per-rank lines of NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY=1, in nccl-tests' format.
func (v *vPattern) summaryLines(k Counts, dt DType, n int, sec float64) []string {
	if !v.summary || sec <= 0 {
		return nil
	}
	total := k.Param * int64(n) * int64(dt.Size())
	head := fmt.Sprintf("# %s: mode=generated nranks=%d total_bytes=%d spread=%.3f time_usec=%.2f", envVSummary,
		n, total, v.spread, sec*1e6)
	if v.matrix != nil {
		head = fmt.Sprintf("# %s: mode=matrix nranks=%d matrix_dim=%d scale=%.3f time_usec=%.2f", envVSummary,
			n, len(v.matrix), v.scale, sec*1e6)
	}
	out := []string{head}
	for r := range n {
		var s, rc int64
		for p := range n {
			s += v.peerBytes(r, p, n, total)
			rc += v.peerBytes(p, r, n, total)
		}
		alg := float64(max(s, rc)) / 1e9 / sec
		out = append(out, fmt.Sprintf("#   rank=%d send_bytes=%d recv_bytes=%d alg_bw=%.2f bus_bw=%.2f", r, s, rc,
			alg, alg*float64(n-1)/float64(n)))
	}
	return out
}
