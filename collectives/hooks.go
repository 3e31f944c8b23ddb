package collectives

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// Test hooks, read by every engine (host, GPU and vendor) at communicator creation, Config.Env first. They exist so
// the suite can prove its failure paths end to end; neither is meant for measurements.
//
//	RCCLX_TESTS_SKIP_RANK=<r>     rank r takes part in no call, so its peers wait for it until -T expires: Wait
//	                              then returns a *TimeoutError (exit code 4) naming r as missing (where r is in
//	                              the process that timed out), and a waiting rank and its phase. Without -T they
//	                              wait forever. The host engine holds r's call until the run fails, as a rank
//	                              stuck elsewhere would; the GPU engines return it at once.
//	RCCLX_TESTS_CORRUPT_RANK=<r>  after each call, rank r flips CorruptMask in byte CorruptByte(size) of element
//	                              0 of its output (the bit below the top bit: a large change for every type,
//	                              never a sign flip of zero), so validation reports exactly one wrong element.
//	RCCLX_TESTS_DELAY_US=<n>      every rank waits n microseconds inside each collective call: a planted
//	                              slowdown for A/B and gate tests. Unlike the two above it is read from the
//	                              process environment once, at first use, and cached for the process, as NCCL
//	                              and RCCL cache their parameters: a communicator's Config.Env cannot change it,
//	                              so only an arm in a process of its own can give it another value.
const (
	EnvSkipRank    = "RCCLX_TESTS_SKIP_RANK"
	EnvCorruptRank = "RCCLX_TESTS_CORRUPT_RANK"
	EnvDelayUS     = "RCCLX_TESTS_DELAY_US"
	CorruptMask    = 0x40
)

// Hooks are the test hooks in force; -1 (a rank) or 0 (the delay) means none.
type Hooks struct {
	SkipRank, CorruptRank int
	Delay                 time.Duration
}

// Pause waits the delay hook's time inside a call; engines call it once per rank (host engine) or once per
// launch of a group's ranks (GPU engines, on the host before the call is enqueued). It sleeps, giving the
// processor to other processes, until sleepSlack before the deadline, then checks the clock, yielding, until
// the deadline: a sleep may wake late (time.Sleep by up to a timer tick, about 1 ms on some virtual machines),
// which would plant a slowdown longer than asked for. The checking part is kept short because it holds a
// processor: with more processes than processors it would slow the other arm's process as well.
func (h Hooks) Pause() {
	if h.Delay <= 0 {
		return
	}
	end := time.Now().Add(h.Delay)
	for left := h.Delay; left > sleepSlack; left = time.Until(end) {
		sleep(left - sleepSlack)
	}
	for time.Now().Before(end) {
		runtime.Gosched()
	}
}

// processDelay is RCCLX_TESTS_DELAY_US as the process first read it.
var processDelay = sync.OnceValues(func() (time.Duration, error) { return parseDelay(os.Getenv(EnvDelayUS)) })

// parseDelay reads a delay in whole microseconds; empty is none.
func parseDelay(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	us, err := strconv.ParseInt(s, 10, 64)
	if err != nil || us < 0 || us > int64(time.Hour/time.Microsecond) {
		return 0, fmt.Errorf("%s=%q: want whole microseconds in [0, 3600000000]", EnvDelayUS, s)
	}
	return time.Duration(us) * time.Microsecond, nil
}

// ValidateDelay checks a value of RCCLX_TESTS_DELAY_US (for parse-time checks of -E and --ab values).
func ValidateDelay(s string) error {
	_, err := parseDelay(s)
	return err
}

// HooksFromEnv reads the hooks; a value that is not a rank in [0, nranks) is an error naming the variable. The
// delay comes from the process environment as first read (getenv does not reach it, see EnvDelayUS).
func HooksFromEnv(getenv func(string) string, nranks int) (Hooks, error) {
	return hooksFrom(getenv, processDelay, nranks)
}

// CheckHooks checks the hooks' values as HooksFromEnv reads them, the delay too from getenv: for a check
// before anything runs, of the environment a process or an arm's workers will have.
func CheckHooks(getenv func(string) string, nranks int) error {
	_, err := hooksFrom(getenv, func() (time.Duration, error) { return parseDelay(getenv(EnvDelayUS)) }, nranks)
	return err
}

func hooksFrom(getenv func(string) string, delay func() (time.Duration, error), nranks int) (Hooks, error) {
	d, err := delay()
	if err != nil {
		return Hooks{}, err
	}
	h := Hooks{SkipRank: -1, CorruptRank: -1, Delay: d}
	for _, v := range []struct {
		name string
		dst  *int
	}{{EnvSkipRank, &h.SkipRank}, {EnvCorruptRank, &h.CorruptRank}} {
		s := getenv(v.name)
		if s == "" {
			continue
		}
		r, err := strconv.Atoi(s)
		if err != nil || r < 0 || r >= nranks {
			return Hooks{}, fmt.Errorf("%s=%q: want a rank in [0, %d)", v.name, s, nranks)
		}
		*v.dst = r
	}
	return h, nil
}

// CorruptByte is the byte of a little-endian element of size bytes that the corrupt hook flips: its top byte.
func CorruptByte(size int) int { return size - 1 }
