package harness

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
func (s *session) ops() []collectives.Op { return sweepOps(s.a.coll, s.o) }

func sweepOps(c *collectives.Collective, o *plan.Options) []collectives.Op {
	if !c.SweepsOps() {
		return []collectives.Op{collectives.Sum}
	}
	return o.Ops
}

// typeOp is one type and operation of the sweep.
type typeOp struct {
	dt collectives.DType
	op collectives.Op
}

// rcclSkips reports whether rccl-tests leaves dt with op out of its sweep: its reducing collectives run FP8
// with sum, max and min only (prod, avg and mulsum are skipped, under -o all and -d all too). nccl-tests runs
// them all, so this suite skips those rows in the rccl-tests dialect, or when rccl-tests' result file is asked
// for (-Z, -X, --csv), on every engine, and its header names them (skipNote).
func rcclSkips(c *collectives.Collective, o *plan.Options, dt collectives.DType, op collectives.Op) bool {
	fp8 := dt == collectives.F8E4M3 || dt == collectives.F8E5M2
	return (o.RCCLDialect || o.RCCL.Format != "") && c.Reduces && fp8 &&
		(op == collectives.Prod || op == collectives.Avg || op == collectives.MulSum)
}

// sweepPairs are the types and operations to run, in nccl-tests' nesting (type, then operation), less those
// rccl-tests skips when its output is asked for.
func sweepPairs(c *collectives.Collective, o *plan.Options) []typeOp {
	var out []typeOp
	for _, dt := range o.DTypes {
		for _, op := range sweepOps(c, o) {
			if !rcclSkips(c, o, dt, op) {
				out = append(out, typeOp{dt, op})
			}
		}
	}
	return out
}

// skipNote is the header line naming the types and operations rccl-tests skips ("" when none is asked for).
func skipNote(c *collectives.Collective, o *plan.Options) string {
	var names []string
	for _, dt := range o.DTypes {
		for _, op := range sweepOps(c, o) {
			if rcclSkips(c, o, dt, op) {
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
func (s *session) roots() []int { return sweepRoots(s.a.coll, s.o, s.nranks) }

func sweepRoots(c *collectives.Collective, o *plan.Options, nranks int) []int {
	switch {
	case !c.Rooted:
		return []int{-1}
	case o.Root >= 0:
		return []int{o.Root}
	}
	out := make([]int, nranks)
	for r := range out {
		out[r] = r
	}
	return out
}

// sizes is the sweep between -b and -e (as the memory limit left them).
func (s *session) sizes() []int64 {
	return sweepSizes(s.minBytes, s.maxBytes, s.o.StepBytes, s.o.StepFactor)
}

// sweepSizes lists lo, then each size multiplied by factor when it is above 1 (else increased by step), up to
// hi. It never overflows, and a multiplicative sweep from 0 stops at 0.
func sweepSizes(lo, hi, step, factor int64) []int64 {
	var out []int64
	for s := lo; s <= hi; {
		out = append(out, s)
		if factor > 1 {
			if s == 0 || s > hi/factor {
				break
			}
			s *= factor
		} else {
			if step < 1 || s > hi-step {
				break
			}
			s += step
		}
	}
	return out
}

// sweep runs every row, in nccl-tests' nesting: type, operation, root, cycle (-N), size.
func (s *session) sweep() error {
	if cc, ok := s.comm.(collectives.CollectiveChecker); ok {
		if err := cc.CanRun(s.a.coll); err != nil {
			if !errors.Is(err, collectives.ErrUnsupported) {
				return err
			}
			if s.o.RCCLDialect && s.a.coll.HasBias() {
				fmt.Fprintln(s.a.stderr, rcclBiasMessage)
				return &saidError{msg: err.Error(), code: exit.Library}
			}
			fmt.Fprintf(s.out, "# %s skipped: %v\n", s.a.coll.Name, err)
			return s.snapshotMemory()
		}
	}
	s.prog = s.newProgress()
	defer s.prog.Clear()
	for _, p := range sweepPairs(s.a.coll, s.o) {
		for _, root := range s.roots() {
			skipped, err := s.passes(p.dt, p.op, root)
			if err != nil || s.stopped {
				return err
			}
			if skipped {
				fmt.Fprintf(s.out, "# %s %s skipped: not supported by engine %s\n", report.TypeName(s.o, p.dt), report.RedopName(s.o, s.a.coll, p.op),
					s.eng.Name())
				break
			}
		}
	}
	return s.snapshotMemory()
}

// passes warms up, then runs the -N passes over the sizes of one type, operation and root; skipped reports
// that the engine does not support them.
func (s *session) passes(dt collectives.DType, op collectives.Op, root int) (skipped bool, err error) {
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
func (s *session) warmUp(dt collectives.DType, op collectives.Op, root int) (skipped bool, err error) {
	if s.o.Warmup == 0 {
		return false, nil
	}
	sizes := s.sizes()
	for _, size := range []int64{sizes[len(sizes)-1], sizes[0]} {
		p := point{dt: dt, op: op, root: root, size: size}
		s.setAt(s.a.coll.Bytes(s.threads[0].counts(p, 0), dt))
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
func (s *session) cycle(dt collectives.DType, op collectives.Op, root, n int) (skipped bool, err error) {
	for _, size := range s.sizes() {
		p := point{dt: dt, op: op, root: root, size: size}
		s.prog.Row(dt, s.a.coll.RedOpName(op), size)
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
				for _, line := range s.a.coll.Summary(s.threads[0].counts(p, 0), dt, s.nranks, h.BWSec) {
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
func (s *session) addRow(r report.Row) {
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
func (s *session) runPoint(p point) (report.Row, error) {
	th := s.threads[0]
	k := th.counts(p, 0)
	r := report.Row{Size: s.a.coll.Bytes(k, p.dt), Count: k.Param, DType: report.TypeName(s.o, p.dt),
		Redop: report.RedopName(s.o, s.a.coll, p.op), Root: p.root, Engine: s.eng.Name()}
	s.setAt(r.Size)
	var tr *truth
	if s.o.Check > 0 {
		var err error // seconds at 1 GiB: a lost run does not wait for it
		tr, err = world.OrLost(s.a.lost, s.a.signalled, func() *truth {
			return newTruth(s.a.coll, p, s.nranks, s.localRanks(), s.seed)
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
		if s.a.interrupted() {
			s.stopped = true
			break
		}
		if !inPlace {
			s.delayHalves()
		}
	}
	r.When = s.a.now()
	return r, nil
}

// runHalf writes the inputs (when validating: nccl-tests times real data too), times one half on every thread,
// then validates it -c times (stopping at the first failure).
func (s *session) runHalf(p point, k collectives.Counts, inPlace bool, tr *truth) (report.Half, error) {
	if tr != nil {
		err := s.team.each(func(t int) error {
			_, err := s.threads[t].writeInputs(tr, inPlace, nil, s.a.signalled)
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
func (s *session) timeHalf(p point, k collectives.Counts, inPlace bool) (report.Half, error) {
	ts := make([]timing, len(s.threads))
	algos := make([]string, len(s.threads))
	var gate *iterGate
	if s.world.Size() == 1 && s.a.interrupted != nil {
		gate = newIterGate(s.a.interrupted)
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
	h := report.Half{Ran: true, Sec: sec, BWSec: sec, AlgBW: s.a.coll.AlgBW(k, p.dt, sec),
		BusBW: s.a.coll.BusBW(k, p.dt, sec, s.nranks), Iters: sum.Iters, Algorithm: algos[0]}
	if s.o.CPUTime == 1 {
		h.Sec = sum.CPU.pick(s.o.Average)
	}
	return h, nil
}

// validate runs the -c validation runs of a half; every process sees the same totals and stops together.
func (s *session) validate(tr *truth, inPlace bool, h *report.Half) error {
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
func (s *session) newProgress() *report.Progress {
	if !(s.o.Progress || s.a.stderrTTY) || s.world.Rank() != 0 {
		return nil
	}
	return report.NewProgress(s.a.stderr, s.a.coll.Name,
		len(sweepPairs(s.a.coll, s.o))*len(s.roots())*s.o.Cycles*len(s.sizes()))
}
