package bench

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/harness/report"
	"github.com/rcclx-tests/rcclx-tests/harness/world"
)

// ops are the reduction operations to run: -o for reducing collectives (and sendrecv, as nccl-tests), one
// pass otherwise.
func (s *Session) ops() []collectives.Op { return plan.Ops(s.Coll, s.o) }

// skipNote is the header line naming the types and operations rccl-tests skips ("" when none is asked for).
func skipNote(c *collectives.Collective, o *plan.Options) string {
	var names []string
	for _, dt := range o.DTypes {
		for _, op := range plan.Ops(c, o) {
			if plan.RCCLSkips(c, o, dt, op) {
				names = append(names, report.TypeName(o, dt)+" "+op.String())
			}
		}
	}
	if len(names) == 0 {
		return ""
	}
	return strings.Join(names, ", ") + " skipped: rccl-tests runs FP8 with sum, max and min only"
}

// roots are the roots to run: -r for rooted collectives (-1: every rank in turn), none (-1) otherwise.
func (s *Session) roots() []int { return plan.Roots(s.Coll, s.o, s.nranks) }

// sizes is the sweep between -b and -e (as the memory limit left them).
func (s *Session) sizes() []int64 {
	return plan.Sizes(s.minBytes, s.maxBytes, s.o.StepBytes, s.o.StepFactor)
}

// sweep runs every row, in nccl-tests' nesting: type, operation, root, cycle (-N), size.
func (s *Session) sweep() error {
	if cc, ok := s.comm.(collectives.CollectiveChecker); ok {
		if err := cc.CanRun(s.Coll); err != nil {
			if !errors.Is(err, collectives.ErrUnsupported) {
				return err
			}
			if s.o.RCCLDialect && s.Coll.HasBias() {
				fmt.Fprintln(s.Stderr, RCCLBiasMessage)
				return &SaidError{msg: err.Error(), code: exit.Library}
			}
			fmt.Fprintf(s.out, "# %s skipped: %v\n", s.Coll.Name, err)
			return s.snapshotMemory()
		}
	}
	s.prog = s.newProgress()
	defer s.prog.Clear()
	for _, p := range plan.Pairs(s.Coll, s.o) {
		for _, root := range s.roots() {
			skipped, err := s.passes(p.DType, p.Op, root)
			if err != nil || s.stopped {
				return err
			}
			if skipped {
				fmt.Fprintf(s.out, "# %s %s skipped: not supported by engine %s\n", report.TypeName(s.o, p.DType), report.RedopName(s.o, s.Coll, p.Op),
					s.eng.Name())
				break
			}
		}
	}
	return s.snapshotMemory()
}

// passes warms up, then runs the -N passes over the sizes of one type, operation and root; skipped reports
// that the engine does not support them.
func (s *Session) passes(dt collectives.DType, op collectives.Op, root int) (skipped bool, err error) {
	if skipped, err := s.warmUp(dt, op, root); skipped || err != nil {
		return skipped, err
	}
	for cycle := 0; s.o.Cycles == 0 || cycle < s.o.Cycles; cycle++ {
		if s.o.Cycles > 1 { // rccl-tests' line before each pass (not with -N 0, which runs until stopped)
			fmt.Fprintf(s.out, "# Testing %d cycle.\n", cycle+1)
		}
		if skipped, err := s.cycle(dt, op, root, cycle); skipped || err != nil || s.stopped {
			return skipped, err
		}
	}
	return false, nil
}

// warmUp runs -w operations at the largest size, then -w at the smallest, before the passes over the sizes
// of a type and operation, as rccl-tests does (nccl-tests 2.19 warms every power-of-two size; each half's own
// -w warm-up operations make that difference moot): libraries connect channels and protocols on first use,
// which must not fall into the first timed loops. skipped reports that the engine does not support the type and
// operation.
func (s *Session) warmUp(dt collectives.DType, op collectives.Op, root int) (skipped bool, err error) {
	if s.o.Warmup == 0 {
		return false, nil
	}
	sizes := s.sizes()
	for _, size := range []int64{sizes[len(sizes)-1], sizes[0]} {
		p := plan.Point{DType: dt, Op: op, Root: root, Size: size}
		s.setAt(s.Coll.Bytes(s.threads[0].counts(p, 0), dt))
		err := s.team.each(func(t int) error { return s.threads[t].warmUp(p) })
		if errors.Is(err, collectives.ErrUnsupported) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
	}
	return false, nil
}

// cycle runs pass n over the sizes; skipped reports that the engine does not support this type and operation.
func (s *Session) cycle(dt collectives.DType, op collectives.Op, root, n int) (skipped bool, err error) {
	for _, size := range s.sizes() {
		p := plan.Point{DType: dt, Op: op, Root: root, Size: size}
		s.prog.Row(dt, s.Coll.RedOpName(op), size)
		r, err := s.runPoint(p)
		if errors.Is(err, collectives.ErrUnsupported) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		s.prog.Clear()
		r.Cycle = n
		fmt.Fprintln(s.out, report.FormatRow(r, s.o))
		for _, h := range r.Halves {
			if h.Ran {
				for _, line := range s.Coll.Summary(s.threads[0].counts(p, 0), dt, s.nranks, h.BWSec) {
					fmt.Fprintln(s.out, line)
				}
			}
		}
		s.addRow(r)
		if s.stopped {
			return false, nil
		}
	}
	return false, nil
}

// addRow keeps a row for the JSON and its halves for the average bus bandwidth, as the table shows it: a half
// counts in all three or in none.
func (s *Session) addRow(r report.Row) {
	s.rows = append(s.rows, r)
	for _, h := range r.Halves {
		if h.Ran {
			s.bwSum += h.BusBW
			s.bwN++
		}
	}
}

// runPoint measures and validates the halves -O selects of one row. A signal that stops a half (its inputs,
// its measurement or its check) leaves the row with the halves before it, and the run stopped.
func (s *Session) runPoint(p plan.Point) (report.Row, error) {
	th := s.threads[0]
	k := th.counts(p, 0)
	r := report.Row{Size: s.Coll.Bytes(k, p.DType), Count: k.Param, DType: report.TypeName(s.o, p.DType),
		Redop: report.RedopName(s.o, s.Coll, p.Op), Root: p.Root, Engine: s.eng.Name()}
	s.setAt(r.Size)
	var tr *truth
	if s.o.Check > 0 {
		var err error // seconds at 1 GiB: a lost run does not wait for it
		tr, err = world.OrLost(s.Lost, s.Signalled, func() *truth {
			return newTruth(s.Coll, p, s.nranks, s.localRanks(), s.seed)
		})
		if err != nil {
			return r, err
		}
	}
	for i, inPlace := range []bool{false, true} {
		if (inPlace && !s.o.RunInPlace()) || (!inPlace && !s.o.RunOutOfPlace()) {
			continue
		}
		h, err := s.runHalf(p, k, inPlace, tr)
		if errors.Is(err, exit.ErrInterrupted) && (r.Halves[0].Ran || r.Halves[1].Ran) {
			s.stopped = true
			break
		}
		if err != nil {
			return r, err
		}
		r.Halves[i] = h
		if s.Interrupted() {
			s.stopped = true
			break
		}
		if !inPlace {
			s.delayHalves()
		}
	}
	r.When = s.Now()
	return r, nil
}

// runHalf writes the inputs (when validating: nccl-tests times real data too), times one half on every thread,
// then validates it -c times (stopping at the first failure).
func (s *Session) runHalf(p plan.Point, k collectives.Counts, inPlace bool, tr *truth) (report.Half, error) {
	if tr != nil {
		err := s.team.each(func(t int) error {
			_, err := s.threads[t].writeInputs(tr, inPlace, nil, s.Signalled)
			return err
		})
		if err != nil {
			return report.Half{}, err
		}
	}
	h, err := s.timeHalf(p, k, inPlace)
	if err != nil {
		return h, err
	}
	if tr != nil && s.checkable(inPlace) {
		if err := s.validate(tr, inPlace, &h); err != nil {
			return report.Half{}, err
		}
	}
	return h, nil
}

// timeHalf times one half on every thread and combines the threads' and processes' times per -a.
func (s *Session) timeHalf(p plan.Point, k collectives.Counts, inPlace bool) (report.Half, error) {
	ts := make([]timing, len(s.threads))
	algos := make([]string, len(s.threads))
	var gate *iterGate
	if s.world.Size() == 1 && s.Interrupted != nil {
		gate = newIterGate(s.Interrupted)
	}
	err := s.team.each(func(t int) error {
		var err error
		ts[t], err = s.threads[t].measure(p, inPlace, s.team.bar, gate)
		algos[t] = s.threads[t].group.Algorithm(s.threads[t].call(p, inPlace, 0))
		return err
	})
	if err != nil {
		return report.Half{}, err
	}
	sum, err := overWorld(s.world, timingSummary(ts))
	if err != nil {
		return report.Half{}, err
	}
	sec := sum.Time.pick(s.o.Average)
	h := report.Half{Ran: true, Sec: sec, BWSec: sec, AlgBW: s.Coll.AlgBW(k, p.DType, sec),
		BusBW: s.Coll.BusBW(k, p.DType, sec, s.nranks), Iters: sum.Iters, Algorithm: algos[0]}
	if s.o.CPUTime == 1 {
		h.Sec = sum.CPU.pick(s.o.Average)
	}
	return h, nil
}

// validate runs the -c validation runs of a half; every process sees the same totals and stops together.
func (s *Session) validate(tr *truth, inPlace bool, h *report.Half) error {
	h.Checked = true
	for range s.o.Check {
		calls := make([]*collectives.Call, len(s.threads))
		err := s.team.each(func(t int) error {
			var err error
			calls[t], err = s.threads[t].writeInputs(tr, inPlace, s.poison, nil) // checked: stopNow bounds it
			return err
		})
		// No rank may start (and write into a peer's buffers) before every process has poisoned its own.
		if err == nil {
			err = s.world.Barrier()
		}
		if err != nil {
			return err
		}
		vs := make([]summary, len(s.threads))
		err = s.team.each(func(t int) error {
			var err error
			vs[t], err = s.threads[t].check(tr, calls[t])
			return err
		})
		if err != nil {
			return err
		}
		var local summary
		for _, v := range vs {
			local.merge(v)
		}
		total, err := overWorld(s.world, local)
		if err != nil {
			return err
		}
		h.Wrong = total.Errors.Wrong
		h.Errs.MaxRel = max(h.Errs.MaxRel, total.Errors.MaxRel)
		h.Errs.SumSqRel += total.Errors.SumSqRel
		h.Errs.N += total.Errors.N
		if total.Errors.Wrong > 0 {
			s.oob++
			break
		}
	}
	return nil
}

// newProgress returns the session's progress line, or nil when none is to be shown.
func (s *Session) newProgress() *report.Progress {
	if !(s.o.Progress || s.StderrTTY) || s.world.Rank() != 0 {
		return nil
	}
	return report.NewProgress(s.Stderr, s.Coll.Name,
		len(plan.Pairs(s.Coll, s.o))*len(s.roots())*s.o.Cycles*len(s.sizes()))
}
