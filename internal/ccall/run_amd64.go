package ccall

import (
	"runtime"
	"unsafe"

	_ "github.com/ebitengine/purego" // its runtime/cgo stand-in lets runtime.cgocall work with CGO_ENABLED=0
)

//go:linkname runtime_cgocall runtime.cgocall
func runtime_cgocall(fn uintptr, arg unsafe.Pointer) int32

// runBatchABI0 is the address of runBatch (run_amd64.s), which runs on the system stack with the C ABI.
var runBatchABI0 uintptr

// run makes the calls of a batch's words: Go's heap does not move, and the words hold no Go pointers.
func run(words []uintptr) {
	runtime_cgocall(runBatchABI0, unsafe.Pointer(&words[0]))
	runtime.KeepAlive(words)
}
