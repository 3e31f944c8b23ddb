package hostengine

import (
	"sync/atomic"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// The test hooks (collectives.HooksFromEnv) are read at Open.

// stayAway is the skipping rank's call: it takes no part and waits, as for a flag no peer sets, until the run
// fails (a peer's -T, a cancel, a lost process), as a rank stuck elsewhere would. Were it to return at once,
// its process would run ahead into the harness's next rendezvous, whose timer, started first, could expire
// before the peers' and report a silent rank 0 instead of the rank that never arrived.
func (c *comm) stayAway(rank int) error {
	var never atomic.Uint64
	w := waiter{c: c, rank: rank}
	return w.waitAtLeast(&never, 1, newPhase("skipped"))
}

// corrupt flips the corrupt hook's bit in element 0 of out (little-endian elements of size bytes).
func corrupt(out []byte, size int) {
	if len(out) >= size {
		out[collectives.CorruptByte(size)] ^= collectives.CorruptMask
	}
}
