package harness

import (
	"fmt"
	"io"
	"maps"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/results"
)

// abRun compares two communicators of one engine that differ in one environment variable (--ab KEY=v1,v2). Each
// arm is a session of its own (threads, buffers); per size their timed halves alternate ABAB... for
// --ab-rounds rounds so both arms see the same machine state, then each arm is validated.
type abRun struct {
	a      *app
	o      *Options
	out    io.Writer
	arms   [2]*session
	labels [2]string
	report results.ABReport
}

func (a *app) runAB(out io.Writer, o *Options, world collectives.World, seed uint64, j *jsonOut) int {
	r := &abRun{a: a, o: o, out: out}
	for i, v := range o.abVals {
		arm := *o
		arm.env = maps.Clone(o.env)
		arm.env[o.abKey] = v
		r.labels[i] = o.abKey + "=" + v
		r.arms[i] = &session{a: a, o: &arm, world: world, seed: seed, out: out, engineName: o.engines[0]}
	}
	r.report.Arms = r.labels
	for i, s := range r.arms {
		if err := s.start(); err != nil {
			if i == 1 {
				r.arms[0].close()
			}
			j.fail(err.Error())
			return a.fail(err)
		}
	}
	defer r.arms[1].close()
	defer r.arms[0].close()
	writeHeader(out, o, r.header())
	err := r.sweep()
	for _, s := range r.arms {
		j.add(s)
	}
	if j.rec != nil {
		j.rec.AB = &r.report
	}
	if err != nil {
		return r.arms[0].abort(err)
	}
	t := r.arms[0].trailer()
	b := r.arms[1].trailer()
	t.oob += b.oob
	t.avgBusBW = (r.arms[0].bwSum + r.arms[1].bwSum) / float64(max(1, r.arms[0].bwN+r.arms[1].bwN))
	r.arms[0].stopped = r.arms[0].stopped || r.arms[1].stopped
	return r.arms[0].finish(t)
}

// header is arm A's header, with arm B's algorithms and the comparison noted; there is no nccl-tests table.
func (r *abRun) header() header {
	h := r.arms[0].header()
	h.notes = append(h.notes, fmt.Sprintf("A/B: A is %s, B is %s, %d interleaved rounds per size", r.labels[0],
		r.labels[1], r.o.ABRounds))
	for _, n := range r.arms[1].notes {
		if strings.HasPrefix(n, "Algorithm") {
			h.notes = append(h.notes, "B "+n)
		}
	}
	h.noTable = true
	return h
}

func (r *abRun) sweep() error {
	a := r.arms[0]
	for _, dt := range r.o.dtypes {
		for _, op := range a.ops() {
			for _, root := range a.roots() {
				first := len(r.report.Rows)
				var err error
				for _, size := range a.sizes() {
					if err = r.point(point{dt: dt, op: op, root: root, size: size}); err != nil || a.stopped {
						break
					}
				}
				// One table per type, op and root, every size a row: what the sizes completed, even when
				// interrupted.
				if len(r.report.Rows) > first {
					if rerr := results.RenderAB(r.out, r.labels[0], r.labels[1], r.report.Rows[first:]); rerr != nil && err == nil {
						err = rerr
					}
				}
				if err != nil || a.stopped {
					return err
				}
			}
		}
	}
	return nil
}

// point runs the rounds of one size, validates both arms and prints a "#" line with both arms' #wrong.
func (r *abRun) point(p point) error {
	inPlace := !r.o.runOutOfPlace()
	half := 0
	if inPlace {
		half = 1
	}
	k := r.arms[0].threads[0].counts(p, 0)
	var tr *truth
	if r.o.Check > 0 {
		tr = newTruth(r.a.coll, p, r.arms[0].nranks, r.arms[0].localRanks(), r.arms[0].seed)
	}
	var hs [2]halfResult
	var us [2][]float64
	for range r.o.ABRounds {
		for i, s := range r.arms {
			h, err := s.timeHalf(p, k, inPlace)
			if err != nil {
				return err
			}
			hs[i].algorithm = h.algorithm
			hs[i].rounds = append(hs[i].rounds, h.sec)
			us[i] = append(us[i], h.sec*1e6)
		}
	}
	for i, s := range r.arms {
		s.at = r.a.coll.Bytes(k, p.dt)
		h := &hs[i]
		h.ran, h.sec = true, stat.Mean(h.rounds, nil)
		h.algBW, h.busBW = r.a.coll.AlgBW(k, p.dt, h.sec), r.a.coll.BusBW(k, p.dt, h.sec, s.nranks)
		if tr != nil && s.checkable(inPlace) {
			if err := s.validate(tr, inPlace, h); err != nil {
				return err
			}
		}
		s.bwSum += h.busBW
		s.bwN++
		row := row{size: s.at, count: k.Param, dtype: p.dt.String(), redop: r.a.coll.RedOpName(p.op), root: p.root,
			when: r.a.now(), engine: s.eng.Name(), label: r.labels[i]}
		row.halves[half] = *h
		s.rows = append(s.rows, row)
	}
	rows := results.AnalyzeAB([]int64{r.arms[0].at}, [][]float64{us[0]}, [][]float64{us[1]})
	r.report.Rows = append(r.report.Rows, rows...)
	at := fmt.Sprintf("size %d", r.arms[0].at)
	if r.a.coll.Rooted {
		at = fmt.Sprintf("root %d, %s", p.root, at)
	}
	fmt.Fprintf(r.out, "# %s %s, %s: #wrong %s %s, %s %s\n", p.dt, r.a.coll.RedOpName(p.op), at,
		r.labels[0], hs[0].wrongText(), r.labels[1], hs[1].wrongText())
	r.arms[0].stopped = r.a.interrupted()
	return nil
}
