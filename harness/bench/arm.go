package bench

import (
	"errors"
	"math"
	"os"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/harness/report"
)

// Ready is what the launcher needs of an arm for the header and the JSON, once its communicator is open
// and its buffers are allocated.
type Ready struct {
	Pids           []int                // the arm's workers, in rank order
	Engine         string               // Engine.Name()
	Library        string               // Comm.Library()
	LibraryPath    string               // the loaded collective library's file, where the engine loads one
	Version        int                  // Comm.Version()
	Graph          int                  // -G as it applies to the engine
	Notes          []string             // the header's "#" lines
	Devices        []collectives.Device // every rank's, in rank order
	Reduced        int64                // -e after the memory limit, 0 when it fits
	MinBytes       int64
	MaxBytes       int64
	KnowsAlgorithm bool // false where a loaded library picks the algorithm
	// CannotRun: why the engine cannot run the binary's collective at all (CollectiveChecker); empty: it can.
	CannotRun string
	AutoNote  string // --engine auto: why it is not the library (the launcher prints it once)
	Fields    string // what the version line adds after the library (header.engine)
}

// ArmHalf is one half of a point, combined over the arm's ranks as a plain run combines them.
type ArmHalf struct {
	Sec, AlgBW, BusBW float64
	Algorithm         string
	Bytes, Count      int64 // the row's size and count columns
	Checked           bool
	Wrong             int64
	Errs              collectives.Errors
}

// Ready describes an A/B arm once the session has started.
func (s *Session) Ready() (*Ready, error) {
	pids, err := collectives.Exchange(s.world, "the workers' pids", os.Getpid())
	if err != nil {
		return nil, err
	}
	h := s.header()
	r := &Ready{Pids: pids, Engine: s.eng.Name(), Library: h.Library, Version: s.comm.Version(), Graph: h.Graph,
		Notes: h.Notes, Devices: h.Devices, Reduced: h.Reduced, MinBytes: s.minBytes, MaxBytes: s.maxBytes,
		KnowsAlgorithm: true, AutoNote: s.autoNote, Fields: h.Engine}
	if lp, ok := s.comm.(collectives.LibraryPather); ok {
		r.LibraryPath, r.KnowsAlgorithm = lp.LibraryPath(), false
	}
	if cc, ok := s.comm.(collectives.CollectiveChecker); ok {
		if err := cc.CanRun(s.Coll); err != nil {
			if !errors.Is(err, collectives.ErrUnsupported) {
				return nil, err
			}
			r.CannotRun = err.Error()
		}
	}
	return r, nil
}

// Memory takes the -M snapshot after the sweep and returns its line.
func (s *Session) Memory() (string, error) {
	err := s.snapshotMemory()
	return s.memoryLine(), err
}

// Half times ("time") or validates ("check") one half of an A/B arm's point as a plain run does.
func (s *Session) Half(do string, p plan.Point, inPlace bool) (ArmHalf, error) {
	k := s.threads[0].counts(p, 0)
	s.at = s.Coll.Bytes(k, p.DType)
	out := ArmHalf{Bytes: s.at, Count: k.Param}
	switch do {
	case "time":
		h, err := s.timeHalf(p, k, inPlace)
		out.Sec, out.AlgBW, out.BusBW, out.Algorithm = h.Sec, h.AlgBW, h.BusBW, h.Algorithm
		return out, err
	case "check":
		if !s.checkable(inPlace) {
			return out, nil
		}
		var h report.Half
		err := s.validate(newTruth(s.Coll, p, s.nranks, s.localRanks(), s.seed), inPlace, &h)
		out.Checked, out.Wrong, out.Errs = true, h.Wrong, h.Errs
		for _, v := range []*float64{&out.Errs.MaxRel, &out.Errs.SumSqRel} {
			if math.IsNaN(*v) || math.IsInf(*v, 0) {
				*v = math.MaxFloat64 // JSON has no infinity; the -J file clamps it the same way
			}
		}
		return out, err
	}
	return out, errors.New("unknown A/B command " + do)
}
