package collectives

import (
	"sync"
	"testing"
	"time"
)

func TestHooksFromEnv(t *testing.T) {
	h, err := HooksFromEnv(env(map[string]string{EnvSkipRank: "1", EnvCorruptRank: "0"}), 2)
	if err != nil || h.SkipRank != 1 || h.CorruptRank != 0 {
		t.Errorf("hooks %+v, %v", h, err)
	}
	if h, _ := HooksFromEnv(env(nil), 2); h.SkipRank != -1 || h.CorruptRank != -1 {
		t.Errorf("no hooks set: %+v", h)
	}
	for _, kv := range []map[string]string{{EnvSkipRank: "2"}, {EnvCorruptRank: "x"}, {EnvSkipRank: "-1"}} {
		if _, err := HooksFromEnv(env(kv), 2); err == nil {
			t.Errorf("%v accepted", kv)
		}
	}
}

func TestDelayHookIsReadOncePerProcess(t *testing.T) {
	var reads int
	vals := []string{"250", "0"}
	once := sync.OnceValues(func() (time.Duration, error) { reads++; return parseDelay(vals[reads-1]) })
	for range 2 {
		h, err := hooksFrom(env(map[string]string{EnvDelayUS: "9999"}), once, 2)
		if err != nil || h.Delay != 250*time.Microsecond {
			t.Fatalf("delay %v, %v; want 250us from the first read (the override must not reach it)", h.Delay, err)
		}
	}
	if reads != 1 {
		t.Errorf("read %d times", reads)
	}
	for _, bad := range []string{"x", "-1", "1.5", "99999999999"} {
		if err := ValidateDelay(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestPauseWaits: a pause lasts its delay, and a short one not a timer tick more (time.Sleep(20us) takes about
// 1 ms on some virtual machines, planting 50 times the slowdown asked for). The bound is loose: the least of
// 20 pauses of 20 us must stay under 500 us.
func TestPauseWaits(t *testing.T) {
	for _, d := range []time.Duration{3 * time.Millisecond, 20 * time.Microsecond} {
		least := time.Hour
		for range 20 {
			start := time.Now()
			Hooks{Delay: d}.Pause()
			took := time.Since(start)
			if took < d {
				t.Fatalf("paused %v for a delay of %v", took, d)
			}
			least = min(least, took)
		}
		if d < time.Millisecond && least > 500*time.Microsecond {
			t.Errorf("the shortest pause for a delay of %v took %v", d, least)
		}
	}
}

// TestArrivalsMissing: the ranks behind the furthest one are missing, by global rank; none when all are even.
func TestArrivalsMissing(t *testing.T) {
	a := NewArrivals(8, 4) // global ranks 8..11
	for _, r := range []int{8, 9, 11, 8, 9, 11} {
		a.Arrive(r)
	}
	if got := a.Missing(); len(got) != 1 || got[0] != 10 {
		t.Errorf("missing %v, want [10]", got)
	}
	a.Arrive(10)
	a.Arrive(10)
	if got := a.Missing(); len(got) != 0 {
		t.Errorf("missing %v, want none", got)
	}
	a.Arrive(9)
	if got := a.Missing(); JoinRanks(got) != "8,10,11" || RanksWord(got) != "ranks" {
		t.Errorf("missing %v", got)
	}
	var none *Arrivals
	none.Arrive(3)
	if none.Missing() != nil {
		t.Error("a nil Arrivals names ranks")
	}
}

// The process's own delay hook: a change of the environment after the first read does not reach it.
func TestProcessDelayIsCached(t *testing.T) {
	first, err := HooksFromEnv(env(nil), 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvDelayUS, "777")
	again, err := HooksFromEnv(env(nil), 2)
	if err != nil || again.Delay != first.Delay || again.Delay == 777*time.Microsecond {
		t.Errorf("delay %v after the environment changed, %v before (%v)", again.Delay, first.Delay, err)
	}
}
