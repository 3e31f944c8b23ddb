package hostengine

import "github.com/rcclx-tests/rcclx-tests/collectives"

// HostScratch is what a rank keeps beyond its buffers for calls of coll on buffers of bufBytes (rank.go's
// scratch, dda, lpq and lps, each grown to the largest call): a copy of the send buffer to stage in-place
// alltoall, alltoallv and sendrecv and to hold ring reduce_scatter's partial sums; DDA's peer-visible buffer;
// and, with low precision (fp32 and bf16: at most half as many elements as bytes), one FP8 byte per element
// and an fp32 scale per block. Ranks of several processes grow these in a shared arena that keeps what
// they outgrew for later calls: up to twice as much (sizes that double sum to twice the last).
func (c *comm) HostScratch(coll *collectives.Collective, bufBytes int64) int64 {
	var n int64
	switch coll.Base() {
	case collectives.AllToAll, collectives.AllToAllV, collectives.SendRecv, collectives.ReduceScatter:
		n += bufBytes
	}
	e := c.policy.Effect(coll)
	if e.DDA {
		n += c.policy.SendBuf
	}
	if e.LP {
		elems := bufBytes / 2
		n += elems
		if e.LPMode == collectives.LPModeScaled {
			n += 4 * (elems/int64(max(e.LPBlock, 1)) + 1)
		}
	}
	if c.sh != nil {
		n *= 2
	}
	return n
}
