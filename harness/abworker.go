package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/harness/report"
	"github.com/rcclx-tests/rcclx-tests/harness/world"
)

// An A/B run (--ab KEY=v1,v2) runs each arm in worker processes of its own: the perf binary re-executed with
// KEY set in its environment from the start, as a library that reads its variables once per process (NCCL's
// and RCCL's parameters) must see it. The launching process drives the workers over two inherited pipes, one
// JSON value per message: it sends commands on the worker's file descriptor 3 and reads the replies on 4.
// Closing the command pipe ends the worker.
const (
	// abWorkerEnv marks a worker; its value is the switch's name (the value is in that variable).
	abWorkerEnv = "RCCLX_TESTS_AB_WORKER"
	abCommandFD = 3
	abReplyFD   = 4
)

// abCommand asks a worker to time one half of a point ("time"), to validate it ("check"), or for its -M line
// after the sweep ("memory").
type abCommand struct {
	Do      string            `json:"do"`
	DType   collectives.DType `json:"dtype"`
	Op      collectives.Op    `json:"op"`
	Root    int               `json:"root"`
	Size    int64             `json:"size"`
	InPlace bool              `json:"in_place"`
}

// abReply is a worker's answer: once Ready, then a Half per "time" or "check", Memory for "memory"; Err ends
// the worker.
type abReply struct {
	Ready  *abReady `json:"ready,omitempty"`
	Half   *abHalf  `json:"half,omitempty"`
	Memory string   `json:"memory,omitempty"`
	Err    *abError `json:"err,omitempty"`
	// Unsupported: the engine does not run this collective, type or operation (the sweep skips it).
	Unsupported string `json:"unsupported,omitempty"`
}

// abReady is what the launcher needs of an arm for the header and the JSON, once its communicator is open
// and its buffers are allocated.
type abReady struct {
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

// abHalf is one half of a point, combined over the arm's ranks as a plain run combines them.
type abHalf struct {
	Sec, AlgBW, BusBW float64
	Algorithm         string
	Bytes, Count      int64 // the row's size and count columns
	Checked           bool
	Wrong             int64
	Errs              collectives.Errors
}

// abError is an error that ended a worker, with what the launcher needs to report it as a plain run would.
type abError struct {
	Msg     string
	Code    int
	Timeout *collectives.TimeoutError `json:",omitempty"`
	Size    int64                     // the size column of the row being run, for a timeout's line
}

// abWorker is the worker side: open the engine with the arm's value, report ready, then answer commands until
// the launcher closes the command pipe.
func (a *app) abWorker(o *plan.Options, key string) int {
	commands, replies := os.NewFile(abCommandFD, "a/b commands"), os.NewFile(abReplyFD, "a/b replies")
	for _, f := range []*os.File{commands, replies} {
		if st, err := f.Stat(); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
			return a.fail(fmt.Errorf("%s is set, but file descriptor %d is not a pipe: only --ab starts workers",
				abWorkerEnv, f.Fd()))
		}
	}
	dropABIgnored(o)
	dec, enc := json.NewDecoder(commands), json.NewEncoder(replies)
	var s *session
	fail := func(err error) int {
		e := &abError{Msg: err.Error(), Code: exit.Code(err)}
		if s != nil {
			e.Size = s.at
		}
		errors.As(err, &e.Timeout)
		_ = enc.Encode(abReply{Err: e})
		return e.Code
	}
	o.CommEnv = maps.Clone(o.CommEnv)
	if o.CommEnv == nil {
		o.CommEnv = map[string]string{}
	}
	o.CommEnv[key] = a.getenv(key)
	world, err := a.world(o.Timeout(), nil) // a worker ends when its launching process says so
	if err != nil {
		return fail(err)
	}
	// The arm's own value may configure the collective (alltoallv's NCCL_TESTS_ALLTOALLV_* pattern).
	if err := a.prepareCollective(o, world.Size()*o.NThreads*o.NGpus); err != nil {
		return fail(err)
	}
	s = &session{a: a, o: o, world: world, seed: o.Seed.Resolve(), out: io.Discard, engineName: o.Engines[0]}
	if err := s.start(); err != nil {
		return fail(err)
	}
	defer s.close()
	if err := s.alloc(); err != nil { // before ready: arm B's memory plan sees arm A's buffers
		return fail(err)
	}
	ready, err := s.ready()
	if err != nil {
		return fail(err)
	}
	if err := enc.Encode(abReply{Ready: ready}); err != nil {
		return exit.Runtime
	}
	for {
		var c abCommand
		if err := dec.Decode(&c); err != nil {
			return exit.OK // the launcher closed the pipe: the run is over (or the launcher is gone)
		}
		reply, err := s.answer(c)
		if errors.Is(err, collectives.ErrUnsupported) {
			reply, err = abReply{Unsupported: err.Error()}, nil
		}
		if err != nil {
			return fail(err)
		}
		if err := enc.Encode(reply); err != nil {
			return exit.Runtime
		}
	}
}

// ready describes the arm once the session has started.
func (s *session) ready() (*abReady, error) {
	pids, err := world.Gather(s.world, "the workers' pids", os.Getpid())
	if err != nil {
		return nil, err
	}
	h := s.header()
	r := &abReady{Pids: pids, Engine: s.eng.Name(), Library: h.Library, Version: s.comm.Version(), Graph: h.Graph,
		Notes: h.Notes, Devices: h.Devices, Reduced: h.Reduced, MinBytes: s.minBytes, MaxBytes: s.maxBytes,
		KnowsAlgorithm: true, AutoNote: s.autoNote, Fields: h.Engine}
	if lp, ok := s.comm.(interface{ LibraryPath() string }); ok {
		r.LibraryPath, r.KnowsAlgorithm = lp.LibraryPath(), false
	}
	if cc, ok := s.comm.(collectives.CollectiveChecker); ok {
		if err := cc.CanRun(s.a.coll); err != nil {
			if !errors.Is(err, collectives.ErrUnsupported) {
				return nil, err
			}
			r.CannotRun = err.Error()
		}
	}
	return r, nil
}

// answer answers one command of the launching process.
func (s *session) answer(c abCommand) (abReply, error) {
	if c.Do == "memory" {
		err := s.snapshotMemory()
		return abReply{Memory: s.memoryLine()}, err
	}
	h, err := s.abHalf(c)
	return abReply{Half: &h}, err
}

// abHalf times or validates one half as a plain run does (timeHalf, validate).
func (s *session) abHalf(c abCommand) (abHalf, error) {
	p := point{dt: c.DType, op: c.Op, root: c.Root, size: c.Size}
	k := s.threads[0].counts(p, 0)
	s.at = s.a.coll.Bytes(k, p.dt)
	out := abHalf{Bytes: s.at, Count: k.Param}
	switch c.Do {
	case "time":
		h, err := s.timeHalf(p, k, c.InPlace)
		out.Sec, out.AlgBW, out.BusBW, out.Algorithm = h.Sec, h.AlgBW, h.BusBW, h.Algorithm
		return out, err
	case "check":
		if !s.checkable(c.InPlace) {
			return out, nil
		}
		var h report.Half
		err := s.validate(newTruth(s.a.coll, p, s.nranks, s.localRanks(), s.seed), c.InPlace, &h)
		out.Checked, out.Wrong, out.Errs = true, h.Wrong, h.Errs
		for _, v := range []*float64{&out.Errs.MaxRel, &out.Errs.SumSqRel} {
			if math.IsNaN(*v) || math.IsInf(*v, 0) {
				*v = math.MaxFloat64 // JSON has no infinity; the -J file clamps it the same way
			}
		}
		return out, err
	}
	return out, errors.New("unknown A/B command " + c.Do)
}
