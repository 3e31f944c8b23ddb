package report

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/results"
)

// RCCLOut is the -X file: the rows in rccl-tests' reporter layout (-Z csv or json), written by world rank 0
// when the run ends, under the path given, as rccl-tests' reporter writes it (an std::ofstream that
// truncates): an existing regular file is replaced, keeping its permissions, but only once the new rows are
// complete (written beside it, then renamed: results.ReplaceAside), so a run that ends before them leaves it
// as it was. A named pipe, a terminal or this process's own standard output is opened and written directly.
// Either is set up with the other output files, before anything runs.
type RCCLOut struct {
	f      *os.File       // written directly; nil when aside is used
	aside  *results.Aside // a regular file, replaced when the run ends
	path   string         // as given
	format string
	name   string // rccl-tests' name of the collective
	layout results.RCCLLayout
	laid   bool
	rows   []results.RCCLRow
}

// StartRCCL opens the -X file on world rank 0; without -X (or on other ranks) it returns nil, which every
// method accepts. Several processes write rccl-tests' MPI columns (nodes, ranks, ranksPerNode, gpusPerRank:
// ranks are processes, nodes distinct host names); one process its gpus column. GPUs per process are threads
// x GPUs (-t x -g). coll is the collective's name; the file joins outputs; interrupted ends a wait for a named
// pipe's reader.
func StartRCCL(out io.Writer, o *plan.Options, world collectives.World, coll string, outputs *Outputs,
	interrupted func() bool) (*RCCLOut, error) {
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
	n := world.Size()
	w := &RCCLOut{path: r.File, format: r.Format, name: results.RCCLName(coll),
		layout: results.RCCLLayout{MPI: n > 1, Nodes: 1, Processes: n, ProcsPerNode: n, GPUsPerProcess: o.NThreads * o.NGpus}}
	var err error
	st, serr := os.Stat(r.File)
	switch {
	case serr == nil && st.IsDir():
		err = errors.New("is a directory")
	case serr == nil && (!st.Mode().IsRegular() || isStdio(st)):
		w.f, err = openWriter(r.File, st, o.Timeout(), interrupted)
	default:
		w.aside, err = results.ReplaceAside(r.File)
		outputs.Claim(w.aside)
	}
	if err != nil {
		flag := "-X/--rccl_output_file"
		if r.CSVAlias {
			flag = "--csv"
		}
		return nil, fmt.Errorf("invalid value %q for %s: %w", r.File, flag, err)
	}
	return w, nil
}

// Announce says where the rows go.
func (w *RCCLOut) Announce(out io.Writer) {
	if w != nil {
		fmt.Fprintf(out, "# Writing rccl-tests %s output to %s\n", w.format, w.path)
	}
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

// Discard closes the file unwritten (the run ended before it began); a file that was there (a previous
// result, /dev/stdout, a pipe) is left as it is.
func (w *RCCLOut) Discard() {
	if w == nil {
		return
	}
	if w.f != nil {
		_ = w.f.Close()
		w.f = nil
	}
	w.aside.Discard()
	w.aside = nil
}

// Add takes one engine's rows: one line per half that ran.
func (w *RCCLOut) Add(s EngineRun) {
	if w == nil {
		return
	}
	if !w.laid && len(s.Devices) > 0 {
		w.layout.Nodes = nodes(s.Devices)
		w.layout.ProcsPerNode = max(w.layout.Processes/w.layout.Nodes, 1)
		w.laid = true
	}
	for _, r := range s.Rows {
		for i, h := range r.Halves {
			if !h.Ran {
				continue
			}
			line := results.RCCLRow{Cycle: r.Cycle, Name: w.name, Size: r.Size, Type: results.RCCLTypeName(r.DType),
				Redop: results.RCCLRedopName(r.Redop), InPlace: i == 1, Time: h.Sec * 1e6, AlgBW: h.AlgBW, BusBW: h.BusBW}
			if h.Checked {
				wrong := h.Wrong
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

// Finish writes the rows and closes the file.
func (w *RCCLOut) Finish() error {
	if w == nil || (w.f == nil && w.aside == nil) {
		return nil
	}
	data := results.FormatRCCL(w.format, w.layout, w.rows)
	if w.aside != nil {
		_, err := w.aside.Commit(data)
		w.aside = nil
		return err
	}
	f := w.f
	w.f = nil
	_, err := f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", w.path, err)
	}
	return nil
}
