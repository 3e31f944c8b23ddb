package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/rcclx-tests/rcclx-tests/bootstrap"
	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/bench"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/harness/report"
	"github.com/rcclx-tests/rcclx-tests/results"
)

// abRun compares two values of one environment variable (--ab KEY=v1,v2). Each process of the run (this one,
// or each one a launcher started) starts one worker process per arm (see abWorkerEnv); the workers of an arm
// form a world of their own and open the engine with the arm's value in their environment from the start.
// This process drives them: per size, the arms' timed halves alternate ABAB... for --ab-rounds rounds so
// both arms see the same machine state (the idle arm blocks on its pipe), then each arm is validated.
type abRun struct {
	a      *app
	o      *plan.Options
	out    io.Writer
	world  collectives.World
	lost   <-chan struct{} // closed when another process of the run is gone (nil: never)
	seed   uint64
	arms   [2]*abArm
	rows   [2][]report.Row
	oob    [2]int
	bwSum  [2]float64
	bwN    [2]int
	at     int64 // size column of the point being run, for error messages
	report results.ABReport

	stopped bool
}

// abArm is one arm's worker process, as this process sees it.
type abArm struct {
	name, label string // "A", "KEY=v1"
	cmd         *exec.Cmd
	commands    *os.File // the write end of the worker's command pipe
	enc         *json.Encoder
	replies     chan abReply
	exited      chan struct{} // the process has exited (cmd.ProcessState is set)
	gone        chan struct{} // the reply pipe has ended, and the process has exited or had a second to do so
	ready       *bench.Ready
}

// armError is what ended an arm's worker, or the worker's death.
type armError struct {
	arm  *abArm
	rank int
	err  error
	code int
}

func (e *armError) Error() string {
	return fmt.Sprintf("arm %s (%s) rank %d: %v", e.arm.name, e.arm.label, e.rank, e.err)
}
func (e *armError) Unwrap() error { return e.err }
func (e *armError) ExitCode() int { return e.code }

func (a *app) runAB(out io.Writer, o *plan.Options, world collectives.World, seed uint64, j *report.JSON) int {
	r := &abRun{a: a, o: o, out: out, world: world, seed: seed, report: results.ABReport{Rows: []results.ABRow{}}}
	if l, ok := world.(interface{ Failed() <-chan struct{} }); ok {
		r.lost = l.Failed()
	}
	for i, v := range o.ABValues {
		r.arms[i] = &abArm{name: string(rune('A' + i)), label: o.ABKey + "=" + v}
		r.report.Arms[i] = r.arms[i].label
	}
	recordABVariable(o.ABVar, &r.report)
	var memory string
	err := r.start()
	if err == nil {
		report.WriteHeader(out, o, r.header())
		if n := abVariableNote(o.ABVar, o.ABKey, a.coll.Name); n != "" {
			fmt.Fprintln(out, n)
		}
		err = r.sweep()
	}
	abandoned := errors.Is(err, exit.ErrInterrupted) // the workers are ended below, without waiting for them
	if abandoned {
		r.stopped, err = true, nil
	}
	if err == nil && !abandoned && o.Memory == 1 {
		memory, err = r.memory()
	}
	if err == nil && !abandoned { // no process leaves while another still waits on its workers (that would look like a failure)
		err = world.Barrier()
	}
	if ab, ok := world.(interface{ Abort(error) }); ok && err != nil {
		ab.Abort(err) // the other launching processes report this cause, not only that this process left
	}
	r.stop(err != nil || abandoned)
	r.record(j, err)
	if err != nil {
		return r.abort(err)
	}
	// The arms' bandwidths are not one run's: NCCL_TESTS_MIN_BW is not checked (minBW -1), as docs/REFERENCE.md says.
	t := report.Trailer{Binary: a.programName(), OOB: r.oob[0] + r.oob[1], MinBW: -1, Memory: memory}
	if n := r.bwN[0] + r.bwN[1]; n > 0 {
		t.AvgBusBW = (r.bwSum[0] + r.bwSum[1]) / float64(n)
	}
	return bench.Finish(out, t, r.stopped)
}

// start starts arm A's workers, then arm B's (one after the other, so that B's memory limit sees A's buffers),
// and waits until each is ready.
func (r *abRun) start() error {
	worlds, err := bootstrap.SubWorlds(r.world, len(r.arms))
	if err != nil {
		return err
	}
	for i, arm := range r.arms {
		if err := r.spawn(arm, worlds[i]); err != nil {
			return err
		}
		m, err := r.await(i)
		if err != nil {
			return err
		}
		if m.Ready == nil {
			return &armError{arm: arm, rank: r.world.Rank(), err: errors.New("worker did not report ready"), code: exit.Runtime}
		}
		arm.ready = m.Ready
		if n := m.Ready.AutoNote; i == 0 && n != "" && r.world.Rank() == 0 {
			fmt.Fprintf(r.a.stderr, "%s: --engine auto: %s\n", r.a.binary(), n)
		}
	}
	r.report.Pids = [2][]int{r.arms[0].ready.Pids, r.arms[1].ready.Pids}
	return nil
}

// spawn starts arm's worker: this binary with the command line less the A/B flags, the run's seed, the arm's
// value and world in its environment, and the two pipes.
func (r *abRun) spawn(arm *abArm, world []string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("A/B: cannot find this program to start the arms' workers: %v", err)
	}
	cmdRead, cmdWrite, err := os.Pipe()
	if err != nil {
		return err
	}
	replyRead, replyWrite, err := os.Pipe()
	if err != nil {
		cmdRead.Close()
		cmdWrite.Close()
		return err
	}
	seed := strconv.FormatUint(r.seed, 10)
	cmd := exec.Command(exe, append([]string{"--seed", seed}, withoutAB(r.a.argv[1:])...)...) // before any "--"
	env := append(append(world, r.a.workerEnv...), arm.label, abWorkerEnv+"="+r.o.ABKey, plan.SeedEnv+"="+seed)
	cmd.Env = bootstrap.Isolate(r.a.environ(), env...)
	cmd.ExtraFiles = []*os.File{abCommandFD - 3: cmdRead, abReplyFD - 3: replyWrite}
	// The workers print nothing themselves; what their libraries print (NCCL_DEBUG) goes where a plain run's would.
	cmd.Stdout, cmd.Stderr = r.a.stdout, r.a.stderr
	endWithParent(cmd)
	arm.cmd, arm.commands, arm.enc = cmd, cmdWrite, json.NewEncoder(cmdWrite)
	arm.replies, arm.exited, arm.gone = make(chan abReply, 4), make(chan struct{}), make(chan struct{})
	started := make(chan error)
	go func() {
		// The kernel ends the worker when the thread that started it ends (endWithParent): keep this thread,
		// locked to this goroutine, until the worker has exited.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			_ = cmd.Wait()
		}
		close(arm.exited)
	}()
	err = <-started
	cmdRead.Close()
	replyWrite.Close()
	if err != nil {
		cmdWrite.Close()
		replyRead.Close()
		arm.cmd = nil // nothing to end: stop passes over the arm
		return fmt.Errorf("A/B: starting arm %s's worker: %v", arm.name, err)
	}
	go func() {
		dec := json.NewDecoder(replyRead)
		for {
			var m abReply
			if dec.Decode(&m) != nil {
				break
			}
			arm.replies <- m
		}
		replyRead.Close()
		select {
		case <-arm.exited:
		case <-time.After(time.Second):
		}
		close(arm.gone)
	}()
	return nil
}

// ask sends arm i a command and waits for the reply.
func (r *abRun) ask(i int, c abCommand) (abReply, error) {
	if err := r.world.Barrier(); err != nil { // no arm starts before the other arm has finished everywhere
		return abReply{}, err
	}
	if err := r.arms[i].enc.Encode(c); err != nil {
		<-r.arms[i].gone
	}
	return r.await(i)
}

// armUnsupported is a worker's answer that its engine does not run the request; its text already says so.
type armUnsupported string

func (e armUnsupported) Error() string      { return string(e) }
func (armUnsupported) Is(target error) bool { return target == collectives.ErrUnsupported }

// half asks arm i to time or validate a half.
func (r *abRun) half(i int, c abCommand) (*bench.ArmHalf, error) {
	m, err := r.ask(i, c)
	if err == nil && m.Unsupported != "" {
		return nil, armUnsupported(fmt.Sprintf("arm %s: %s", r.arms[i].name, m.Unsupported))
	}
	if err == nil && m.Half == nil {
		err = &armError{arm: r.arms[i], rank: r.world.Rank(), err: errors.New("worker sent no result"), code: exit.Runtime}
	}
	return m.Half, err
}

// await returns arm i's next reply, or the error that ended either arm's worker or another process of the
// run (whose workers may never answer this process's workers).
func (r *abRun) await(i int) (abReply, error) {
	arm := r.arms[i]
	var otherGone <-chan struct{}
	if other := r.arms[1-i]; other.cmd != nil {
		otherGone = other.gone
	}
	select {
	case m := <-arm.replies:
		return m, r.replyError(arm, m)
	case <-arm.gone:
	case <-otherGone:
		arm = r.arms[1-i]
	case <-r.a.stopNow: // a signal, and the workers did not answer within the grace period
		return abReply{}, exit.ErrInterrupted
	case <-r.lost:
		// The process that failed says why where it could (its arm's worker, a timeout): the World carries that.
		if w, ok := r.world.(interface{ Err() error }); ok && w.Err() != nil {
			return abReply{}, w.Err()
		}
		return abReply{}, fmt.Errorf("A/B: rank %d lost another process of the run (it died or left) while arm %s "+
			"(%s) ran", r.world.Rank(), arm.name, arm.label)
	}
	select {
	case m := <-arm.replies: // the error a worker sent before it exited
		return m, r.replyError(arm, m)
	default:
	}
	return abReply{}, r.died(arm)
}

func (r *abRun) replyError(arm *abArm, m abReply) error {
	if m.Err == nil {
		return nil
	}
	if te := m.Err.Timeout; te != nil {
		r.at = m.Err.Size
		te.Phase += fmt.Sprintf(" (arm %s, %s)", arm.name, arm.label)
		return te
	}
	return &armError{arm: arm, rank: r.world.Rank(), err: errors.New(m.Err.Msg), code: m.Err.Code}
}

// died is the error of a worker that ended without saying why.
func (r *abRun) died(arm *abArm) error {
	how := "ended"
	select {
	case <-arm.exited:
		how = arm.cmd.ProcessState.String()
	default:
	}
	return &armError{arm: arm, rank: r.world.Rank(), code: exit.Runtime,
		err: fmt.Errorf("worker process %d died (%s)", arm.cmd.Process.Pid, how)}
}

// memory is the -M line of both arms (empty where the engine cannot report device memory).
func (r *abRun) memory() (string, error) {
	var lines [2]string
	for i := range r.arms {
		m, err := r.ask(i, abCommand{Do: "memory"})
		if err != nil || m.Memory == "" {
			return "", err
		}
		lines[i] = fmt.Sprintf("%s (arm %s)", m.Memory, r.arms[i].name)
	}
	return lines[0] + "; " + lines[1], nil
}

// stop ends the workers: closing their command pipes ends them after they have freed their buffers; after a
// failure they are killed, so that the run ends at once.
func (r *abRun) stop(failed bool) {
	for _, arm := range r.arms {
		if arm.cmd == nil {
			continue
		}
		arm.commands.Close()
		if failed {
			_ = arm.cmd.Process.Kill()
		}
	}
	for _, arm := range r.arms {
		if arm.cmd == nil {
			continue
		}
		select {
		case <-arm.exited:
		case <-time.After(30 * time.Second):
			_ = arm.cmd.Process.Kill()
			<-arm.exited
		}
	}
}

// abort reports the error that ended the run and returns its exit code.
func (r *abRun) abort(err error) int { return r.a.failAt(err, r.at) }

// header is arm A's header, with arm B's algorithms and the comparison noted; there is no nccl-tests table.
func (r *abRun) header() report.Header {
	a, b := r.arms[0].ready, r.arms[1].ready
	h := report.Header{Binary: r.a.programName(), Library: a.Library, Engine: a.Fields, Graph: a.Graph, Notes: append([]string(nil), a.Notes...),
		Devices: a.Devices, Reduced: a.Reduced, NoTable: true}
	if b.Reduced > 0 && (a.Reduced == 0 || b.Reduced < a.Reduced) {
		h.Reduced = b.Reduced
	}
	h.Notes = append(h.Notes, fmt.Sprintf("A/B: A is %s, B is %s, %d interleaved rounds per size; each arm runs in "+
		"worker processes of its own (A: pid %s, B: pid %s)", r.arms[0].label, r.arms[1].label, r.o.ABRounds,
		collectives.JoinRanks(a.Pids), collectives.JoinRanks(b.Pids)))
	for _, n := range b.Notes {
		if strings.HasPrefix(n, "Algorithm") {
			h.Notes = append(h.Notes, "B "+n)
		}
	}
	for _, f := range r.o.ABIgnored {
		h.Notes = append(h.Notes, f+" ignored: --ab runs --ab-rounds interleaved rounds per size instead")
	}
	return h
}

// dropABIgnored sets aside the flags an A/B run does not apply and returns them as given: its rounds replace
// -N's cycles, each round times one -n loop rather than each iteration (-I, -K), and one half is timed, so
// there is no wait between halves (-q). The launcher calls it for its header and JSON, each worker so that
// it runs as if the flags had not been given.
func dropABIgnored(o *plan.Options) []string {
	var dropped []string
	if o.Cycles != 1 {
		dropped, o.Cycles = append(dropped, fmt.Sprintf("-N %d", o.Cycles)), 1
	}
	if o.PerIter == 1 {
		dropped, o.PerIter = append(dropped, "-I 1"), 0
	}
	if o.Changed["per_iter_skip"] {
		dropped, o.IterSkip = append(dropped, fmt.Sprintf("-K %d", o.IterSkip)), 0
		delete(o.Changed, "per_iter_skip") // else the workers' header would note it as ignored for another reason
	}
	if o.RCCL.DelayUs > 0 {
		dropped, o.RCCL.DelayUs = append(dropped, fmt.Sprintf("-q %d", o.RCCL.DelayUs)), 0
	}
	return dropped
}

func (r *abRun) sweep() error {
	a, b := r.arms[0].ready, r.arms[1].ready
	if why := r.cannotRun(); why != "" { // as a plain run: one line for the binary
		fmt.Fprintf(r.out, "# %s skipped: %s\n", r.a.coll.Name, why)
		return nil
	}
	sizes := plan.Sizes(max(a.MinBytes, b.MinBytes), min(a.MaxBytes, b.MaxBytes), r.o.StepBytes, r.o.StepFactor)
	for _, pair := range plan.Pairs(r.a.coll, r.o) {
		dt, op := pair.DType, pair.Op
		for _, root := range plan.Roots(r.a.coll, r.o, len(a.Devices)) {
			first := len(r.report.Rows)
			var err error
			for _, size := range sizes {
				if err = r.point(plan.Point{DType: dt, Op: op, Root: root, Size: size}); err != nil || r.stopped {
					break
				}
			}
			if errors.Is(err, collectives.ErrUnsupported) { // as a plain run: a "#" line, then the next type or op
				fmt.Fprintf(r.out, "# %s %s skipped: %v\n", dt, r.a.coll.RedOpName(op), err)
				break
			}
			// One table per type, op and root, every size a row: what the sizes completed, even when
			// interrupted.
			if len(r.report.Rows) > first {
				timeName := "time"
				if r.o.CPUTime == 1 {
					timeName = "cputime"
				}
				if rerr := results.RenderAB(r.out, r.arms[0].label, r.arms[1].label, timeName, r.report.Rows[first:]); rerr != nil && err == nil {
					err = rerr
				}
			}
			if err != nil || r.stopped {
				return err
			}
		}
	}
	return nil
}

// cannotRun says why an arm's engine cannot run the collective at all: once where both arms say the same.
func (r *abRun) cannotRun() string {
	a, b := r.arms[0].ready.CannotRun, r.arms[1].ready.CannotRun
	if a == b {
		return a
	}
	var why []string
	for i, w := range []string{a, b} {
		if w != "" {
			why = append(why, fmt.Sprintf("arm %s: %s", r.arms[i].name, w))
		}
	}
	return strings.Join(why, "; ")
}

// point runs the rounds of one size, validates both arms and prints a "#" line with both arms' #wrong.
func (r *abRun) point(p plan.Point) error {
	inPlace := !r.o.RunOutOfPlace()
	half := 0
	if inPlace {
		half = 1
	}
	c := abCommand{Do: "time", DType: p.DType, Op: p.Op, Root: p.Root, Size: p.Size, InPlace: inPlace}
	var hs [2]report.Half
	var us [2][]float64
	var last [2]*bench.ArmHalf
	for range r.o.ABRounds {
		for i := range r.arms {
			h, err := r.half(i, c)
			if err != nil {
				return err
			}
			r.at, last[i] = h.Bytes, h
			hs[i].Algorithm = h.Algorithm
			hs[i].Rounds = append(hs[i].Rounds, h.Sec)
			us[i] = append(us[i], h.Sec*1e6)
		}
	}
	ab := results.AnalyzeAB([]int64{r.at}, [][]float64{us[0]}, [][]float64{us[1]})[0]
	ab.Type, ab.Redop, ab.Root = p.DType.String(), r.a.coll.RedOpName(p.Op), p.Root
	if r.arms[0].ready.KnowsAlgorithm && r.arms[1].ready.KnowsAlgorithm {
		ab.AlgorithmA, ab.AlgorithmB = hs[0].Algorithm, hs[1].Algorithm
	}
	c.Do = "check"
	for i, us := range [2]float64{ab.TimeA, ab.TimeB} {
		h := &hs[i]
		// The arm's time is the statistic of the table (the geometric mean of its paired rounds); bandwidths
		// scale with its inverse.
		h.Ran, h.Sec = true, us*1e-6
		if h.Sec > 0 {
			h.AlgBW, h.BusBW = last[i].AlgBW*last[i].Sec/h.Sec, last[i].BusBW*last[i].Sec/h.Sec
		}
		if r.o.Check > 0 {
			v, err := r.half(i, c)
			if err != nil {
				return err
			}
			h.Checked, h.Wrong, h.Errs = v.Checked, v.Wrong, v.Errs
			if v.Wrong > 0 {
				r.oob[i]++
			}
		}
		r.bwSum[i] += h.BusBW
		r.bwN[i]++
		row := report.Row{Size: r.at, Count: last[i].Count, DType: p.DType.String(), Redop: r.a.coll.RedOpName(p.Op),
			Root: p.Root, When: r.a.now(), Engine: r.arms[i].ready.Engine, Label: r.arms[i].label}
		row.Halves[half] = *h
		r.rows[i] = append(r.rows[i], row)
	}
	r.report.Rows = append(r.report.Rows, ab)
	at := fmt.Sprintf("size %d", r.at)
	if r.a.coll.Rooted {
		at = fmt.Sprintf("root %d, %s", p.Root, at)
	}
	fmt.Fprintf(r.out, "# %s %s, %s: #wrong %s %s, %s %s\n", p.DType, r.a.coll.RedOpName(p.Op), at,
		r.arms[0].label, hs[0].WrongText(), r.arms[1].label, hs[1].WrongText())
	r.stopped = r.a.interrupted()
	return nil
}

// record adds both arms, what they completed, and the comparison to the JSON.
func (r *abRun) record(j *report.JSON, err error) {
	for i, arm := range r.arms {
		e := report.EngineRun{Rows: r.rows[i], OOB: r.oob[i], BWSum: r.bwSum[i], BWN: r.bwN[i], Stopped: r.stopped}
		if m := arm.ready; m != nil {
			e.Opened, e.Engine, e.Library, e.Version, e.Graph, e.Devices = true, m.Engine, m.Library, m.Version,
				m.Graph, m.Devices
		}
		j.Add(e)
	}
	if err != nil {
		j.Fail(err.Error())
	}
	j.SetAB(&r.report)
}

// withoutAB is a command line less its --ab, --ab-rounds and --ab-strict flags.
func withoutAB(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--": // the rest are arguments, not flags
			return append(out, args[i:]...)
		case a == "--ab" || a == "--ab-rounds":
			i++
		case a == "--ab-strict", strings.HasPrefix(a, "--ab="), strings.HasPrefix(a, "--ab-rounds="),
			strings.HasPrefix(a, "--ab-strict="):
		default:
			out = append(out, a)
		}
	}
	return out
}
