package bench

import "golang.org/x/sys/unix"

// bootNanos is CLOCK_BOOTTIME in nanoseconds: the clock of RCCL's kernel-timing records (and rocprof's).
func bootNanos() uint64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return 0
	}
	return uint64(ts.Nano())
}
