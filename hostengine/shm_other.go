//go:build !linux

package hostengine

import "os"

// reserve extends f by n bytes at off (without Linux's fallocate, a full file system shows on first touch).
func reserve(f *os.File, off, n int64) error { return f.Truncate(off + n) }
