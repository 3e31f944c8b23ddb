//go:build !amd64

package ccall

import "github.com/ebitengine/purego"

// run makes the calls of a batch's words through purego, one crossing each (a trampoline like run_amd64.s's
// is yet to be written for other architectures).
func run(words []uintptr) {
	for i := words[0]; i < words[1]; i++ {
		e := words[headerWords+i*entryWords:][:entryWords]
		r, _, _ := purego.SyscallN(e[0], e[1:]...)
		words[0], words[2] = i, r
		if uint32(r) != 0 {
			return
		}
	}
	words[0] = words[1]
}
