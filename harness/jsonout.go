package harness

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/results"
)

// seedEnv is the variable under which the JSON records the seed; --seed defaults to it, so a run replays.
const seedEnv = "RCCLX_TESTS_SEED"

// jsonOut is the -J file: nccl-tests' schema (version 3) plus this suite's keys, written once at the end by
// world rank 0 into the file it claimed before the run; the same rows go to the -X file in rccl-tests' layout.
type jsonOut struct {
	file  *results.Aside // the -J file, nil when no JSON is written
	rccl  *rcclOut       // nil when no -X file is written
	rec   *results.Record
	o     *plan.Options
	a     *app
	bwSum float64
	bwN   int
}

// startJSON claims the -J file before anything runs (a name that cannot be created is bad input, naming the
// flag and the user's path) and starts the record; announce then names it, as nccl-tests does before its
// header. The name is the first free one (path, path.0, path.1, ...); the record is written beside it and
// appears under it only complete (results.Aside): a run that ends before its record leaves no file there.
func (a *app) startJSON(out io.Writer, o *plan.Options, seed uint64, root bool) (*jsonOut, error) {
	j := &jsonOut{o: o, a: a}
	if !root {
		return j, nil
	}
	if name := o.OutputFile; name != "" && !jsonName(name) {
		fmt.Fprintf(out, "# -J %s ignored: only .json output is written\n", name)
	} else if name != "" {
		f, err := results.CreateAside(name)
		if err != nil {
			return nil, &exit.UsageError{Msg: fmt.Sprintf("invalid value %q for -J/--output_file: %v", name, err)}
		}
		j.file = f
		a.outputs.claim(f)
	}
	if j.file == nil {
		return j, nil
	}
	j.rec = &results.Record{Version: results.SchemaVersion, StartTime: a.now().Format(timeLayout), Args: a.argv,
		Env: a.envList(o, seed), Config: jsonConfig(o), Errors: []string{""}, Suite: results.SuiteName,
		Results: []results.Result{}}
	return j, nil
}

// jsonName reports whether nccl-tests writes JSON to -J name: the extension after the last dot of the last
// path element is json, in any case (out.JSON too).
func jsonName(name string) bool {
	return strings.EqualFold(filepath.Ext(name), ".json")
}

// announce says where the record goes, once every output file of the run is claimed.
func (j *jsonOut) announce(out io.Writer) {
	if j.file != nil {
		fmt.Fprintf(out, "# Writing JSON output to %s\n", j.file.Name())
	}
}

// envList is the JSON env key: the collective libraries' and device selection variables of the process, the
// communicator overrides, and the seed.
func (a *app) envList(o *plan.Options, seed uint64) []string {
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
	for k, v := range o.CommEnv {
		overrides = append(overrides, k+"="+v)
	}
	slices.Sort(overrides)
	return append(append(out, overrides...), seedEnv+"="+strconv.FormatUint(seed, 10))
}

func jsonConfig(o *plan.Options) results.Config {
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

// engineRun is what the JSON records of one engine's run (or of one A/B arm).
type engineRun struct {
	opened          bool // the communicator was opened: the fields up to devices are known
	engine, library string
	version, graph  int
	devices         []collectives.Device
	rows            []row
	oob, bwN        int
	bwSum           float64
	err             error
	stopped         bool
}

// record is what the JSON keeps of the session.
func (s *session) record() engineRun {
	e := engineRun{rows: s.rows, oob: s.oob, bwSum: s.bwSum, bwN: s.bwN, err: s.err, stopped: s.stopped}
	if s.comm != nil {
		e.opened, e.engine, e.library, e.version = true, s.eng.Name(), s.comm.Library(), s.comm.Version()
		e.graph, e.devices = s.graph, s.devices
	}
	return e
}

// add records one engine's run.
func (j *jsonOut) add(s engineRun) {
	j.rccl.add(s)
	if j.rec == nil {
		return
	}
	r := j.rec
	if s.opened {
		if len(r.Config.Devices) == 0 {
			r.NcclVersion = s.version
			r.Config.Graph = s.graph
			for _, d := range s.devices {
				r.Config.Devices = append(r.Config.Devices, results.Device{Rank: d.Rank, Group: d.Group,
					Pid: d.Pid, Hostname: d.Hostname, Device: d.Index, DeviceHex: d.BusID, DeviceInfo: d.Name})
			}
		}
		r.Engine = joinName(r.Engine, s.engine)
		r.Library = joinName(r.Library, s.library)
	}
	for _, row := range s.rows {
		r.Results = append(r.Results, jsonResult(row, j.o))
	}
	r.OutOfBounds.Count += s.oob
	j.bwSum += s.bwSum
	j.bwN += s.bwN
	switch {
	case s.err != nil:
		j.fail(s.err.Error())
	case s.stopped && !slices.Contains(r.Errors, errStopped):
		j.fail(errStopped)
	}
}

// errStopped is the JSON's error for a run a signal stopped after the size in progress.
const errStopped = "interrupted: stopped after the size in progress"

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

// joinName adds name to a comma list of names unless it is there (both A/B arms usually run one engine).
func joinName(list, name string) string {
	if list == "" {
		return name
	}
	if slices.Contains(strings.Split(list, ","), name) {
		return list
	}
	return list + "," + name
}

// finish fills the summary keys and writes the files. A second signal meanwhile waits for them (app.outputs).
func (j *jsonOut) finish() error {
	j.a.outputs.mu.Lock()
	defer j.a.outputs.mu.Unlock()
	rerr := j.rccl.finish()
	if j.rec == nil {
		return rerr
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
	data, err := results.Marshal(r)
	if err != nil {
		j.file.Discard()
		return errors.Join(rerr, fmt.Errorf("writing %s: %w", j.file.Name(), err))
	}
	name, err := j.file.Commit(data)
	if err == nil && name != j.file.Name() {
		fmt.Fprintf(j.a.stderr, "%s: %s was taken during the run: JSON written to %s\n", j.a.binary(), j.file.Name(), name)
	}
	return errors.Join(rerr, err)
}

func jsonResult(r row, o *plan.Options) results.Result {
	res := results.Result{Size: r.size, Count: r.count, Type: r.dtype, Redop: r.redop,
		Root: results.RootString(r.root), ActualIterations: o.Iters, ExperimentName: r.label, Engine: r.engine,
		Algorithm: r.algorithm()}
	res.OutOfPlace, res.OutOfPlacePerIter = jsonHalf(r.halves[0], o)
	res.InPlace, res.InPlacePerIter = jsonHalf(r.halves[1], o)
	return res
}

// jsonHalf is one half of a JSON row; a half that did not run (-O) is written as null (results.Half), as
// nccl-tests writes a half it did not measure, never with made-up zeros.
func jsonHalf(h halfResult, o *plan.Options) (results.Half, *results.PerIter) {
	if !h.ran {
		return results.Half{}, nil
	}
	out := results.Half{AlgBW: h.algBW, BusBW: h.busBW}
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
		wrong, rel, rms := float64(h.wrong), min(h.errs.MaxRel, math.MaxFloat64), min(h.errs.RMSRel(), math.MaxFloat64)
		out.NWrong, out.MaxRelErr, out.RMSRelErr = &wrong, &rel, &rms
	}
	if o.PerIter != 1 {
		return out, nil
	}
	s := iterSummary(h.iters, o.IterSkip)
	return out, &s
}
