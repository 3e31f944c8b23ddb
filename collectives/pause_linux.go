package collectives

import (
	"syscall"
	"time"
)

// sleepSlack is how early Pause stops sleeping: nanosleep usually wakes within 50-100 us of its time (the
// kernel's default timer slack is 50 us), where time.Sleep rounds up to the next millisecond.
const sleepSlack = 100 * time.Microsecond

func sleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil) // interrupted: Pause sleeps again for what is left
}
