package harness

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

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

// cgroupRoot is where the cgroup file systems are mounted and selfCgroup lists this process's cgroups; tests
// point both at a fake tree.
var (
	cgroupRoot = "/sys/fs/cgroup"
	selfCgroup = "/proc/self/cgroup"
)

// noCgroupLimit is above any real limit: cgroup v1 reports "no limit" as a number near 2^63.
const noCgroupLimit = 1 << 62

// cgroupRoom is how much more memory this process's cgroups let it use: the least, over its memory cgroup and
// every ancestor, of the limit less the usage (cgroup v2 memory.max and memory.current, v1
// memory.limit_in_bytes and memory.usage_in_bytes). known is false when no cgroup sets a limit.
func cgroupRoom() (room int64, known bool) {
	data, err := os.ReadFile(selfCgroup)
	if err != nil {
		return 0, false
	}
	room = noCgroupLimit
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "": // v2: one unified hierarchy
			room = min(room, cgroupChainRoom(cgroupRoot, f[2], "memory.max", "memory.current"))
		case slices.Contains(strings.Split(f[1], ","), "memory"): // v1: the memory controller's hierarchy
			room = min(room, cgroupChainRoom(filepath.Join(cgroupRoot, "memory"), f[2], "memory.limit_in_bytes",
				"memory.usage_in_bytes"))
		}
	}
	return max(room, 0), room < noCgroupLimit
}

// cgroupChainRoom walks from cgroup path under base up to base itself and returns the least limit-less-usage
// of the levels that set a limit. Inside a container the process's path may not exist under the mount (the
// mount is the container's own cgroup): the levels that exist are read.
func cgroupChainRoom(base, path, limitFile, usageFile string) int64 {
	room := int64(noCgroupLimit)
	for dir := filepath.Join(base, path); ; dir = filepath.Dir(dir) {
		limit, err := readCgroupInt(filepath.Join(dir, limitFile))
		if err == nil && limit < noCgroupLimit {
			usage, _ := readCgroupInt(filepath.Join(dir, usageFile))
			room = min(room, limit-usage)
		}
		if len(dir) <= len(base) {
			return room
		}
	}
}

// readCgroupInt reads a cgroup file holding a number ("max" reads as no limit).
func readCgroupInt(name string) (int64, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return 0, err
	}
	v := strings.TrimSpace(string(data))
	if v == "max" {
		return noCgroupLimit, nil
	}
	return strconv.ParseInt(v, 10, 64)
}

// hostRoom is the host memory this process may still take: MemAvailable, or less where a cgroup limits it.
func hostRoom() (int64, bool) {
	avail, err := memAvailable()
	room, limited := cgroupRoom()
	switch {
	case err != nil && !limited:
		return 0, false
	case err != nil:
		return room, true
	case limited:
		return min(avail, room), true
	}
	return avail, true
}

// reserve is the memory left out of a plan for the rest of the process (runtime, engine state): 1/16th of
// what is free, at most 1 GiB.
func reserve(free int64) int64 { return min(free/16, gib) }

// fitMemory lowers -e, as nccl-tests does, when the buffers for it would not fit in memory, and keeps the Go
// heap within the host memory the plan counted on.
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

// memoryLimit returns the largest -e whose buffers fit, and whether it is known. With a MemoryReporter each
// rank needs a send and a receive buffer in the free device memory (less a reserve for the library). In host
// memory (the least of MemAvailable and the cgroup limits) go the host engine's buffers and the harness's own
// copies (hostCopies).
func (s *session) memoryLimit() (limit int64, known bool, err error) {
	free, err := s.freeMemory()
	if err != nil {
		return 0, false, err
	}
	if free != nil {
		least := slices.Min(free)
		limit, known = (least-reserve(least))/2, true
	}
	if room, ok := hostRoom(); ok {
		keepHeapUnder(room)
		host := (room - reserve(room)) / s.hostCopies()
		if !known || host < limit {
			limit = host
		}
		known = true
	}
	if !known {
		return 0, false, nil
	}
	if s.o.RCCL.RotatingTensor == 1 {
		limit -= rotatingBytes // every buffer is that much longer
	}
	limit, err = worldMin(s.world, limit)
	return limit, err == nil, err
}

// keepHeapUnder sets the Go runtime's soft memory limit to what the process uses now plus the plan's share of
// room (room less the reserve), unless the
// user set one (GOMEMLIMIT): the garbage of each row's inputs is then collected before the heap outgrows the
// plan. Measured on the host engine (-g 4, -d all, 64 MiB): without the limit the peak was twice the buffers
// the plan counts; with it, within 10% of them.
func keepHeapUnder(room int64) {
	if now := debug.SetMemoryLimit(-1); now != math.MaxInt64 && now != heapLimit.Load() {
		return
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heapLimit.Store(int64(ms.Sys) + room - reserve(room))
	debug.SetMemoryLimit(heapLimit.Load())
}

// heapLimit is the soft memory limit keepHeapUnder last set.
var heapLimit atomic.Int64

// hostCopies counts the buffers of -e bytes this process keeps in host memory: each rank's send and receive
// buffer with the host engine, the poison pattern and, when validating, the inputs, the expected outputs, the
// read-back copies and one more, the next row's inputs while the last row's are still referenced (measured:
// the peak with the soft memory limit was one copy above the others' sum).
func (s *session) hostCopies() int64 {
	ranks := int64(len(s.localRanks()))
	n := int64(1)
	if s.eng.Name() == "host" {
		n += 2 * ranks
	}
	if s.o.Check > 0 {
		expected := ranks
		if s.a.coll.SameOnEveryRank() {
			expected = 1
		}
		n += ranks + expected + 2*int64(len(s.threads)) + 1
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

// memoryLine is the -M report in nccl-tests' (and rccl-tests') words: the memory opening the communicator
// took (when the engine measured it, OpenMemoryReporter; else N/A), the memory the harness allocated, and
// the memory the collectives took during the sweep, each the largest over this process's ranks, and their
// total (N/A with an unknown part: no number that was not measured).
func (s *session) memoryLine() string {
	if len(s.freeMem) < 3 {
		return ""
	}
	var user, coll int64
	for r := range s.freeMem[0] {
		user = max(user, s.freeMem[0][r]-s.freeMem[1][r])
		coll = max(coll, s.freeMem[1][r]-s.freeMem[2][r])
	}
	initText, total := "N/A", "N/A"
	if r, ok := s.comm.(collectives.OpenMemoryReporter); ok {
		opened := r.OpenMemory()
		initText, total = memoryString(float64(opened)), memoryString(float64(opened+user+coll))
	}
	return fmt.Sprintf("Initialization %s | User-Allocated %s | Collective %s | Total  %s", initText,
		memoryString(float64(user)), memoryString(float64(coll)), total)
}

// worldMin is the smallest v over the processes.
func worldMin(w collectives.World, v int64) (int64, error) {
	all, err := gatherJSON(w, "free memory", v)
	for _, x := range all {
		v = min(v, x)
	}
	return v, err
}
