package report

import (
	"fmt"
	"io"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/results"
)

// Progress is one line on stderr, rewritten before each row of a sweep: collective, type and operation, size,
// rows done and left. Rank 0 writes it when stderr is a terminal or with --progress; stdout is untouched.
type Progress struct {
	w     io.Writer
	coll  string
	total int // rows of the sweep; 0 when -N 0 repeats it until interrupted
	done  int
}

// NewProgress is the progress line of a sweep of coll on w, of total rows (0: until interrupted).
func NewProgress(w io.Writer, coll string, total int) *Progress {
	return &Progress{w: w, coll: coll, total: total}
}

// Row shows the row about to run.
func (p *Progress) Row(dt collectives.DType, redop string, size int64) {
	if p == nil {
		return
	}
	p.done++
	left := ""
	if p.total > 0 {
		left = fmt.Sprintf(" of %d, %d left", p.total, max(0, p.total-p.done))
	}
	// \r returns to the line's start and ESC[K clears what a longer previous line left.
	fmt.Fprintf(p.w, "\r%s %s %s %s: row %d%s\x1b[K", p.coll, dt, redop, results.FormatSize(size), p.done, left)
}

// Clear erases the line: before a row goes to stdout (on a terminal both share the line), and at the end.
func (p *Progress) Clear() {
	if p != nil {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}
