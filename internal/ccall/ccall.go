// Package ccall calls C functions from Go without cgo, several in one trip: a Batch is a list of calls that
// runs on the system stack in order, crossing from Go into C once for the whole list. A crossing costs about
// as much as a short C call (purego.SyscallN: 0.1-0.2 us on the GPU hosts), so a loop of library calls made
// as one Batch costs what the same loop costs in C.
//
// Every argument is an integer or a pointer that C may use only during the call (no floating-point
// arguments). Each function returns a status in its low 32 bits, 0 for success (ncclResult_t, CUresult); a
// batch stops at the first call that returns anything else.
package ccall

import "fmt"

// MaxArgs is the most arguments one call takes (cuLaunchKernel has 11).
const MaxArgs = 12

const (
	headerWords = 3 // next call to make, number of calls, the last call's return value
	entryWords  = 1 + MaxArgs
)

// Batch is a list of C calls. Its zero value is empty and ready to use; reuse it with Reset.
type Batch struct {
	words []uintptr // header, then one entry per call: the function, then its arguments
}

// Add appends a call of fn with args. An argument pointing into Go memory must be kept alive by the caller
// until Run returns.
func (b *Batch) Add(fn uintptr, args ...uintptr) {
	checkCall(fn, args)
	if b.words == nil {
		b.words = make([]uintptr, headerWords, headerWords+16*entryWords)
	}
	var e [entryWords]uintptr
	e[0] = fn
	copy(e[1:], args)
	b.words = append(b.words, e[:]...)
}

// Len is the number of calls in b.
func (b *Batch) Len() int {
	if b.words == nil {
		return 0
	}
	return (len(b.words) - headerWords) / entryWords
}

// Reset empties b, keeping its memory.
func (b *Batch) Reset() {
	if b.words != nil {
		b.words = b.words[:headerWords]
	}
}

// Run makes b's calls from the from-th on, in order, until one returns a non-zero status. It returns the
// index of that call and what it returned (whole: the status is its low 32 bits), or b.Len() and the last
// call's return value when every call succeeded.
func (b *Batch) Run(from int) (stopped int, ret uintptr) {
	n := b.Len()
	if from >= n {
		return n, 0
	}
	b.words[0], b.words[1], b.words[2] = uintptr(from), uintptr(n), 0
	run(b.words)
	return int(b.words[0]), b.words[2]
}

// Call makes one call of fn with args and returns what it returned. Arguments converted from Go pointers
// stay alive and in place during the call.
//
//go:uintptrescapes
func Call(fn uintptr, args ...uintptr) uintptr {
	checkCall(fn, args)
	w := [headerWords + entryWords]uintptr{0, 1, 0, fn}
	copy(w[headerWords+1:], args)
	run(w[:])
	return w[2]
}

func checkCall(fn uintptr, args []uintptr) {
	if fn == 0 || len(args) > MaxArgs {
		panic(fmt.Sprintf("ccall: call of %#x with %d arguments", fn, len(args)))
	}
}
