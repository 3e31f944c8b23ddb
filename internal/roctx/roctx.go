// Package roctx binds AMD's rocTX ranges (roctxRangePushA, roctxRangePop) through purego, for rccl-tests'
// RCCL_TESTS_ROCTX: a profiler (rocprofv3 --marker-trace) records each range with its message.
package roctx

import (
	"sync"

	"github.com/ebitengine/purego"
)

// Ranges are the loaded rocTX functions. A range is the calling OS thread's: push and pop on one thread.
type Ranges struct {
	push func(msg string) int32
	pop  func() int32
}

var (
	once   sync.Once
	loaded *Ranges
)

// Load finds the functions where rccl-tests does: already in the process (a profiler preloads them), else in
// libroctx64.so. It returns nil where neither has them: ranges are then off, silently, as in rccl-tests.
func Load() *Ranges {
	once.Do(func() {
		push, pop := lookup(purego.RTLD_DEFAULT)
		if push == 0 || pop == 0 {
			if h, err := purego.Dlopen("libroctx64.so", purego.RTLD_LAZY|purego.RTLD_LOCAL); err == nil {
				push, pop = lookup(h)
			}
		}
		if push == 0 || pop == 0 {
			return
		}
		r := &Ranges{}
		purego.RegisterFunc(&r.push, push)
		purego.RegisterFunc(&r.pop, pop)
		loaded = r
	})
	return loaded
}

func lookup(h uintptr) (push, pop uintptr) {
	push, _ = purego.Dlsym(h, "roctxRangePushA")
	pop, _ = purego.Dlsym(h, "roctxRangePop")
	return push, pop
}

// Push opens a range named msg on this thread.
func (r *Ranges) Push(msg string) { r.push(msg) }

// Pop closes this thread's innermost range.
func (r *Ranges) Pop() { r.pop() }
