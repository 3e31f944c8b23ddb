package harness

import (
	"fmt"
	"io"
	"os"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/results"
)

// progress is one line on stderr, rewritten before each row of a sweep: collective, type and operation, size,
// rows done and left. Rank 0 writes it when stderr is a terminal or with --progress; stdout is untouched.
type progress struct {
	w     io.Writer
	coll  string
	total int // rows of the sweep; 0 when -N 0 repeats it until interrupted
	done  int
}

// isTerminal reports whether f is a character device such as a terminal.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// newProgress returns the session's progress line, or nil when none is to be shown.
func (s *session) newProgress() *progress {
	if !(s.o.Progress || s.a.stderrTTY) || s.world.Rank() != 0 {
		return nil
	}
	return &progress{w: s.a.stderr, coll: s.a.coll.Name,
		total: len(sweepPairs(s.a.coll, s.o)) * len(s.roots()) * s.o.Cycles * len(s.sizes())}
}

// row shows the row about to run.
func (p *progress) row(dt collectives.DType, redop string, size int64) {
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

// clear erases the line: before a row goes to stdout (on a terminal both share the line), and at the end.
func (p *progress) clear() {
	if p != nil {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}
