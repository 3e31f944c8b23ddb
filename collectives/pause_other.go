//go:build !linux

package collectives

import "time"

// sleepSlack is how early Pause stops sleeping: time.Sleep may wake a timer tick late.
const sleepSlack = 2 * time.Millisecond

func sleep(d time.Duration) { time.Sleep(d) }
