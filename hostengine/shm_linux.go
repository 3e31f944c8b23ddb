package hostengine

import (
	"os"
	"syscall"
)

// reserve extends f by n bytes at off and allocates them now, so that a full file system is an error here.
func reserve(f *os.File, off, n int64) error { return syscall.Fallocate(int(f.Fd()), 0, off, n) }
