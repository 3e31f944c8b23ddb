//go:build !linux

package bench

import "time"

// bootNanos stands in for CLOCK_BOOTTIME where there is none: monotonic nanoseconds since the process began.
func bootNanos() uint64 { return uint64(time.Since(processStart).Nanoseconds()) }

var processStart = time.Now()
