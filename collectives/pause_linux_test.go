package collectives

import (
	"syscall"
	"testing"
	"time"
)

// TestPauseYields: a pause leaves the processor to other processes for most of its time rather than holding it
// until the deadline (with more processes than processors, one that holds a processor through its planted
// delay delays the others as well). 20 pauses of 1 ms take under half their time in CPU of this process, whose
// tests run one at a time.
func TestPauseYields(t *testing.T) {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start, before := time.Now(), cpu()
	for range 20 {
		Hooks{Delay: time.Millisecond}.Pause()
	}
	if used, wall := cpu()-before, time.Since(start); used > wall/2 {
		t.Errorf("20 pauses of 1 ms used %v of CPU in %v", used, wall)
	}
}
