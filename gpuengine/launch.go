package gpuengine

import (
	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

// phase is one of a call's launches on every rank: ph of phases (callPhases).
type phase struct{ ph, phases int }

// callPhases is how many launches call makes on each rank, the same on every rank (so is the plan): a rounds
// kernel's rounds times its steps, otherwise 1. Launch enqueues phase i on every local rank before phase i+1 on
// any, as it enqueues whole calls: the kernels of a phase wait for each other, and none of them is then queued
// behind a later launch of another rank.
func (c *comm) callPhases(call *collectives.Call, algo string) int {
	k := call.Counts[0]
	if k.Send == 0 && k.Recv == 0 || c.nranks == 1 && algo != collectives.LowPrecision {
		return 1
	}
	p, err := c.makePlan(call.Coll, algo, k, call.DType.Size())
	if err != nil {
		return 1 // launch reports the error
	}
	return p.launches()
}

// launch enqueues phase f of call on local rank l (its context is current): the algorithm's kernel launch of
// that phase, and after the last phase the corrupt hook's bit flip.
func (c *comm) launch(r *rank, call *collectives.Call, l int, algo string, f phase) error {
	k := call.Counts[l]
	size := call.DType.Size()
	send, recv := ptr(call.Send[l]), ptr(call.Recv[l])
	if k.Send == 0 && k.Recv == 0 {
		return nil
	}
	if c.nranks == 1 && algo != collectives.LowPrecision {
		if send != recv {
			return gpurt.MemcpyDtoDAsync(recv, send, k.Recv*int64(size), r.stream)
		}
	} else if err := c.launchAlgo(r, call, l, algo, send, recv, f.ph); err != nil {
		return err
	}
	if f.ph != f.phases-1 {
		return nil
	}
	return c.corrupt(r, call, l)
}

// corrupt flips the hook's bits in local rank l's output when l is the corrupt rank.
func (c *comm) corrupt(r *rank, call *collectives.Call, l int) error {
	if r.global != c.hooks.CorruptRank || call.Coll.Checked(r.global, call.Root, c.nranks, call.Counts[l]) == 0 {
		return nil
	}
	size := call.DType.Size()
	f, err := c.modules.function(r, call.DType, moduleOp(call.Coll, call.Op), flipKernel, 0)
	if err != nil {
		return err
	}
	return gpurt.Launch(f, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, r.stream,
		ptr(call.Recv[l])+gpurt.DevicePtr(collectives.CorruptByte(size)), uint32(collectives.CorruptMask))
}

// launchAlgo launches phase ph of the algorithm's plan: its one kernel launch, or one round's step.
func (c *comm) launchAlgo(r *rank, call *collectives.Call, l int, algo string, send, recv gpurt.DevicePtr, ph int) error {
	k := call.Counts[l]
	p, err := c.makePlan(call.Coll, algo, k, call.DType.Size())
	if err != nil {
		return err
	}
	f, err := c.modules.function(r, call.DType, moduleOp(call.Coll, call.Op), p.kernel, p.shared)
	if err != nil {
		return err
	}
	a := kernelArgs{Send: send, Recv: recv, Count: k.Param, Rank: int64(r.global), NRanks: int64(c.nranks),
		Peers: r.peers, Self: r.buf, Abort: c.flagsDev, Status: c.statusDev(r.local), Half: c.half,
		X2: int64(c.policy.LPBlock)}
	switch {
	case call.Coll.Rooted:
		a.X2 = int64(call.Root)
	case call.Coll.Base() == collectives.AllToAllV:
		if a.X3, err = r.alltoallvTable(k); err != nil {
			return err
		}
	}
	grid, block := [3]uint32{uint32(p.blocks), 1, 1}, [3]uint32{blockThreads, 1, 1}
	if p.threads > 0 {
		block[0] = uint32(p.threads)
	}
	if p.rounds != nil {
		rd, step := p.at(ph)
		a.X0, a.X1 = rd.off, rd.len
		if p.steps > 0 {
			a.X2 = int64(step)
		}
	}
	if p.lpPush {
		a.X0 = 1
	}
	shared := uint32(p.shared)
	if p.early {
		return gpurt.LaunchStructEarly(f, grid, block, shared, r.stream, r.args, &a)
	}
	return gpurt.LaunchStruct(f, grid, block, shared, r.stream, r.args, &a)
}

// ptr is the device address of a view of one of this engine's buffers.
func ptr(v collectives.View) gpurt.DevicePtr {
	return v.Buf.(*buffer).ptr + gpurt.DevicePtr(v.Off)
}
