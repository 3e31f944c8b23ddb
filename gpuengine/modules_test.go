package gpuengine

import (
	"fmt"
	"slices"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// TestModulesForSweep: a sweep needs one module per architecture, type and op of its reduction; a collective
// that does not reduce needs the sum module of each type only; ranks of one architecture share modules.
func TestModulesForSweep(t *testing.T) {
	sm80, sm90 := target{arch: "sm_80", warpShift: 5}, target{arch: "sm_90", warpShift: 5}
	all, ops := collectives.AllDTypes(), collectives.AllOps()
	cases := []struct {
		coll   *collectives.Collective
		dtypes []collectives.DType
		ops    []collectives.Op
		arches []target
		want   int
	}{
		{collectives.AllReduce, all, ops, []target{sm90, sm90}, len(all) * len(ops)},
		{collectives.ReduceScatter, all, ops, []target{sm90}, len(all) * len(ops)},
		{collectives.AllGather, all, ops, []target{sm90, sm90, sm90}, len(all)},
		{collectives.AllToAll, all, []collectives.Op{collectives.Sum}, []target{sm90}, len(all)},
		{collectives.AllReduce, []collectives.DType{collectives.Float}, []collectives.Op{collectives.Max}, []target{sm90}, 1},
		{collectives.AllReduce, all, ops, []target{sm90, sm80, sm90}, 2 * len(all) * len(ops)},
	}
	for _, c := range cases {
		keys := modulesFor(c.coll, c.dtypes, c.ops, c.arches)
		if len(keys) != c.want {
			t.Errorf("%s %d types %d ops arches %v: %d modules, want %d", c.coll.Name, len(c.dtypes), len(c.ops),
				c.arches, len(keys), c.want)
		}
		seen := map[cubinKey]bool{}
		for i, k := range keys {
			if seen[k] {
				t.Errorf("%s: %v twice", c.coll.Name, k)
			}
			seen[k] = true
			if !slices.Contains(c.arches, k.target) || !slices.Contains(c.dtypes, k.dt) ||
				(c.coll.Reduces && !slices.Contains(c.ops, k.op)) || (!c.coll.Reduces && k.op != collectives.Sum) {
				t.Errorf("%s: module %v is not one the sweep runs", c.coll.Name, k)
			}
			if i > 0 && (keys[i-1].target.arch > k.target.arch || keys[i-1].target.arch == k.target.arch && keys[i-1].dt > k.dt) {
				t.Errorf("%s: %v before %v", c.coll.Name, keys[i-1], k)
			}
		}
		// What a launch looks up must be in the list: (dt, moduleOp(op)) on each rank's arch.
		for _, arch := range c.arches {
			for _, dt := range c.dtypes {
				for _, op := range c.ops {
					if k := (cubinKey{arch, dt, moduleOp(c.coll, op)}); !seen[k] {
						t.Errorf("%s: launch of %v not prepared", c.coll.Name, k)
					}
				}
			}
		}
	}
}

// TestModuleJobsDiffer: every module's compile job is the one source with its own name and macros (so its own
// cache entry), and the macros are the numbers the kernels test.
func TestModuleJobsDiffer(t *testing.T) {
	keys := modulesFor(collectives.AllReduce, collectives.AllDTypes(), collectives.AllOps(), []target{{arch: "sm_90", warpShift: 5}})
	names := map[string]bool{}
	opts := map[string]bool{}
	for _, k := range keys {
		j := k.job()
		if j.Arch != "sm_90" || j.Src != keys[0].job().Src || len(j.Src) == 0 {
			t.Fatalf("%v: job %s for %s with a different source", k, j.Name, j.Arch)
		}
		o := fmt.Sprint(j.Opts)
		if names[j.Name] || opts[o] {
			t.Errorf("%v: name %s or options %s repeat", k, j.Name, o)
		}
		names[j.Name], opts[o] = true, true
		want := []string{fmt.Sprintf("-DRX_DTYPE=%d", k.dt), fmt.Sprintf("-DRX_OP=%d", k.op)}
		if !slices.Equal(j.Opts, want) {
			t.Errorf("%v: options %q, want %q", k, j.Opts, want)
		}
	}
}
