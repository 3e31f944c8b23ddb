package plan

import "github.com/rcclx-tests/rcclx-tests/collectives"

// Point is one row of the sweep: a collective call shape.
type Point struct {
	DType collectives.DType
	Op    collectives.Op
	Root  int
	Size  int64 // requested bytes (-b .. -e)
}

// Ops are the reduction operations to run: -o for reducing collectives (and sendrecv, as nccl-tests), one
// pass otherwise.
func Ops(c *collectives.Collective, o *Options) []collectives.Op {
	if !c.SweepsOps() {
		return []collectives.Op{collectives.Sum}
	}
	return o.Ops
}

// TypeOp is one type and operation of the sweep.
type TypeOp struct {
	DType collectives.DType
	Op    collectives.Op
}

// RCCLSkips reports whether rccl-tests leaves dt with op out of its sweep: its reducing collectives run FP8
// with sum, max and min only (prod, avg and mulsum are skipped, under -o all and -d all too). nccl-tests runs
// them all, so this suite skips those rows in the rccl-tests dialect, or when rccl-tests' result file is asked
// for (-Z, -X, --csv), on every engine, and its header names them (the header names them).
func RCCLSkips(c *collectives.Collective, o *Options, dt collectives.DType, op collectives.Op) bool {
	fp8 := dt.FP8()
	return (o.RCCLDialect || o.RCCL.Format != "") && c.Reduces && fp8 &&
		(op == collectives.Prod || op == collectives.Avg || op == collectives.MulSum)
}

// Pairs are the types and operations to run, in nccl-tests' nesting (type, then operation), less those
// rccl-tests skips when its output is asked for.
func Pairs(c *collectives.Collective, o *Options) []TypeOp {
	var out []TypeOp
	for _, dt := range o.DTypes {
		for _, op := range Ops(c, o) {
			if !RCCLSkips(c, o, dt, op) {
				out = append(out, TypeOp{dt, op})
			}
		}
	}
	return out
}

// Roots are the roots to run: -r for rooted collectives (-1: every rank in turn), none (-1) otherwise.
func Roots(c *collectives.Collective, o *Options, nranks int) []int {
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

// Sizes lists lo, then each size multiplied by factor when it is above 1 (else increased by step), up to
// hi. It never overflows, and a multiplicative sweep from 0 stops at 0.
func Sizes(lo, hi, step, factor int64) []int64 {
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
