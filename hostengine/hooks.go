package hostengine

import (
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// The test hooks (collectives.HooksFromEnv) are read at Open.

// stayAway is the skipping rank's call: it takes no part, and returns only once the run has failed (a peer's
// -T, a cancel, a lost process), as a rank stuck elsewhere would. Were it to return at once, its process would
// run ahead into the harness's next rendezvous, whose timer, started first, could expire before the peers'
// and report a silent rank 0 instead of the rank that never arrived.
func (c *comm) stayAway() error {
	for nap := firstNap; ; nap = min(2*nap, lastNap) {
		if err := c.err(); err != nil {
			return err
		}
		if c.sh != nil {
			if err := c.sh.failure(); err != nil {
				c.stop(err, false)
				return c.err()
			}
		}
		time.Sleep(nap)
	}
}

// corrupt flips the corrupt hook's bit in element 0 of out (little-endian elements of size bytes).
func corrupt(out []byte, size int) {
	if len(out) >= size {
		out[collectives.CorruptByte(size)] ^= collectives.CorruptMask
	}
}
