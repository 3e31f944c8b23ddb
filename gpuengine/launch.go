package gpuengine

import (
	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/cuda"
)

// launch enqueues call on local rank l (its context is current): the algorithm's kernels, then the corrupt
// hook's bit flip.
func (c *comm) launch(r *rank, call *collectives.Call, l int, algo string) error {
	k := call.Counts[l]
	size := call.DType.Size()
	send, recv := ptr(call.Send[l]), ptr(call.Recv[l])
	if k.Send == 0 && k.Recv == 0 {
		return nil
	}
	if c.nranks == 1 && algo != collectives.LowPrecision {
		if send != recv {
			return cuda.MemcpyDtoDAsync(recv, send, k.Recv*int64(size), r.stream)
		}
	} else if err := c.launchAlgo(r, call, l, algo, send, recv); err != nil {
		return err
	}
	return c.corrupt(r, call, l)
}

// corrupt flips the hook's bits in local rank l's output when l is the corrupt rank.
func (c *comm) corrupt(r *rank, call *collectives.Call, l int) error {
	if r.global != c.hooks.CorruptRank || call.Counts[l].Recv == 0 {
		return nil
	}
	size := call.DType.Size()
	f, err := c.modules.function(r, call.DType, moduleOp(call.Coll, call.Op), flipKernel)
	if err != nil {
		return err
	}
	return cuda.Launch(f, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, r.stream,
		ptr(call.Recv[l])+cuda.DevicePtr(collectives.CorruptByte(size)), uint32(collectives.CorruptMask))
}

func (c *comm) launchAlgo(r *rank, call *collectives.Call, l int, algo string, send, recv cuda.DevicePtr) error {
	k := call.Counts[l]
	p, err := c.makePlan(call.Coll, algo, k, call.DType.Size())
	if err != nil {
		return err
	}
	f, err := c.modules.function(r, call.DType, moduleOp(call.Coll, call.Op), p.kernel)
	if err != nil {
		return err
	}
	a := kernelArgs{Send: send, Recv: recv, Count: k.Param, Rank: int64(r.global), NRanks: int64(c.nranks),
		Peers: r.peers, Abort: c.flagsDev, Status: c.statusDev(r.local), Half: c.half,
		X2: int64(c.policy.LPBlock), X3: p.lpMode}
	switch {
	case call.Coll.Rooted:
		a.X2 = int64(call.Root)
	case call.Coll.Base() == collectives.AllToAllV:
		if a.X3, err = r.alltoallvTable(k); err != nil {
			return err
		}
	}
	grid, block := [3]uint32{uint32(p.blocks), 1, 1}, [3]uint32{blockThreads, 1, 1}
	if p.rounds == nil {
		return cuda.LaunchStruct(f, grid, block, 0, r.stream, r.args, &a)
	}
	for _, rd := range p.rounds {
		a.X0, a.X1 = rd.off, rd.len
		for s := range max(p.steps, 1) {
			if p.steps > 0 {
				a.X2 = int64(s)
			}
			if err := cuda.LaunchStruct(f, grid, block, 0, r.stream, r.args, &a); err != nil {
				return err
			}
		}
	}
	return nil
}

// ptr is the device address of a view of one of this engine's buffers.
func ptr(v collectives.View) cuda.DevicePtr {
	return v.Buf.(*buffer).ptr + cuda.DevicePtr(v.Off)
}
