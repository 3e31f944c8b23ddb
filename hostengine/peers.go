package hostengine

import "github.com/rcclx-tests/rcclx-tests/collectives"

// The point-to-point collectives (broadcast, reduce, gather, scatter, sendrecv, alltoallv, hypercube) read their
// peers' buffers directly. A rank exposes its buffers and announces the call (progress = epoch<<32); a reader
// waits only for the peer it reads; a closing barrier keeps every exposed buffer in place until all readers are
// done. One file per algorithm; this one dispatches and holds the common steps.

// byCollective are the algorithms of collectives outside the RCCLX policy, by descriptor.
var byCollective = map[*collectives.Collective]func(*run) error{
	collectives.Broadcast: (*run).broadcast,
	collectives.Reduce:    (*run).rootReduce,
	collectives.Gather:    (*run).gather,
	collectives.Scatter:   (*run).scatter,
	collectives.SendRecv:  (*run).sendRecv,
	collectives.AllToAllV: (*run).allToAllV,
	collectives.HyperCube: (*run).hyperCube,
}

// announce exposes in and out to peers for this call (in another process through shared memory: both come
// from the call's buffers or x.grow) and announces it; it returns the progress base of the call.
func (x *run) announce(in, out []byte) uint64 {
	x.expose(exposed{in: in, out: out})
	base := x.epoch << 32
	x.c.publish(x.r.progress, base)
	x.c.wakeAll(x.r.progress)
	return base
}

// staged returns the send buffer peers may read: in place, a copy in the rank's scratch, as the call
// overwrites what peers still need.
func (x *run) staged() ([]byte, error) {
	if !x.inPlace {
		return x.send, nil
	}
	if err := x.grow(&x.r.scratch, int64(len(x.send))); err != nil {
		return nil, err
	}
	copy(x.r.scratch, x.send)
	return x.r.scratch, nil
}

// exposedBy waits until rank p has exposed its buffers for this call and returns them.
func (x *run) exposedBy(p *rank, base uint64) (exposed, error) {
	if err := x.waitAtLeast(p.progress, base, newPhase(x.algo+" waiting for rank %d", p.id)); err != nil {
		return exposed{}, err
	}
	return x.view(p), nil
}
