package harness

import (
	"fmt"
	"io"
	"os"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/results"
)

// rcclOut is the -X file: the rows in rccl-tests' reporter layout (-Z csv or json), written by world rank 0.
// The file is created before the first measurement, never over an existing one (name, name.0, name.1 ...
// like -J), and filled when the run ends, as rccl-tests writes its reporter file.
type rcclOut struct {
	f      *os.File
	format string
	name   string // rccl-tests' name of the collective
	layout results.RCCLLayout
	laid   bool
	rows   []results.RCCLRow
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
	f, err := results.Create(r.File)
	if err != nil {
		flag := "-X/--rccl_output_file"
		if r.csvAlias {
			flag = "--csv"
		}
		return nil, fmt.Errorf("invalid value %q for %s: %v", r.File, flag, err)
	}
	n := world.Size()
	layout := results.RCCLLayout{MPI: n > 1, Nodes: 1, Processes: n, ProcsPerNode: n, GPUsPerProcess: o.NThreads * o.NGpus}
	return &rcclOut{f: f, format: r.Format, name: results.RCCLName(coll.Name), layout: layout}, nil
}

// announce says where the rows go, once every output file of the run is claimed.
func (w *rcclOut) announce(out io.Writer) {
	if w != nil && w.f != nil {
		fmt.Fprintf(out, "# Writing rccl-tests %s output to %s\n", w.format, w.f.Name())
	}
}

// discard removes the file unwritten (the run ended before it began).
func (w *rcclOut) discard() {
	if w == nil || w.f == nil {
		return
	}
	_ = w.f.Close()
	_ = os.Remove(w.f.Name())
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
