package harness

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

const gib = 1 << 30

// memAvailable reads MemAvailable from /proc/meminfo: the host engine's buffers live in host memory.
var memAvailable = func() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemAvailable:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/meminfo has no MemAvailable")
}

// fitMemory lowers -e, as nccl-tests does, when the buffers for it would not fit in memory.
func (s *session) fitMemory() error {
	s.minBytes, s.maxBytes = s.o.MinBytes, s.o.MaxBytes
	limit, known, err := s.memoryLimit()
	if err != nil || !known || s.maxBytes <= limit {
		return err
	}
	if limit <= 0 {
		return &collectives.RuntimeError{Err: fmt.Errorf("not enough memory for any buffer (limit %d bytes)", limit)}
	}
	s.maxBytes, s.reduced = limit, limit
	s.minBytes = min(s.minBytes, limit)
	return nil
}

// memoryLimit returns the largest -e whose buffers fit, and whether the engine lets us know. With a
// MemoryReporter each rank needs a send and a receive buffer in the free device memory (less a reserve for the
// library); the host engine needs them, and the harness's host copies for validation, in available host memory.
func (s *session) memoryLimit() (limit int64, known bool, err error) {
	free, err := s.freeMemory()
	if err != nil {
		return 0, false, err
	}
	switch {
	case free != nil:
		least := free[0]
		for _, f := range free {
			least = min(least, f)
		}
		limit = (least - min(least/16, gib)) / 2
	case s.eng.Name() == "host":
		avail, err := memAvailable()
		if err != nil {
			return 0, false, nil
		}
		limit = (avail - min(avail/16, gib)) / s.hostCopies()
	default:
		return 0, false, nil
	}
	if s.o.RCCL.RotatingTensor == 1 {
		limit -= rotatingBytes // every buffer is that much longer
	}
	limit, err = worldMin(s.world, limit)
	return limit, err == nil, err
}

// hostCopies counts the buffers of -e bytes this process keeps in host memory with the host engine: each rank's
// send and receive buffer, the poison pattern and, when validating, the inputs, the expected outputs and the
// read-back copies.
func (s *session) hostCopies() int64 {
	ranks := int64(len(s.localRanks()))
	n := 2*ranks + 1
	if s.o.Check > 0 {
		expected := ranks
		if s.a.coll.SameOnEveryRank() {
			expected = 1
		}
		n += ranks + expected + 2*int64(len(s.threads))
	}
	return n
}

// freeMemory asks every local rank's group for its free memory; nil when the groups cannot tell.
func (s *session) freeMemory() ([]int64, error) {
	if _, ok := s.threads[0].group.(collectives.MemoryReporter); !ok {
		return nil, nil
	}
	per := make([][]int64, len(s.threads))
	err := s.team.each(func(t int) error {
		th := s.threads[t]
		for l := range th.ranks {
			f, err := th.group.(collectives.MemoryReporter).FreeMemory(l)
			if err != nil {
				return err
			}
			per[t] = append(per[t], f)
		}
		return nil
	})
	var out []int64
	for _, p := range per {
		out = append(out, p...)
	}
	return out, err
}

// snapshotMemory records every rank's free memory for the -M line.
func (s *session) snapshotMemory() error {
	if s.o.Memory != 1 {
		return nil
	}
	free, err := s.freeMemory()
	if free != nil {
		s.freeMem = append(s.freeMem, free)
	}
	return err
}

// memoryLine is the -M report: memory the harness allocated and memory the collectives took during the sweep
// (largest over ranks). The communicator's own memory is not known: it was taken before the first snapshot.
func (s *session) memoryLine() string {
	if len(s.freeMem) < 3 {
		return ""
	}
	var user, coll int64
	for r := range s.freeMem[0] {
		user = max(user, s.freeMem[0][r]-s.freeMem[1][r])
		coll = max(coll, s.freeMem[1][r]-s.freeMem[2][r])
	}
	return fmt.Sprintf("User-Allocated %s | Collective %s | Total  %s", memoryString(float64(user)),
		memoryString(float64(coll)), memoryString(float64(user+coll)))
}

// worldMin is the smallest v over the processes.
func worldMin(w collectives.World, v int64) (int64, error) {
	all, err := gatherJSON(w, "free memory", v)
	for _, x := range all {
		v = min(v, x)
	}
	return v, err
}
