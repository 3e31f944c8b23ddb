package report

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/results"
)

// RunInfo is what the -J record says of the process: its program, command line and environment, the clock,
// and NCCL_TESTS_MIN_BW (-1 when unset), read when the record needs them; stderr takes the line about a file renamed during the run.
type RunInfo struct {
	Binary  string
	Argv    []string
	Environ func() []string
	Now     func() time.Time
	MinBW   func() float64
	Stderr  io.Writer
}

// JSON is the -J file: nccl-tests' schema (version 3), or in rccl-tests' dialect rccl-tests' (version 1,
// results.MarshalRCCL), plus this suite's keys, written once at the end by
// world rank 0 into the file it claimed before the run; the same rows go to the -X file in rccl-tests' layout.
type JSON struct {
	file    *results.Aside // the -J file, nil when no JSON is written
	RCCL    *RCCLOut       // nil when no -X file is written
	rec     *results.Record
	o       *plan.Options
	run     RunInfo
	outputs *Outputs
	bwSum   float64
	bwN     int
}

// StartJSON claims the -J file before anything runs (a name that cannot be created is bad input, naming the
// flag and the user's path) and starts the record; announce then names it, as nccl-tests does before its
// header. The name is the first free one (path, path.0, path.1, ...); the record is written beside it and
// appears under it only complete (results.Aside): a run that ends before its record leaves no file there.
func StartJSON(out io.Writer, o *plan.Options, seed uint64, root bool, run RunInfo, outputs *Outputs) (*JSON,
	error) {
	j := &JSON{o: o, run: run, outputs: outputs}
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
		outputs.Claim(f)
	}
	if j.file == nil {
		return j, nil
	}
	j.rec = &results.Record{Version: results.SchemaVersion, StartTime: run.Now().Format(TimeLayout), Args: run.Argv,
		Env: envList(run.Environ(), o, seed), Config: JSONConfig(o), Errors: []string{""}, Suite: results.SuiteName,
		Results: []results.Result{}}
	return j, nil
}

// jsonName reports whether nccl-tests writes JSON to -J name: the extension after the last dot of the last
// path element is json, in any case (out.JSON too).
func jsonName(name string) bool {
	return strings.EqualFold(filepath.Ext(name), ".json")
}

// Announce says where the record goes, once every output file of the run is claimed.
func (j *JSON) Announce(out io.Writer) {
	if j.file != nil {
		fmt.Fprintf(out, "# Writing JSON output to %s\n", j.file.Name())
	}
}

// envList is the JSON env key: the collective libraries' and device selection variables of the process, the
// communicator overrides, and the seed.
func envList(environ []string, o *plan.Options, seed uint64) []string {
	var out []string
	for _, kv := range environ {
		if strings.HasPrefix(kv, plan.SeedEnv+"=") {
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
	return append(append(out, overrides...), plan.SeedEnv+"="+strconv.FormatUint(seed, 10))
}

// Add records one engine's run.
func (j *JSON) Add(s EngineRun) {
	j.RCCL.Add(s)
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
		r.Results = append(r.Results, JSONResult(row, j.o))
	}
	r.OutOfBounds.Count += s.OOB
	j.bwSum += s.BWSum
	j.bwN += s.BWN
	switch {
	case s.Err != nil:
		j.Fail(s.Err.Error())
	case s.Stopped && !slices.Contains(r.Errors, ErrStopped):
		j.Fail(ErrStopped)
	}
}

// SetAB records the A/B comparison (--ab) in the JSON's ab key.
func (j *JSON) SetAB(ab *results.ABReport) {
	if j.rec != nil {
		j.rec.AB = ab
	}
}

// ErrStopped is the JSON's error for a run a signal stopped after the size in progress.
const ErrStopped = "interrupted: stopped after the size in progress"

// Fail records an error that ended the run early.
func (j *JSON) Fail(msg string) {
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

// Finish fills the summary keys and writes the files. A second signal meanwhile waits for them (outputs).
func (j *JSON) Finish() error {
	j.outputs.Mu.Lock()
	defer j.outputs.Mu.Unlock()
	rerr := j.RCCL.Finish()
	if j.rec == nil {
		return rerr
	}
	r := j.rec
	r.EndTime = j.run.Now().Format(TimeLayout)
	r.OutOfBounds.Okay = results.Bool(r.OutOfBounds.Count == 0)
	rccl := j.o.RCCLDialect || j.o.ChosenDialect == plan.DialectRCCL
	switch {
	case j.bwN > 0:
		r.AverageBusBandwidth.Bandwidth = results.Float(j.bwSum / float64(j.bwN))
	case rccl: // rccl-tests' average over no rows is 0/0
		r.AverageBusBandwidth.Bandwidth = results.Float(math.NaN())
	}
	t := Trailer{AvgBusBW: float64(r.AverageBusBandwidth.Bandwidth), MinBW: j.run.MinBW()}
	r.AverageBusBandwidth.Okay = "unchecked"
	if t.MinBW >= 0 {
		r.AverageBusBandwidth.Okay = results.Bool(t.BandwidthOK())
	}
	marshal := results.Marshal
	if rccl {
		marshal = results.MarshalRCCL
	}
	data, err := marshal(r)
	if err != nil {
		j.file.Discard()
		return errors.Join(rerr, fmt.Errorf("writing %s: %w", j.file.Name(), err))
	}
	name, err := j.file.Commit(data)
	if err == nil && name != j.file.Name() {
		fmt.Fprintf(j.run.Stderr, "%s: %s was taken during the run: JSON written to %s\n", j.run.Binary, j.file.Name(),
			name)
	}
	return errors.Join(rerr, err)
}
