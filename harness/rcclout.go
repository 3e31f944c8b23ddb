package harness

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/results"
)

// rcclOut is the -X file: the rows in rccl-tests' reporter layout (-Z csv or json), written by world rank 0.
// The file is opened at the path given, created or emptied as rccl-tests' reporter opens it (an std::ofstream
// that truncates), so /dev/stdout or a named pipe work too, and filled when the run ends. It is opened with the
// other output files, before anything runs, and emptied (truncate) only once every output file is claimed: a
// run refused on the way leaves an existing file as it was.
type rcclOut struct {
	f       *os.File
	created bool // the run created the file (it did not exist): discard may remove it
	format  string
	name    string // rccl-tests' name of the collective
	layout  results.RCCLLayout
	laid    bool
	rows    []results.RCCLRow
}

// startRCCL creates the -X file on world rank 0 and announces it; without -X (or on other ranks) it returns
// nil, which every method accepts. Several processes write rccl-tests' MPI columns (nodes, ranks, ranksPerNode,
// gpusPerRank: ranks are processes, nodes distinct host names); one process its gpus column. GPUs per
// process are threads x GPUs (-t x -g).
func startRCCL(out io.Writer, o *Options, coll *collectives.Collective, world collectives.World) (*rcclOut, error) {
	r := &o.RCCL
	if world.Rank() != 0 {
		return nil, nil
	}
	if r.File == "" {
		if r.Format != "" {
			fmt.Fprintf(out, "# -Z %s ignored: no -X file to write\n", r.Format)
		}
		return nil, nil
	}
	f, created, err := openRCCLFile(r.File)
	if err != nil {
		flag := "-X/--rccl_output_file"
		if r.csvAlias {
			flag = "--csv"
		}
		return nil, fmt.Errorf("invalid value %q for %s: %v", r.File, flag, err)
	}
	n := world.Size()
	layout := results.RCCLLayout{MPI: n > 1, Nodes: 1, Processes: n, ProcsPerNode: n, GPUsPerProcess: o.NThreads * o.NGpus}
	return &rcclOut{f: f, created: created, format: r.Format, name: results.RCCLName(coll.Name), layout: layout}, nil
}

// openRCCLFile opens path for writing (created with mode 0644 less the umask where it does not exist) and
// reports whether it created it. Writes append: a path that is this process's own standard output
// (/dev/stdout redirected to a file) gets the rows after the table instead of over it.
func openRCCLFile(path string) (f *os.File, created bool, err error) {
	_, statErr := os.Stat(path)
	f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, false, err
	}
	return f, errors.Is(statErr, fs.ErrNotExist), nil
}

// announce empties the file, as rccl-tests' reporter does when it opens it, once every output file of the
// run is claimed, and says where the rows go. A file that is not a regular one (a pipe, a terminal) has
// nothing to empty, and neither has this process's own standard output or error.
func (w *rcclOut) announce(out io.Writer) error {
	if w == nil || w.f == nil {
		return nil
	}
	if st, err := w.f.Stat(); err == nil && st.Mode().IsRegular() && !w.created && !isStdio(st) {
		if err := w.f.Truncate(0); err != nil {
			return fmt.Errorf("emptying %s: %w", w.f.Name(), err)
		}
	}
	fmt.Fprintf(out, "# Writing rccl-tests %s output to %s\n", w.format, w.f.Name())
	return nil
}

// isStdio reports whether st is the file of this process's standard output or error.
func isStdio(st os.FileInfo) bool {
	for _, f := range []*os.File{os.Stdout, os.Stderr} {
		if s, err := f.Stat(); err == nil && os.SameFile(s, st) {
			return true
		}
	}
	return false
}

// discard closes the file unwritten (the run ended before it began) and removes it when the run created it;
// a file that was there (a previous result, /dev/stdout, a pipe) is left as it is.
func (w *rcclOut) discard() {
	if w == nil || w.f == nil {
		return
	}
	_ = w.f.Close()
	if w.created {
		_ = os.Remove(w.f.Name())
	}
	w.f = nil
}

// add takes one engine's rows: one line per half that ran.
func (w *rcclOut) add(s engineRun) {
	if w == nil {
		return
	}
	if !w.laid && len(s.devices) > 0 {
		w.layout.Nodes = nodes(s.devices)
		w.layout.ProcsPerNode = max(w.layout.Processes/w.layout.Nodes, 1)
		w.laid = true
	}
	for _, r := range s.rows {
		for i, h := range r.halves {
			if !h.ran {
				continue
			}
			redop := r.redop
			if redop == "" {
				redop = "none" // nccl-tests' hypercube prints no redop; rccl-tests' names it none
			}
			line := results.RCCLRow{Cycle: r.cycle, Name: w.name, Size: r.size, Type: results.RCCLTypeName(r.dtype),
				Redop: redop, InPlace: i == 1, Time: h.sec * 1e6, AlgBW: h.algBW, BusBW: h.busBW}
			if h.checked {
				wrong := h.wrong
				line.Wrong = &wrong
			}
			w.rows = append(w.rows, line)
		}
	}
}

// nodes counts the host names of the run's devices.
func nodes(devices []collectives.Device) int {
	hosts := map[string]bool{}
	for _, d := range devices {
		hosts[d.Hostname] = true
	}
	return max(len(hosts), 1)
}

// finish writes the rows and closes the file.
func (w *rcclOut) finish() error {
	if w == nil || w.f == nil {
		return nil
	}
	f := w.f
	w.f = nil
	_, err := f.Write(results.FormatRCCL(w.format, w.layout, w.rows))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", f.Name(), err)
	}
	return nil
}
