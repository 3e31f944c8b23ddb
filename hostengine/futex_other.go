//go:build !linux

package hostengine

import (
	"sync/atomic"
	"time"
)

// Without futexes a wait across processes sleeps its nap and looks again.
func futexWait(addr *atomic.Uint32, val uint32, d time.Duration) {
	if addr.Load() == val {
		time.Sleep(d)
	}
}

func futexWake(*atomic.Uint32) {}
