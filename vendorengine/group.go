package vendorengine

import (
	"errors"
	"fmt"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
	"github.com/rcclx-tests/rcclx-tests/internal/memkind"
	"github.com/rcclx-tests/rcclx-tests/nccl"
)

// group drives the ranks of one harness thread; all its methods run on that thread (NCCL's group state is
// per OS thread).
type group struct {
	c         *comm
	ranks     []*rank
	global    []int
	lastCall  string // for the timeout message
	capturing bool   // inside Capture's record

	calls  *nccl.Calls   // the library calls of a Launch, or of a loop past its prepared part; reused
	loop   []*nccl.Calls // a prepared loop's calls, a crossing each; reused
	dt     nccl.DataType // of the calls being queued
	fp8    bool          // the calls being queued are of an FP8 type
	ops    []nccl.RedOp  // per local rank, likewise
	premul map[premulKey]nccl.RedOp
	marks  markPool
}

// premulKey names a PreMulSum operation, made once per local rank and type.
type premulKey struct {
	local int
	dtype collectives.DType
}

func newGroup(c *comm, ranks []*rank) *group {
	g := &group{c: c, ranks: ranks, calls: c.lib.NewCalls(), ops: make([]nccl.RedOp, len(ranks)), premul: map[premulKey]nccl.RedOp{}}
	for _, r := range ranks {
		g.global = append(g.global, r.global)
	}
	g.marks.init(len(ranks))
	return g
}

func (g *group) Ranks() []int { return g.global }

// Algorithm is the library's own choice, which it does not tell.
func (g *group) Algorithm(*collectives.Call) string { return "nccl" }

// on makes local rank l's context current on this thread.
func (g *group) on(l int) error { return runtimeError(g.ranks[l].ctx.SetCurrent()) }

// buffer is device memory of one local rank, registered with its communicator under -R.
type buffer struct {
	ptr    gpurt.DevicePtr
	n      int64
	local  int
	handle uintptr // ncclCommRegister's, or 0
	free   func() error
}

func (b *buffer) Len() int64 { return b.n }

func devicePtr(v collectives.View) gpurt.DevicePtr {
	return v.Buf.(*buffer).ptr + gpurt.DevicePtr(v.Off)
}

func (g *group) Alloc(local int, bytes int64) (collectives.Buffer, error) {
	if err := g.on(local); err != nil {
		return nil, err
	}
	p, free, err := g.memAlloc(max(bytes, 1))
	if err != nil {
		return nil, runtimeError(fmt.Errorf("vendor: rank %d: %w", g.global[local], err))
	}
	b := &buffer{ptr: p, n: bytes, local: local, free: free}
	if g.c.register {
		b.handle, err = g.c.lib.CommRegister(g.ranks[local].comm, p, max(bytes, 1))
		if err := g.c.finish(g.ranks[local:local+1], "ncclCommRegister", err); err != nil {
			_ = free()
			return nil, err
		}
	}
	return b, nil
}

// memAlloc allocates as nccl-tests does: with ncclMemAlloc where the library has it (NCCL 2.19+; the
// library may treat such buffers differently from cuMemAlloc's), else cuMemAlloc; -Y fine, host and managed as
// rccl-tests does (memkind). On HIP, rccl-tests calls ncclMemAlloc only from HIP 7.12.60540 on (older HIP
// runtimes free its memory too early), hipMalloc before. It returns the function that frees the memory.
func (g *group) memAlloc(bytes int64) (gpurt.DevicePtr, func() error, error) {
	kind := memkind.Of(g.c.memory)
	if kind == gpurt.MemDevice && g.c.lib.Has("ncclMemAlloc") && g.c.lib.Has("ncclMemFree") &&
		(gpurt.Loaded() != gpurt.HIP || gpurt.HIPVersion() >= 71260540) {
		p, err := g.c.lib.MemAlloc(bytes)
		return p, func() error { return g.c.lib.MemFree(p) }, err
	}
	return gpurt.AllocKind(kind, bytes)
}

func (g *group) Free(buf collectives.Buffer) error {
	b := buf.(*buffer)
	var errs []error
	if b.handle != 0 && g.c.usable() == nil {
		errs = append(errs, libraryError(g.c.lib.CommDeregister(g.ranks[b.local].comm, b.handle)))
	}
	if err := g.on(b.local); err != nil {
		return errors.Join(append(errs, err)...)
	}
	return errors.Join(append(errs, runtimeError(b.free()))...)
}

// Write copies host bytes in and waits for the copy and the rest of the device's work (gpurt.MemcpyHtoD).
func (g *group) Write(dst collectives.View, src []byte) error {
	b := dst.Buf.(*buffer)
	if err := g.on(b.local); err != nil {
		return err
	}
	return runtimeError(gpurt.MemcpyHtoD(devicePtr(dst), src))
}

func (g *group) Read(dst []byte, src collectives.View) error {
	if err := g.on(src.Buf.(*buffer).local); err != nil {
		return err
	}
	return runtimeError(gpurt.MemcpyDtoH(dst, devicePtr(src)))
}

// FreeMemory is the device memory local rank may still allocate.
func (g *group) FreeMemory(local int) (int64, error) {
	if err := g.on(local); err != nil {
		return 0, err
	}
	free, _, err := gpurt.MemGetInfo()
	return free, runtimeError(err)
}

func (g *group) close(aborted bool) error {
	var errs []error
	if !aborted {
		for k, op := range g.premul {
			errs = append(errs, libraryError(g.c.lib.RedOpDestroy(op, g.ranks[k.local].comm)))
		}
	}
	errs = append(errs, g.marks.destroy(g))
	return errors.Join(errs...)
}

// NoInPlace: NCCL defines no in-place alltoall (a rank's incoming pieces may overwrite input it has not sent
// yet), so its in-place half is timed but not checked, as in nccl-tests.
func (g *group) NoInPlace(c *collectives.Collective) bool { return c == collectives.AllToAll }
