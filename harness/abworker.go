package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/bench"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
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
	Ready  *bench.Ready   `json:"ready,omitempty"`
	Half   *bench.ArmHalf `json:"half,omitempty"`
	Memory string         `json:"memory,omitempty"`
	Err    *abError       `json:"err,omitempty"`
	// Unsupported: the engine does not run this collective, type or operation (the sweep skips it).
	Unsupported string `json:"unsupported,omitempty"`
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
	var s *bench.Session
	fail := func(err error) int {
		e := &abError{Msg: err.Error(), Code: exit.Code(err)}
		if s != nil {
			e.Size = s.At()
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
	env := a.benchEnv()
	env.ArmVariable = key
	s = bench.New(env, bench.Params{Options: o, World: world, Seed: o.Seed.Resolve(), Out: io.Discard, Engine: o.Engines[0]})
	if err := s.Start(); err != nil {
		return fail(err)
	}
	defer s.Close()
	if err := s.Alloc(); err != nil { // before ready: arm B's memory plan sees arm A's buffers
		return fail(err)
	}
	ready, err := s.Ready()
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
		reply, err := answer(s, c)
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

// answer answers one command of the launching process.
func answer(s *bench.Session, c abCommand) (abReply, error) {
	if c.Do == "memory" {
		m, err := s.Memory()
		return abReply{Memory: m}, err
	}
	h, err := s.Half(c.Do, plan.Point{DType: c.DType, Op: c.Op, Root: c.Root, Size: c.Size}, c.InPlace)
	return abReply{Half: &h}, err
}
