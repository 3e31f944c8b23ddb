package collectives

import (
	"strings"
	"testing"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

func TestPolicyDefaultsToRing(t *testing.T) {
	p, err := PolicyFromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	k := AllReduce.Counts(4096, 8, 0, Float)
	if got := p.Choose(AllReduce, Float, Sum, 8, k, true); got != Ring {
		t.Errorf("default all_reduce algorithm %s, want ring", got)
	}
	if got := p.Choose(AllToAll, Float, Sum, 8, AllToAll.Counts(4096, 8, 0, Float), true); got != Direct {
		t.Errorf("default alltoall algorithm %s, want direct", got)
	}
}

func TestPolicyDDAThresholds(t *testing.T) {
	p, err := PolicyFromEnv(env(map[string]string{"RCCL_DDA_ENABLE": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	choose := func(size int64, dt DType, op Op, n int, aligned bool) string {
		return p.Choose(AllReduce, dt, op, n, AllReduce.Counts(size, n, 0, dt), aligned)
	}
	cases := []struct {
		size    int64
		dt      DType
		op      Op
		n       int
		aligned bool
		want    string
	}{
		{8, Float, Sum, 8, true, DDAFlat},
		{200 << 10, Float, Sum, 8, true, DDAFlat},
		{200<<10 + 32, Float, Sum, 8, true, DDATree},
		{29 << 20, BFloat16, Sum, 8, true, DDATree},
		{29<<20 + 32, Float, Sum, 8, true, Ring},
		{200<<10 + 4, Float, Sum, 8, true, Ring}, // count not a multiple of the rank count: no tree
		{4096, Double, Sum, 8, true, Ring},
		{4096, Float, Max, 8, true, Ring},
		{4096, Float, Sum, 8, false, Ring},
		{4096, Float, Sum, 17, true, Ring},
		{4096, Half, Sum, 3, true, DDAFlat},
	}
	for _, c := range cases {
		if got := choose(c.size, c.dt, c.op, c.n, c.aligned); got != c.want {
			t.Errorf("all_reduce %d B %s %s n=%d aligned=%v: %s, want %s", c.size, c.dt, c.op, c.n, c.aligned, got, c.want)
		}
	}
	if got := p.Choose(AllGather, Float, Sum, 8, AllGather.Counts(16<<20, 8, 0, Float), true); got != DDA {
		t.Errorf("all_gather 16 MiB with DDA on: %s, want dda", got)
	}
	if got := p.Choose(AllToAll, Float, Sum, 8, AllToAll.Counts(4<<20, 8, 0, Float), true); got != Direct {
		t.Errorf("alltoall 4 MiB (over 2 MiB): %s, want direct", got)
	}
}

func TestPolicyPerCollectiveSwitches(t *testing.T) {
	p, err := PolicyFromEnv(env(map[string]string{"RCCL_DDA_ENABLE": "1", "RCCL_ENABLE_DDA_ALL_REDUCE": "0",
		"RCCL_ENABLE_DDA_ALL_TO_ALL": "1", "RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES": "1K"}))
	if err != nil {
		t.Fatal(err)
	}
	if p.DDA[AllReduce] || !p.DDA[AllGather] || !p.DDA[AllToAll] || p.FlatMax != 1024 {
		t.Errorf("switches not applied: %+v", p)
	}
	p, _ = PolicyFromEnv(env(map[string]string{"RCCL_ENABLE_DDA_REDUCE_SCATTER": "1"}))
	if !p.DDA[ReduceScatter] || p.DDA[AllReduce] {
		t.Errorf("a per-collective switch alone must enable only that collective: %+v", p.DDA)
	}
}

func TestPolicyLowPrecision(t *testing.T) {
	p, err := PolicyFromEnv(env(map[string]string{"RCCL_LOW_PRECISION_ENABLE": "1", "RCCL_DDA_ENABLE": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	at := func(c *Collective, size int64, dt DType, op Op) string {
		return p.Choose(c, dt, op, 8, c.Counts(size, 8, 0, dt), true)
	}
	if got := at(AllReduce, 16<<20, Float, Sum); got != LowPrecision {
		t.Errorf("16 MiB float sum with LP on: %s, want lp", got)
	}
	if got := at(AllReduce, 16<<20-32, Float, Sum); got != DDATree {
		t.Errorf("just under the LP threshold: %s, want dda_tree", got)
	}
	if got := at(AllReduce, 64<<20, Half, Sum); got != Ring {
		t.Errorf("half is not LP-eligible: %s", got)
	}
	if got := at(AllGather, 64<<20, BFloat16, Sum); got != LowPrecision {
		t.Errorf("all_gather bf16 64 MiB: %s, want lp", got)
	}
	if p.LPMode != LPModeRCCLX || p.LPBlock != 128 {
		t.Errorf("LP defaults %s/%d", p.LPMode, p.LPBlock)
	}
}

func TestPolicyRejectsBadValues(t *testing.T) {
	for _, kv := range []map[string]string{
		{"RCCL_DDA_ENABLE": "yes please"},
		{"RCCL_DDA_ALL_REDUCE_TREE_MAX_BYTES": "lots"},
		{"RCCLX_TESTS_LP_MODE": "fp4"},
		{"RCCL_DDA_MAX_BLOCKS": "0"},
	} {
		if _, err := PolicyFromEnv(env(kv)); err == nil {
			t.Errorf("%v should be rejected", kv)
		}
	}
}

// RCCLX's own names with RCCLX's meaning, and the rule where they meet the master switch: a per-collective switch
// that is set decides its collective (either way, whatever the master says); unset, it follows the master.
func TestPolicyRCCLXSwitchesAndMaster(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want map[*Collective]bool
	}{
		{nil, map[*Collective]bool{AllReduce: false, AllGather: false, ReduceScatter: false, AllToAll: false}},
		{map[string]string{EnvDDA: "1"}, map[*Collective]bool{AllReduce: true, AllGather: true, ReduceScatter: true, AllToAll: true}},
		{map[string]string{"RCCL_ENABLE_DDA_ALL_REDUCE": "1"},
			map[*Collective]bool{AllReduce: true, AllGather: false, ReduceScatter: false, AllToAll: false}},
		{map[string]string{EnvDDA: "0", "RCCL_ENABLE_DDA_ALL_GATHER": "1"},
			map[*Collective]bool{AllReduce: false, AllGather: true, ReduceScatter: false, AllToAll: false}},
		{map[string]string{EnvDDA: "1", "RCCL_ENABLE_DDA_REDUCE_SCATTER": "0", "RCCL_ENABLE_DDA_ALL_TO_ALL": "0"},
			map[*Collective]bool{AllReduce: true, AllGather: true, ReduceScatter: false, AllToAll: false}},
	} {
		p, err := PolicyFromEnv(env(tc.env))
		if err != nil {
			t.Fatal(err)
		}
		for c, want := range tc.want {
			k := c.Counts(64<<10, 8, 0, Float)
			got := p.Choose(c, Float, Sum, 8, k, true)
			if isDDA := got != Ring && got != Direct; isDDA != want {
				t.Errorf("%v: %s runs %s, want DDA %v", tc.env, c.Name, got, want)
			}
		}
	}
}

// RCCL_DDA_NRANKS restricts DDA to exactly that rank count, as in RCCLX; unset, DDA runs at 2..MaxDDARanks.
func TestPolicyDDANRanks(t *testing.T) {
	choose := func(e map[string]string, n int) string {
		p, err := PolicyFromEnv(env(e))
		if err != nil {
			t.Fatal(err)
		}
		return p.Choose(AllReduce, Float, Sum, n, AllReduce.Counts(4096, n, 0, Float), true)
	}
	for _, tc := range []struct {
		nranks string
		n      int
		want   string
	}{
		{"", 2, DDAFlat}, {"", 8, DDAFlat}, {"", 16, DDAFlat}, {"", 17, Ring},
		{"8", 8, DDAFlat}, {"8", 4, Ring}, {"8", 16, Ring}, {"2", 2, DDAFlat}, {"2", 8, Ring},
	} {
		e := map[string]string{EnvDDA: "1"}
		if tc.nranks != "" {
			e[EnvDDANRanks] = tc.nranks
		}
		if got := choose(e, tc.n); got != tc.want {
			t.Errorf("RCCL_DDA_NRANKS=%q at %d ranks: %s, want %s", tc.nranks, tc.n, got, tc.want)
		}
	}
	for _, bad := range []string{"0", "-8", "eight", "8.0"} {
		if _, err := PolicyFromEnv(env(map[string]string{EnvDDANRanks: bad})); err == nil || !strings.Contains(err.Error(), EnvDDANRanks) {
			t.Errorf("RCCL_DDA_NRANKS=%q: %v", bad, err)
		}
	}
}

// TestSameEffectOnRunShape: DDA and LP settings have no effect on a run none of whose calls can take them: its
// types, operations or rank count.
func TestSameEffectOnRunShape(t *testing.T) {
	floats, ints := []DType{Float}, []DType{Int32, Double}
	sum, maxOp := []Op{Sum}, []Op{Max}
	for _, c := range []struct {
		coll       *Collective
		shape      RunShape
		env        map[string]string
		name, a, b string
		same       bool
	}{
		{AllReduce, RunShape{DTypes: floats, Ops: sum, NRanks: 8}, nil, EnvDDA, "0", "1", false},
		{AllReduce, RunShape{DTypes: ints, Ops: sum, NRanks: 8}, nil, EnvDDA, "0", "1", true},
		{AllReduce, RunShape{DTypes: floats, Ops: maxOp, NRanks: 8}, nil, EnvDDA, "0", "1", true},
		{AllGather, RunShape{DTypes: ints, Ops: maxOp, NRanks: 8}, nil, EnvDDA, "0", "1", true},    // a type it cannot take
		{AllGather, RunShape{DTypes: floats, Ops: maxOp, NRanks: 8}, nil, EnvDDA, "0", "1", false}, // it reduces nothing: the op does not matter
		{AllReduce, RunShape{DTypes: floats, Ops: sum, NRanks: 4}, map[string]string{EnvDDANRanks: "8"}, EnvDDA, "0", "1", true},
		{AllReduce, RunShape{DTypes: floats, Ops: sum, NRanks: 32}, nil, EnvDDA, "0", "1", true},
		{AllReduce, RunShape{DTypes: floats, Ops: sum, NRanks: 8}, map[string]string{EnvDDA: "1"}, EnvDDANRanks, "", "8", true},
		{AllReduce, RunShape{DTypes: floats, Ops: sum, NRanks: 4}, map[string]string{EnvDDA: "1"}, EnvDDANRanks, "", "8", false},
		{AllReduce, RunShape{DTypes: floats, Ops: sum}, map[string]string{EnvDDA: "1"}, EnvDDANRanks, "", "8", false},
		{AllReduce, RunShape{DTypes: []DType{Half}, Ops: sum, NRanks: 2}, nil, EnvLP, "0", "1", true},
		{AllReduce, RunShape{DTypes: []DType{BFloat16}, Ops: sum, NRanks: 2}, nil, EnvLP, "0", "1", false},
	} {
		if got := SameEffect(c.coll, c.shape, env(c.env), c.name, c.a, c.b); got != c.same {
			t.Errorf("%s %+v with %v: SameEffect(%s, %q, %q) = %v", c.coll.Name, c.shape, c.env, c.name, c.a, c.b, got)
		}
	}
}

// TestSameEffect: a policy variable has no effect on a collective where the path it tunes is off for it, or
// another switch decides; the send buffer always has one (the GPU engine's transfers), and a variable outside
// the policy is never said to have none.
func TestSameEffect(t *testing.T) {
	lpOn := map[string]string{EnvLP: "1"}
	for _, c := range []struct {
		coll       *Collective
		env        map[string]string
		name, a, b string
		same       bool
	}{
		{AllReduce, nil, "RCCLX_TESTS_LP_MODE", "rcclx", "scaled", true},
		{AllReduce, lpOn, "RCCLX_TESTS_LP_MODE", "rcclx", "scaled", false},
		{AllReduce, lpOn, "RCCLX_TESTS_LP_BLOCK", "64", "128", true}, // rcclx mode has no blocks
		{AllReduce, map[string]string{EnvLP: "1", "RCCLX_TESTS_LP_MODE": "scaled"}, "RCCLX_TESTS_LP_BLOCK", "64", "128", false},
		{AllReduce, nil, EnvDDA, "0", "1", false},
		{AllReduce, map[string]string{"RCCL_ENABLE_DDA_ALL_REDUCE": "1"}, EnvDDA, "0", "1", true},
		{AllGather, map[string]string{"RCCL_ENABLE_DDA_ALL_REDUCE": "1"}, EnvDDA, "0", "1", false},
		{AllReduce, nil, "RCCL_ENABLE_DDA_ALL_REDUCE", "", "0", true}, // unset follows the master, off
		{AllGather, map[string]string{EnvDDA: "1"}, "RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES", "100K", "200K", true},
		{AllReduce, map[string]string{EnvDDA: "1"}, "RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES", "100K", "200K", false},
		{AllReduce, nil, "RCCL_DDA_SENDBUF_BYTES", "16M", "32M", false},
		{Broadcast, nil, EnvDDA, "0", "1", true},
		{AllReduce, nil, EnvDelayUS, "0", "0", false},
		{AllReduce, nil, EnvDDA, "0", "yes", false},
	} {
		if got := SameEffect(c.coll, RunShape{}, env(c.env), c.name, c.a, c.b); got != c.same {
			t.Errorf("%s with %v: SameEffect(%s, %q, %q) = %v", c.coll.Name, c.env, c.name, c.a, c.b, got)
		}
	}
}
