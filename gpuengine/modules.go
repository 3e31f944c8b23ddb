package gpuengine

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
	"github.com/rcclx-tests/rcclx-tests/kernels"
)

// Kernels are compiled once per (target, dtype, op) with NVRTC or hiprtc (cached on disk by gpurt.CompileCached):
// all those of a sweep at once and in parallel before its first measurement (comm.Prepare), any other at first
// use. They are loaded once per (device, dtype, op), and their functions looked up once by name.

type cubinKey struct {
	target target
	dt     collectives.DType
	op     collectives.Op
}

// target is what a device's kernels are compiled for: its full arch, and the defines its capabilities ask.
type target struct {
	arch      string
	fnuz      bool // RX_FP8_FNUZ: the 8-bit floats are FNUZ (AMD gfx942)
	warpShift int  // RX_WARP_SHIFT: log2 of the warp size (6 for AMD's 64-lane wavefronts)
}

func targetOf(caps gpurt.Caps) target {
	shift := 5
	if caps.WarpSize == 64 {
		shift = 6
	}
	return target{arch: caps.Arch, fnuz: caps.FP8 == gpurt.FP8FNUZ, warpShift: shift}
}

var cubins sync.Map // cubinKey -> *cubinEntry

type cubinEntry struct {
	once  sync.Once
	image []byte
	err   error
	ready atomic.Bool // image is set
}

// compileOptions are the compiler options of one module, beyond gpurt's for the arch (which include no
// multiply-add contraction, so that every product and sum rounds on its own as in package hostengine).
func compileOptions(t target, dt collectives.DType, op collectives.Op) []string {
	opts := []string{fmt.Sprintf("-DRX_DTYPE=%d", dt), fmt.Sprintf("-DRX_OP=%d", op)}
	if t.fnuz {
		opts = append(opts, "-DRX_FP8_FNUZ=1")
	}
	if t.warpShift != 5 {
		opts = append(opts, fmt.Sprintf("-DRX_WARP_SHIFT=%d", t.warpShift))
	}
	return append(opts, plantedDefines...)
}

// plantedDefines are more NVRTC options of every module, set by tests that plant a fault in the kernels
// (kernels/lowprec.cu's RX_LP_LAG_BLOCK); nil otherwise.
var plantedDefines []string

func (k cubinKey) job() gpurt.CompileJob {
	return gpurt.CompileJob{Src: kernels.Source(), Name: fmt.Sprintf("rcclx_%s_%s.cu", k.dt, k.op), Arch: k.target.arch,
		Opts: compileOptions(k.target, k.dt, k.op)}
}

func cubin(k cubinKey) ([]byte, error) {
	e := cubinFor(k)
	e.once.Do(func() {
		j := k.job()
		e.image, e.err = gpurt.CompileCached(j.Src, j.Name, j.Arch, j.Opts...)
		e.ready.Store(e.err == nil)
	})
	return e.image, e.err
}

func cubinFor(k cubinKey) *cubinEntry {
	v, _ := cubins.LoadOrStore(k, &cubinEntry{})
	return v.(*cubinEntry)
}

// modulesFor lists the modules a sweep of coll over dtypes and ops needs on ranks of the given targets,
// sorted by architecture, type and op, each once.
func modulesFor(coll *collectives.Collective, dtypes []collectives.DType, ops []collectives.Op, targets []target) []cubinKey {
	seen := map[cubinKey]bool{}
	var out []cubinKey
	for _, t := range targets {
		for _, dt := range dtypes {
			for _, op := range ops {
				k := cubinKey{t, dt, moduleOp(coll, op)}
				if !seen[k] {
					seen[k] = true
					out = append(out, k)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b cubinKey) int {
		return cmp.Or(cmp.Compare(a.target.arch, b.target.arch), cmp.Compare(a.dt, b.dt), cmp.Compare(a.op, b.op))
	})
	return out
}

// precompile gets the code objects of keys that this process has not yet loaded from the disk cache or compiles
// them, in parallel, before their first use; note is told "compiling N kernels for sm_90, first run only"
// when some must compile.
func precompile(keys []cubinKey, note func(string)) error {
	keys = slices.DeleteFunc(slices.Clone(keys), func(k cubinKey) bool { return cubinFor(k).ready.Load() })
	if len(keys) == 0 {
		return nil
	}
	jobs := make([]gpurt.CompileJob, len(keys))
	var arches []string
	for i, k := range keys {
		jobs[i] = k.job()
		if a := k.target.arch; !slices.Contains(arches, a) {
			arches = append(arches, a)
		}
	}
	announce := func(n int) {
		if note != nil {
			note(fmt.Sprintf("compiling %d kernels for %s, first run only", n, strings.Join(arches, ", ")))
		}
	}
	images, err := gpurt.CompileAllCached(jobs, announce)
	if err != nil {
		return err
	}
	for i, k := range keys {
		e := cubinFor(k)
		e.once.Do(func() {
			e.image = images[i]
			e.ready.Store(true)
		})
	}
	return nil
}

// Prepare compiles (or reads from the disk cache) every module a sweep of coll over dtypes and ops needs.
func (c *comm) Prepare(coll *collectives.Collective, dtypes []collectives.DType, ops []collectives.Op,
	note func(string)) error {
	var targets []target
	for _, r := range c.ranks {
		targets = append(targets, targetOf(r.caps))
	}
	return runtimeError(nil, precompile(modulesFor(coll, dtypes, ops, targets), note))
}

// moduleOp is the op whose module holds a collective's kernels: copies do not depend on it.
func moduleOp(c *collectives.Collective, op collectives.Op) collectives.Op {
	if !c.Reduces {
		return collectives.Sum
	}
	return op
}

type moduleKey struct {
	dev gpurt.Device
	dt  collectives.DType
	op  collectives.Op
}

type module struct {
	ctx   *gpurt.Context
	mod   *gpurt.Module
	funcs map[string]gpurt.Function
}

// modules are the loaded modules of one communicator; groups on several threads share them.
type modules struct {
	mu     sync.Mutex
	loaded map[moduleKey]*module
}

// function returns kernel name of the (dt, op) module on r's device, allowed shared bytes of dynamic shared
// memory a block; r's context is current.
func (m *modules) function(r *rank, dt collectives.DType, op collectives.Op, name string, shared int) (gpurt.Function, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := moduleKey{r.dev, dt, op}
	mod := m.loaded[key]
	if mod == nil {
		image, err := cubin(cubinKey{targetOf(r.caps), dt, op})
		if err != nil {
			return 0, err
		}
		loaded, err := gpurt.ModuleLoadData(image)
		if err != nil {
			return 0, err
		}
		mod = &module{ctx: r.ctx, mod: loaded, funcs: map[string]gpurt.Function{}}
		if m.loaded == nil {
			m.loaded = map[moduleKey]*module{}
		}
		m.loaded[key] = mod
	}
	f, ok := mod.funcs[name]
	if !ok {
		var err error
		if f, err = mod.mod.Function(name); err != nil {
			return 0, fmt.Errorf("kernel %s of the %s/%s module: %w", name, dt, op, err)
		}
		if shared > 0 {
			if err := f.SetMaxDynamicSharedMem(shared); err != nil {
				return 0, fmt.Errorf("kernel %s: %d bytes of shared memory: %w", name, shared, err)
			}
		}
		mod.funcs[name] = f
	}
	return f, nil
}

func (m *modules) unload() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, mod := range m.loaded {
		if mod.ctx.SetCurrent() == nil {
			mod.mod.Unload()
		}
	}
	m.loaded = nil
}
