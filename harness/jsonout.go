package harness

import (
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/rcclx-tests/rcclx-tests/results"
)

// seedEnv is the variable under which the JSON records the seed; --seed defaults to it, so a run replays.
const seedEnv = "RCCLX_TESTS_SEED"

// jsonOut is the -J file: nccl-tests' schema (version 3) plus this suite's keys, written once at the end by
// world rank 0 into the file it claimed before the run; the same record goes to the --csv file in rccl-tests' CSV.
type jsonOut struct {
	file    *os.File // the -J file, nil when no JSON is written
	csvFile *os.File // the --csv file, nil when no CSV is written
	rec     *results.Record
	o       *Options
	a       *app
	bwSum   float64
	bwN     int
}

// startJSON claims the output files before anything runs (a name that cannot be created is bad input, naming
// the flag and the user's path), announces them as nccl-tests does before its header, and starts the record.
// Each file is created exclusively at the first free name (path, path.0, path.1, ...), and that name is printed.
func (a *app) startJSON(out io.Writer, o *Options, seed uint64, root bool) (*jsonOut, error) {
	j := &jsonOut{o: o, a: a}
	if !root {
		return j, nil
	}
	if name := o.OutputFile; name != "" && !strings.HasSuffix(name, ".json") {
		fmt.Fprintf(out, "# -J %s ignored: only .json output is written\n", name)
	} else if name != "" {
		f, err := results.Create(name)
		if err != nil {
			return nil, &usageError{fmt.Sprintf("invalid value %q for -J/--output_file: %v", name, err)}
		}
		j.file = f
	}
	if name := o.CSVFile; name != "" {
		f, err := results.Create(name)
		if err != nil {
			j.close()
			return nil, &usageError{fmt.Sprintf("invalid value %q for --csv: %v", name, err)}
		}
		j.csvFile = f
	}
	if j.file != nil {
		fmt.Fprintf(out, "# Writing JSON output to %s\n", j.file.Name())
	}
	if j.csvFile != nil {
		fmt.Fprintf(out, "# Writing CSV output to %s\n", j.csvFile.Name())
	}
	if j.file == nil && j.csvFile == nil {
		return j, nil
	}
	j.rec = &results.Record{Version: results.SchemaVersion, StartTime: a.now().Format(timeLayout), Args: a.argv,
		Env: a.envList(o, seed), Config: jsonConfig(o), Errors: []string{""}, Suite: results.SuiteName,
		Results: []results.Result{}}
	return j, nil
}

// close closes the files without writing them (bad input found after they were claimed: none is left behind).
func (j *jsonOut) close() {
	for _, f := range []*os.File{j.file, j.csvFile} {
		if f != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}
}

// envList is the JSON env key: the collective libraries' and device selection variables of the process, the
// communicator overrides, and the seed.
func (a *app) envList(o *Options, seed uint64) []string {
	var out []string
	for _, kv := range a.environ() {
		if strings.HasPrefix(kv, seedEnv+"=") {
			continue
		}
		for _, prefix := range []string{"NCCL_", "RCCL", "CUDA_VISIBLE_DEVICES=", "HIP_VISIBLE_DEVICES="} {
			if strings.HasPrefix(kv, prefix) {
				out = append(out, kv)
				break
			}
		}
	}
	var overrides []string
	for k, v := range o.env {
		overrides = append(overrides, k+"="+v)
	}
	slices.Sort(overrides)
	return append(append(out, overrides...), seedEnv+"="+strconv.FormatUint(seed, 10))
}

func jsonConfig(o *Options) results.Config {
	c := results.Config{NThreads: o.NThreads, NGpus: o.NGpus, MinimumBytes: o.MinBytes, MaximumBytes: o.MaxBytes,
		WarmupIters: o.Warmup, Iterations: o.Iters, AggIters: o.AggIters, Validation: o.Check, Graph: o.Graph,
		Blocking: results.Bool(o.Blocking != 0), PerIterTime: results.Bool(o.PerIter == 1),
		PerIterSkip: o.IterSkip, ParallelInit: results.Bool(o.ParallelInit == 1), Devices: []results.Device{}}
	if o.StepFactor > 1 {
		f := o.StepFactor
		c.StepFactor = &f
	} else {
		b := o.StepBytes
		c.StepBytes = &b
	}
	return c
}

// add records one engine's session.
func (j *jsonOut) add(s *session) {
	if j.rec == nil {
		return
	}
	r := j.rec
	if s.comm != nil {
		if len(r.Config.Devices) == 0 {
			r.NcclVersion = s.comm.Version()
			r.Config.Graph = s.graph
			for _, d := range s.devices {
				r.Config.Devices = append(r.Config.Devices, results.Device{Rank: d.Rank, Group: d.Group,
					Pid: d.Pid, Hostname: d.Hostname, Device: d.Index, DeviceHex: d.BusID, DeviceInfo: d.Name})
			}
		}
		r.Engine = joinName(r.Engine, s.eng.Name())
		r.Library = joinName(r.Library, s.comm.Library())
	}
	for _, row := range s.rows {
		r.Results = append(r.Results, jsonResult(row, j.o))
	}
	r.OutOfBounds.Count += s.oob
	j.bwSum += s.bwSum
	j.bwN += s.bwN
	if s.err != nil {
		j.fail(s.err.Error())
	}
	r.Incomplete = r.Incomplete || s.stopped
}

// fail records an error that ended the run early.
func (j *jsonOut) fail(msg string) {
	if j.rec == nil {
		return
	}
	if j.rec.Errors[0] == "" {
		j.rec.Errors = j.rec.Errors[:0]
	}
	j.rec.Errors = append(j.rec.Errors, msg)
	j.rec.Incomplete = true
}

func joinName(list, name string) string {
	if list == "" {
		return name
	}
	return list + "," + name
}

// finish fills the summary keys and writes the file.
func (j *jsonOut) finish() error {
	if j.rec == nil {
		return nil
	}
	r := j.rec
	r.EndTime = j.a.now().Format(timeLayout)
	r.OutOfBounds.Okay = results.Bool(r.OutOfBounds.Count == 0)
	if j.bwN > 0 {
		r.AverageBusBandwidth.Bandwidth = j.bwSum / float64(j.bwN)
	}
	t := trailer{avgBusBW: r.AverageBusBandwidth.Bandwidth, minBW: j.a.minBW()}
	r.AverageBusBandwidth.Okay = "unchecked"
	if t.minBW >= 0 {
		r.AverageBusBandwidth.Okay = results.Bool(t.bandwidthOK())
	}
	for _, out := range []struct {
		f       *os.File
		marshal func(*results.Record) ([]byte, error)
	}{{j.file, results.Marshal}, {j.csvFile, results.MarshalCSV}} {
		if out.f == nil {
			continue
		}
		data, err := out.marshal(r)
		if err == nil {
			_, err = out.f.Write(data)
		}
		if cerr := out.f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", out.f.Name(), err)
		}
	}
	return nil
}

func jsonResult(r row, o *Options) results.Result {
	res := results.Result{Size: r.size, Count: r.count, Type: r.dtype, Redop: r.redop,
		Root: results.RootString(r.root), ActualIterations: o.Iters, ExperimentName: r.label, Engine: r.engine,
		Algorithm: r.algorithm()}
	res.OutOfPlace, res.OutOfPlacePerIter = jsonHalf(r.halves[0], o)
	res.InPlace, res.InPlacePerIter = jsonHalf(r.halves[1], o)
	return res
}

func jsonHalf(h halfResult, o *Options) (results.Half, *results.PerIter) {
	out := results.Half{AlgBW: h.algBW, BusBW: h.busBW}
	if !h.ran {
		return out, nil
	}
	us := h.sec * 1e6
	if o.CPUTime == 1 {
		out.CPUTime = &us
	} else {
		out.Time = &us
	}
	for _, sec := range h.rounds {
		out.Rounds = append(out.Rounds, sec*1e6)
	}
	if h.checked {
		wrong, rel := float64(h.wrong), min(h.maxRelErr, math.MaxFloat64)
		out.NWrong, out.MaxRelErr = &wrong, &rel
	}
	if o.PerIter != 1 {
		return out, nil
	}
	s := iterSummary(h.iters, o.IterSkip)
	return out, &s
}
