package gpuengine

import (
	"fmt"
	"sync"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/cuda"
	"github.com/rcclx-tests/rcclx-tests/kernels"
)

// Kernels are compiled once per (architecture, dtype, op) with NVRTC (cached on disk by cuda.CompileCached),
// loaded once per (device, dtype, op), and their functions looked up once by name.

type cubinKey struct {
	arch int
	dt   collectives.DType
	op   collectives.Op
}

var cubins sync.Map // cubinKey -> *cubinEntry

type cubinEntry struct {
	once  sync.Once
	image []byte
	err   error
}

// compileOptions are the NVRTC options of one module. --fmad=false: no multiply-add contraction, so every
// product and sum rounds on its own as in package hostengine.
func compileOptions(dt collectives.DType, op collectives.Op) []string {
	return []string{fmt.Sprintf("-DRX_DTYPE=%d", dt), fmt.Sprintf("-DRX_OP=%d", op), "--fmad=false"}
}

func cubin(k cubinKey) ([]byte, error) {
	v, _ := cubins.LoadOrStore(k, &cubinEntry{})
	e := v.(*cubinEntry)
	e.once.Do(func() {
		name := fmt.Sprintf("rcclx_%s_%s.cu", k.dt, k.op)
		e.image, e.err = cuda.CompileCached(kernels.Source(), name, k.arch, compileOptions(k.dt, k.op)...)
	})
	return e.image, e.err
}

// moduleOp is the op whose module holds a collective's kernels: copies do not depend on it.
func moduleOp(c *collectives.Collective, op collectives.Op) collectives.Op {
	if !c.Reduces {
		return collectives.Sum
	}
	return op
}

type moduleKey struct {
	dev cuda.Device
	dt  collectives.DType
	op  collectives.Op
}

type module struct {
	ctx   *cuda.Context
	mod   *cuda.Module
	funcs map[string]cuda.Function
}

// modules are the loaded modules of one communicator; groups on several threads share them.
type modules struct {
	mu     sync.Mutex
	loaded map[moduleKey]*module
}

// function returns kernel name of the (dt, op) module on r's device; r's context is current.
func (m *modules) function(r *rank, dt collectives.DType, op collectives.Op, name string) (cuda.Function, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := moduleKey{r.dev, dt, op}
	mod := m.loaded[key]
	if mod == nil {
		image, err := cubin(cubinKey{r.arch, dt, op})
		if err != nil {
			return 0, err
		}
		loaded, err := cuda.ModuleLoadData(image)
		if err != nil {
			return 0, err
		}
		mod = &module{ctx: r.ctx, mod: loaded, funcs: map[string]cuda.Function{}}
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
