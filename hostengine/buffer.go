package hostengine

import (
	"fmt"
	"unsafe"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// bufferAlign is the alignment of every buffer's start (a cache line; more than DDA's 16-byte loads need).
const bufferAlign = 64

// buffer is host memory of one rank.
type buffer struct{ b []byte }

func (b *buffer) Len() int64 { return int64(len(b.b)) }

// alignedBytes returns n zeroed bytes starting on a bufferAlign boundary.
func alignedBytes(n int64) []byte {
	raw := make([]byte, n+bufferAlign-1)
	if len(raw) == 0 {
		return raw
	}
	skip := (bufferAlign - int(uintptr(unsafe.Pointer(&raw[0]))%bufferAlign)) % bufferAlign
	return raw[skip : int64(skip)+n : int64(skip)+n]
}

// slice returns the n bytes of a view, checking that they lie in a buffer of this engine.
func slice(v collectives.View, n int64) ([]byte, error) {
	b, ok := v.Buf.(*buffer)
	if !ok {
		return nil, fmt.Errorf("host engine: view of a buffer (%T) this engine did not allocate", v.Buf)
	}
	if v.Off < 0 || n < 0 || v.Off+n > int64(len(b.b)) {
		return nil, fmt.Errorf("host engine: view [%d, %d) outside its %d-byte buffer", v.Off, v.Off+n, len(b.b))
	}
	return b.b[v.Off : v.Off+n : v.Off+n], nil
}
