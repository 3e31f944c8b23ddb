package hostengine

import "github.com/rcclx-tests/rcclx-tests/collectives"

// The test hooks (collectives.HooksFromEnv) are read at Open; the skipping rank returns from every call at once,
// so its peers wait for it until -T expires.

// corrupt flips the corrupt hook's bit in element 0 of out (little-endian elements of size bytes).
func corrupt(out []byte, size int) {
	if len(out) >= size {
		out[collectives.CorruptByte(size)] ^= collectives.CorruptMask
	}
}
