// Package results reads, writes, compares and gates the records of perf runs.
//
// Record mirrors the JSON that nccl-tests writes with -J (schema version 3) key
// for key and in the same order; this suite's own keys follow nccl-tests' keys
// and are omitted when empty, so nccl-tests' readers accept our files and we
// read theirs.
package results

import (
	"encoding/json"
	"fmt"
	"math"
)

// SchemaVersion is the nccl-tests JSON schema version this package writes.
const SchemaVersion = 3

// SuiteName is written in Record.Suite by this suite's binaries.
const SuiteName = "rcclx-tests"

// Record is the result of one perf-binary run.
type Record struct {
	Version             int         `json:"version"`
	StartTime           string      `json:"start_time"`
	Args                []string    `json:"args"`
	Env                 []string    `json:"env"`
	NcclVersion         int         `json:"nccl_version"`
	Config              Config      `json:"config"`
	Results             []Result    `json:"results"`
	OutOfBounds         OutOfBounds `json:"out_of_bounds"`
	AverageBusBandwidth AvgBusBW    `json:"average_bus_bandwidth"`
	Errors              []string    `json:"errors"`
	EndTime             string      `json:"end_time"`

	// This suite's keys.
	Suite   string `json:"suite,omitempty"`
	Engine  string `json:"engine,omitempty"`
	Library string `json:"library,omitempty"`
	// Incomplete marks a run that was interrupted before the sweep ended.
	Incomplete bool      `json:"incomplete,omitempty"`
	AB         *ABReport `json:"ab,omitempty"`
}

// Config is the run configuration. Booleans are the strings "true"/"false" as
// nccl-tests writes them (see Bool).
type Config struct {
	NThreads     int      `json:"nthreads"`
	NGpus        int      `json:"ngpus"`
	MinimumBytes int64    `json:"minimum_bytes"`
	MaximumBytes int64    `json:"maximum_bytes"`
	StepFactor   *int64   `json:"step_factor,omitempty"`
	StepBytes    *int64   `json:"step_bytes,omitempty"`
	WarmupIters  int      `json:"warmup_iters"`
	Iterations   int      `json:"iterations"`
	AggIters     int      `json:"aggregated_iterations"`
	Validation   int      `json:"validation"`
	Graph        int      `json:"graph"`
	Blocking     string   `json:"blocking_collectives"`
	PerIterTime  string   `json:"per_iter_timing"`
	PerIterSkip  int      `json:"per_iter_skip"`
	ParallelInit string   `json:"parallel_init"`
	Devices      []Device `json:"devices"`
}

// Device is one rank's GPU as listed under "# Using devices".
type Device struct {
	Rank       int    `json:"rank"`
	Group      int    `json:"group"`
	Pid        int    `json:"pid"`
	Hostname   string `json:"hostname"`
	Device     int    `json:"device"`
	DeviceHex  string `json:"device_hex"`
	DeviceInfo string `json:"device_info"`
}

// Result is one row of the table: one size, type and reduction.
type Result struct {
	Size  int64  `json:"size"`
	Count int64  `json:"count"`
	Type  string `json:"type"`
	Redop string `json:"redop"`
	// Root is a string padded as nccl-tests prints it ("    -1"); see RootString.
	Root       string `json:"root"`
	OutOfPlace Half   `json:"out_of_place"`
	// Per-iteration timing (-I), as nccl-tests writes it after each half.
	OutOfPlacePerIter *PerIter `json:"out_of_place_per_iter,omitempty"`
	InPlace           Half     `json:"in_place"`
	InPlacePerIter    *PerIter `json:"in_place_per_iter,omitempty"`
	ActualIterations  int      `json:"actual_iterations"`
	ExperimentName    string   `json:"experiment_name"`

	// This suite's keys.
	Engine    string `json:"engine,omitempty"`
	Algorithm string `json:"algorithm,omitempty"`
}

// Half is the out-of-place or in-place measurement of a Result.
type Half struct {
	// Time is the GPU time in microseconds; CPUTime replaces it with -C.
	Time    *float64 `json:"time,omitempty"`
	CPUTime *float64 `json:"cpu_time,omitempty"`
	AlgBW   float64  `json:"alg_bw"`
	BusBW   float64  `json:"bus_bw"`
	// NWrong is null when the row was not checked.
	NWrong *float64 `json:"nwrong"`

	// This suite's keys.
	MaxRelErr *float64 `json:"max_rel_err,omitempty"`
	// RMSRelErr is the root mean square of the same relative error over every element checked.
	RMSRelErr *float64 `json:"rms_rel_err,omitempty"`
	// Rounds holds the time (us) of each repeated round (-N cycles or A/B
	// rounds); the gate uses their spread as the noise of this measurement.
	Rounds []float64 `json:"rounds,omitempty"`
}

// MarshalJSON writes a half that did not run (no time: rccl-tests' -O ran only the other one) as null, as
// nccl-tests' writer marks a half it has no measurement of (writeBenchMarkLineNullBody), never as zeros.
func (h Half) MarshalJSON() ([]byte, error) {
	if h.Time == nil && h.CPUTime == nil {
		return []byte("null"), nil
	}
	type plain Half // without this method
	return json.Marshal(plain(h))
}

// PerIter is nccl-tests' per-iteration report of one half (-I), in
// microseconds (CVPct in percent of the mean). The statistics leave out the
// first SkippedIterations times (-K); TimesUs holds them all.
type PerIter struct {
	SkippedIterations int       `json:"skipped_iterations"`
	MinUs             float64   `json:"min_us"`
	MaxUs             float64   `json:"max_us"`
	AvgUs             float64   `json:"avg_us"`
	P50Us             float64   `json:"p50_us"`
	P95Us             float64   `json:"p95_us"`
	P99Us             float64   `json:"p99_us"`
	StdevUs           float64   `json:"stdev_us"`
	CVPct             float64   `json:"cv_pct"`
	TimesUs           []float64 `json:"times_us"`
	// PerProcessMaxTimesUs is present with several processes.
	PerProcessMaxTimesUs [][]float64 `json:"per_process_max_times_us,omitempty"`
}

// OutOfBounds is the "# Out of bounds values" line.
type OutOfBounds struct {
	Count int    `json:"count"`
	Okay  string `json:"okay"`
}

// AvgBusBW is the "# Avg bus bandwidth" line. Okay is "true", "false" or
// "unchecked" (no NCCL_TESTS_MIN_BW given).
type AvgBusBW struct {
	Bandwidth Float  `json:"bandwidth"`
	Okay      string `json:"okay"`
}

// Float is a number that both tools' writers spell "nan" when it is not one (an average over no rows).
type Float float64

// MarshalJSON writes NaN as the string "nan", as the tools do; encoding/json has no other spelling for it.
func (f Float) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) {
		return []byte(`"nan"`), nil
	}
	return json.Marshal(float64(f))
}

// UnmarshalJSON reads a number, or the tools' "nan".
func (f *Float) UnmarshalJSON(data []byte) error {
	if string(data) == `"nan"` {
		*f = Float(math.NaN())
		return nil
	}
	return json.Unmarshal(data, (*float64)(f))
}

// Bool spells b as nccl-tests does in JSON.
func Bool(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// RootString formats a root rank as nccl-tests writes it in the root key.
func RootString(root int) string {
	return fmt.Sprintf("%6d", root)
}

// Micros returns the reported time of h in microseconds (GPU time, else CPU
// time) and whether there is one.
func (h Half) Micros() (float64, bool) {
	switch {
	case h.Time != nil:
		return *h.Time, true
	case h.CPUTime != nil:
		return *h.CPUTime, true
	}
	return 0, false
}
