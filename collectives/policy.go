package collectives

import (
	"fmt"
	"slices"
	"strconv"
)

// Algorithm names, as reported per row.
const (
	Ring           = "ring"      // reduce-scatter + all-gather around the ring (all_reduce), ring all_gather/reduce_scatter
	Direct         = "direct"    // pairwise exchange (alltoall); peers read each other directly (broadcast ... alltoallv)
	HyperCubeSteps = "hypercube" // log2(n) pairwise exchanges of doubling size (hypercube)
	DDAFlat        = "dda_flat"  // one-shot: every rank reads every peer's whole buffer after a barrier
	DDATree        = "dda_tree"  // two-shot: reduce-scatter of slices, barrier, all-gather of slices
	DDA            = "dda"       // DDA all_gather / reduce_scatter / alltoall: direct peer reads after a barrier
	LowPrecision   = "lp"        // FP8 (E4M3) quantized exchange with fp32 accumulation
)

// LP modes (RCCLX_TESTS_LP_MODE).
const (
	LPModeRCCLX  = "rcclx"  // plain saturating cast to E4M3, no scale, as RCCLX does
	LPModeScaled = "scaled" // one fp32 scale per block of LPBlock elements (block max maps to E4M3's 448)
)

// MaxDDARanks is the largest rank count the DDA algorithms run at (RCCLX: exactly RCCL_DDA_NRANKS, default 8).
const MaxDDARanks = 16

// The master switches. RCCL_DDA_ENABLE is the name in RCCLX's announcement; no RCCLX code reads it, RCCLX's own
// switches are the per-collective RCCL_ENABLE_DDA_* (default 1 there). RCCL_DDA_NRANKS is RCCLX's: DDA only at
// exactly that many ranks.
const (
	EnvDDA       = "RCCL_DDA_ENABLE"
	EnvLP        = "RCCL_LOW_PRECISION_ENABLE"
	EnvDDANRanks = "RCCL_DDA_NRANKS"
)

// Policy is the algorithm choice of the RCCLX engine, read from the environment at communicator creation.
// The host and GPU engines share it, so both run the same algorithm for the same call.
type Policy struct {
	DDA        map[*Collective]bool  // DDA enabled per collective
	DDAMax     map[*Collective]int64 // largest size (report's size column) DDA takes, per collective
	DDARanks   int                   // RCCL_DDA_NRANKS: DDA only at exactly this many ranks; 0: any up to MaxDDARanks
	FlatMax    int64                 // all_reduce: DDA flat at or below, DDA tree above
	MaxBlocks  int
	SendBuf    int64 // bytes of each rank's peer-visible buffer: no DDA call may exceed it
	LP         map[*Collective]bool
	LPMinBytes int64
	LPMode     string
	LPBlock    int
}

type switchNames struct{ dda, ddaMax, lp string }

var policyEnv = map[*Collective]switchNames{
	AllReduce:     {"RCCL_ENABLE_DDA_ALL_REDUCE", "RCCL_DDA_ALL_REDUCE_TREE_MAX_BYTES", "RCCL_LOW_PRECISION_ENABLE_ALLREDUCE"},
	AllGather:     {"RCCL_ENABLE_DDA_ALL_GATHER", "RCCL_DDA_ALL_GATHER_MAX_BYTES", "RCCL_LOW_PRECISION_ENABLE_ALLGATHER"},
	ReduceScatter: {"RCCL_ENABLE_DDA_REDUCE_SCATTER", "RCCL_DDA_REDUCE_SCATTER_MAX_BYTES", "RCCL_LOW_PRECISION_ENABLE_REDUCESCATTER"},
	AllToAll:      {"RCCL_ENABLE_DDA_ALL_TO_ALL", "RCCL_DDA_ALL_TO_ALL_MAX_BYTES", "RCCL_LOW_PRECISION_ENABLE_ALLTOALL"},
}

var ddaMaxDefault = map[*Collective]int64{
	AllReduce: 29 << 20, AllGather: 16 << 20, ReduceScatter: 8 << 20, AllToAll: 2 << 20,
}

// The policy's other defaults, where a variable is unset (the switches are off, RCCL_DDA_NRANKS any).
const (
	defaultFlatMax    = 200 << 10 // RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES
	defaultMaxBlocks  = 24        // RCCL_DDA_MAX_BLOCKS
	defaultSendBuf    = 32 << 20  // RCCL_DDA_SENDBUF_BYTES
	defaultLPMinBytes = 16 << 20  // RCCLX_TESTS_LP_MIN_BYTES
	defaultLPBlock    = 128       // RCCLX_TESTS_LP_BLOCK
)

// policyColls are the collectives the RCCLX switches govern; the others run the algorithm their descriptor
// names.
var policyColls = []*Collective{AllReduce, AllGather, AllToAll, ReduceScatter}

// PolicyFromEnv reads the switches. The rule where RCCLX's per-collective switches (RCCL_ENABLE_DDA_*, default
// 1 in RCCLX) meet the master switch (RCCL_DDA_ENABLE, default 0): a per-collective switch that is set decides
// its collective, with RCCLX's meaning (1 on, 0 off); one that is unset follows the master. So a plain run is
// ring, as stock NCCL and RCCL are, RCCL_DDA_ENABLE=1 gives RCCLX's defaults, and RCCL_ENABLE_DDA_ALL_REDUCE=0,1
// compares what it compares on RCCLX's librccl. The low-precision switches follow the same rule with
// RCCL_LOW_PRECISION_ENABLE. RCCL_DDA_NRANKS, when set, restricts DDA to exactly that many ranks (RCCLX's
// meaning; RCCLX's default 8 is not ours, so that DDA runs on the 2..16 ranks at hand). A malformed value is an
// error naming the variable.
func PolicyFromEnv(getenv func(string) string) (Policy, error) {
	p := Policy{DDA: map[*Collective]bool{}, DDAMax: map[*Collective]int64{}, LP: map[*Collective]bool{}}
	var errs []error
	flag := func(name string, def bool) bool {
		v := getenv(name)
		if v == "" {
			return def
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: want 0 or 1", name, v))
		}
		return b
	}
	size := func(name string, def int64) int64 {
		v := getenv(name)
		if v == "" {
			return def
		}
		n, err := ParseSize(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", name, err))
		}
		return n
	}
	dda := flag(EnvDDA, false)
	lp := flag(EnvLP, false)
	if v := getenv(EnvDDANRanks); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("%s=%q: want a rank count of 1 or more", EnvDDANRanks, v))
		}
		p.DDARanks = n
	}
	for _, c := range policyColls { // in order: the first error wins
		n := policyEnv[c]
		p.DDA[c] = flag(n.dda, dda)
		p.DDAMax[c] = size(n.ddaMax, ddaMaxDefault[c])
		p.LP[c] = flag(n.lp, lp)
	}
	p.FlatMax = size("RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES", defaultFlatMax)
	p.MaxBlocks = int(size("RCCL_DDA_MAX_BLOCKS", defaultMaxBlocks))
	p.SendBuf = size("RCCL_DDA_SENDBUF_BYTES", defaultSendBuf)
	p.LPMinBytes = size("RCCLX_TESTS_LP_MIN_BYTES", defaultLPMinBytes)
	p.LPBlock = int(size("RCCLX_TESTS_LP_BLOCK", defaultLPBlock))
	p.LPMode = getenv("RCCLX_TESTS_LP_MODE")
	if p.LPMode == "" {
		p.LPMode = LPModeRCCLX
	}
	if p.LPMode != LPModeRCCLX && p.LPMode != LPModeScaled {
		errs = append(errs, fmt.Errorf("RCCLX_TESTS_LP_MODE=%q: want %s or %s", p.LPMode, LPModeRCCLX, LPModeScaled))
	}
	if p.MaxBlocks < 1 || p.LPBlock < 1 {
		errs = append(errs, fmt.Errorf("RCCL_DDA_MAX_BLOCKS and RCCLX_TESTS_LP_BLOCK must be at least 1"))
	}
	if len(errs) > 0 {
		return Policy{}, errs[0]
	}
	return p, nil
}

// Effect is what of a policy can change one collective's calls: two policies with the same Effect run them
// alike.
type Effect struct {
	SendBuf             int64 // the GPU engine cuts every transfer to half of it
	DDA, LP             bool
	DDAMax, FlatMax     int64
	DDARanks, MaxBlocks int
	LPMinBytes          int64
	LPMode              string
	LPBlock             int
}

// Effect is p's on c: the DDA settings where c takes DDA, the LP settings where it takes LP (the block in
// scaled mode only), and the send buffer.
func (p Policy) Effect(c *Collective) Effect {
	c = c.Base()
	e := Effect{SendBuf: p.SendBuf}
	if p.DDA[c] {
		e.DDA, e.DDAMax, e.DDARanks, e.MaxBlocks = true, p.DDAMax[c], p.DDARanks, p.MaxBlocks
		if c == AllReduce {
			e.FlatMax = p.FlatMax
		}
	}
	if p.LP[c] {
		e.LP, e.LPMinBytes, e.LPMode = true, p.LPMinBytes, p.LPMode
		if p.LPMode == LPModeScaled {
			e.LPBlock = p.LPBlock
		}
	}
	return e
}

// RunShape is what of a run decides whether DDA and LP can apply at all: its types, operations and rank
// count (none, or NRanks 0: unknown, any).
type RunShape struct {
	DTypes []DType
	Ops    []Op
	NRanks int
}

// EffectOn is p's Effect on c's calls of a run of shape s: DDA's settings only where a call of the run can
// take DDA (a type and operation it takes, a rank count it runs at), LP's where one can take LP, as Choose
// decides. RCCL_DDA_NRANKS gates DDA and tunes nothing, so it is in the result only as that gate.
func (p Policy) EffectOn(c *Collective, s RunShape) Effect {
	e := p.Effect(c)
	ddaType, lpType := len(s.DTypes) == 0, len(s.DTypes) == 0
	for _, dt := range s.DTypes {
		ddaType = ddaType || dt == Float || dt == Half || dt == BFloat16
		lpType = lpType || dt == Float || dt == BFloat16
	}
	sumOnly := !c.Reduces || len(s.Ops) == 0 || slices.Contains(s.Ops, Sum)
	ranks := s.NRanks == 0 || s.NRanks <= MaxDDARanks && (p.DDARanks == 0 || s.NRanks == p.DDARanks)
	if !e.DDA || !ddaType || !sumOnly || !ranks {
		e.DDA, e.DDAMax, e.FlatMax, e.MaxBlocks = false, 0, 0, 0
	}
	if s.NRanks != 0 {
		e.DDARanks = 0
	}
	if !e.LP || !lpType || !sumOnly {
		e.LP, e.LPMinBytes, e.LPMode, e.LPBlock = false, 0, "", 0
	}
	return e
}

// SameEffect reports whether the policy variable name set to a or to b, the rest as getenv has it, runs c's
// calls in a run of shape s alike (LP mode with low precision off, DDA at a rank count it does not run at);
// false for a variable outside the policy or a value it refuses.
func SameEffect(c *Collective, s RunShape, getenv func(string) string, name, a, b string) bool {
	if v, ok := LookupVariable(name); !ok || !v.policy {
		return false
	}
	var effects [2]Effect
	for i, val := range []string{a, b} {
		p, err := PolicyFromEnv(func(k string) string {
			if k == name {
				return val
			}
			return getenv(k)
		})
		if err != nil {
			return false
		}
		effects[i] = p.EffectOn(c, s)
	}
	return effects[0] == effects[1]
}

// Choose returns the algorithm for a call with counts k on nranks ranks. aligned reports whether every buffer
// view of the call starts on a 16-byte boundary.
func (p Policy) Choose(c *Collective, dt DType, op Op, nranks int, k Counts, aligned bool) string {
	if c.algorithm != "" { // outside the RCCLX switches
		return c.algorithm
	}
	bytes := c.Bytes(k, dt)
	sumOnly := !c.Reduces || op == Sum
	if p.LP[c] && sumOnly && (dt == Float || dt == BFloat16) && bytes >= p.LPMinBytes {
		return LowPrecision
	}
	ddaType := dt == Float || dt == Half || dt == BFloat16
	if p.DDA[c] && ddaType && sumOnly && aligned && nranks <= MaxDDARanks &&
		(p.DDARanks == 0 || nranks == p.DDARanks) && bytes <= p.SendBuf &&
		bytes <= p.DDAMax[c] {
		switch {
		case c != AllReduce:
			return DDA
		case bytes <= p.FlatMax:
			return DDAFlat
		case k.Param%int64(nranks) == 0:
			return DDATree
		}
	}
	if c == AllToAll {
		return Direct
	}
	return Ring
}

// Aligned reports whether every view of a call starts on a 16-byte boundary (DDA's 16-byte loads need it).
func (c *Call) Aligned() bool {
	for l := range c.Send {
		if c.Send[l].Off%16 != 0 || c.Recv[l].Off%16 != 0 {
			return false
		}
	}
	return true
}
