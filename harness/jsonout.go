package harness

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/harness/report"
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
	j.rec = &results.Record{Version: results.SchemaVersion, StartTime: a.now().Format(report.TimeLayout), Args: a.argv,
		Env: a.envList(o, seed), Config: report.JSONConfig(o), Errors: []string{""}, Suite: results.SuiteName,
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

// record is what the JSON keeps of the session.
func (s *session) record() report.EngineRun {
	e := report.EngineRun{Rows: s.rows, OOB: s.oob, BWSum: s.bwSum, BWN: s.bwN, Err: s.err, Stopped: s.stopped}
	if s.comm != nil {
		e.Opened, e.Engine, e.Library, e.Version = true, s.eng.Name(), s.comm.Library(), s.comm.Version()
		e.Graph, e.Devices = s.graph, s.devices
	}
	return e
}

// add records one engine's run.
func (j *jsonOut) add(s report.EngineRun) {
	j.rccl.add(s)
	if j.rec == nil {
		return
	}
	r := j.rec
	if s.Opened {
		if len(r.Config.Devices) == 0 {
			r.NcclVersion = s.Version
			r.Config.Graph = s.Graph
			for _, d := range s.Devices {
				r.Config.Devices = append(r.Config.Devices, results.Device{Rank: d.Rank, Group: d.Group,
					Pid: d.Pid, Hostname: d.Hostname, Device: d.Index, DeviceHex: d.BusID, DeviceInfo: d.Name})
			}
		}
		r.Engine = joinName(r.Engine, s.Engine)
		r.Library = joinName(r.Library, s.Library)
	}
	for _, row := range s.Rows {
		r.Results = append(r.Results, report.JSONResult(row, j.o))
	}
	r.OutOfBounds.Count += s.OOB
	j.bwSum += s.BWSum
	j.bwN += s.BWN
	switch {
	case s.Err != nil:
		j.fail(s.Err.Error())
	case s.Stopped && !slices.Contains(r.Errors, errStopped):
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
	r.EndTime = j.a.now().Format(report.TimeLayout)
	r.OutOfBounds.Okay = results.Bool(r.OutOfBounds.Count == 0)
	if j.bwN > 0 {
		r.AverageBusBandwidth.Bandwidth = j.bwSum / float64(j.bwN)
	}
	t := report.Trailer{AvgBusBW: r.AverageBusBandwidth.Bandwidth, MinBW: j.a.minBW()}
	r.AverageBusBandwidth.Okay = "unchecked"
	if t.MinBW >= 0 {
		r.AverageBusBandwidth.Okay = results.Bool(t.BandwidthOK())
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
