package bench

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
	"syscall"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/harness/report"
	"github.com/rcclx-tests/rcclx-tests/harness/world"
)

const gib = 1 << 30

// MemAvailable reads MemAvailable from /proc/meminfo: the host engine's buffers live in host memory. Tests
// replace it.
var MemAvailable = func() (int64, error) {
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

// CgroupRoot is where the cgroup file systems are mounted and SelfCgroup lists this process's cgroups; tests
// point both at a fake tree.
var (
	CgroupRoot = "/sys/fs/cgroup"
	SelfCgroup = "/proc/self/cgroup"
)

// noCgroupLimit is above any real limit: cgroup v1 reports "no limit" as a number near 2^63.
const noCgroupLimit = 1 << 62

// CgroupRoom is how much more memory this process's cgroups let it use: the least, over its memory cgroup and
// every ancestor, of the limit less the usage (cgroup v2 memory.max and memory.current, v1
// memory.limit_in_bytes and memory.usage_in_bytes). known is false when no cgroup sets a limit.
func CgroupRoom() (room int64, known bool) {
	data, err := os.ReadFile(SelfCgroup)
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
			room = min(room, cgroupChainRoom(CgroupRoot, f[2], "memory.max", "memory.current"))
		case slices.Contains(strings.Split(f[1], ","), "memory"): // v1: the memory controller's hierarchy
			room = min(room, cgroupChainRoom(filepath.Join(CgroupRoot, "memory"), f[2], "memory.limit_in_bytes",
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

// hostRoom is the host memory this process may still take: MemAvailable, or less where a cgroup limits it,
// shared with the other processes of the run on this host (procs, this one included: they plan at the same
// time, before any of them allocates, and share the host's memory and usually its cgroup); and less where this
// process's own limits, RLIMIT_AS and GOMEMLIMIT, leave less.
func hostRoom(procs int) (int64, bool) {
	avail, err := MemAvailable()
	room, limited := CgroupRoom()
	switch {
	case err != nil && !limited:
		room, limited = noCgroupLimit, false
	case err == nil && limited:
		room = min(avail, room)
	case err == nil:
		room, limited = avail, true
	}
	if limited {
		room /= int64(max(procs, 1))
	}
	if own, ok := ownRoom(); ok {
		room, limited = min(room, own), true
	}
	return room, limited
}

// addressSpace reads this process's address-space limit (RLIMIT_AS; ok false when unlimited) and the virtual
// memory it maps now (VmSize); tests replace it.
var addressSpace = func() (limit, used int64, ok bool) {
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_AS, &rl) != nil || rl.Cur > math.MaxInt64 {
		return 0, 0, false
	}
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmSize:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return int64(rl.Cur), kb << 10, err == nil
		}
	}
	return 0, 0, false
}

// ownRoom is what this process's own limits leave: RLIMIT_AS less the address space mapped now, and a
// GOMEMLIMIT the user set less what the Go runtime holds now (the host engine's buffers are Go memory, and a
// heap held under the limit by collecting for ever makes no progress).
func ownRoom() (int64, bool) {
	room, known := int64(math.MaxInt64), false
	if limit, used, ok := addressSpace(); ok {
		// The Go heap maps address space in 64 MiB arenas (72 MiB with their metadata, measured) and keeps
		// what it mapped; garbage between two collections and the pieces of a fragmented heap take addresses
		// too: half is left for them, and one arena more. Measured under ulimit -v 2000000, -g 4: with all of
		// it 3 runs in 3 ended in the runtime's "out of memory", with half 1 in 8.
		room, known = (limit-used)/2-64<<20, true
	}
	if limit := debug.SetMemoryLimit(-1); limit != math.MaxInt64 && limit != heapLimit.Load() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		room, known = min(room, limit-int64(ms.Sys-ms.HeapReleased)), true
	}
	return max(room, 0), known
}

// reserve is the memory left out of a plan for the rest of the process (the Go runtime, engine state): 1/16th
// of what is free, at least 32 MiB and at most 1 GiB.
func reserve(free int64) int64 { return min(max(free/16, 32<<20), gib) }

// fitMemory lowers -e, as nccl-tests does, when the buffers for it would not fit in memory, and keeps the Go
// heap within the host memory the plan counted on.
func (s *Session) fitMemory() error {
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
// memory (hostRoom) go the host engine's buffers, the harness's own copies (hostCopies) and what the engine
// keeps beyond its buffers (collectives.ScratchReporter).
func (s *Session) memoryLimit() (limit int64, known bool, err error) {
	free, err := s.freeMemory()
	if err != nil {
		return 0, false, err
	}
	if free != nil {
		least := slices.Min(free)
		limit, known = (least-reserve(least))/2, true
	}
	if room, ok := hostRoom(s.hostProcesses()); ok {
		keepHeapUnder(room)
		host := s.hostFit(room - reserve(room))
		if !known || host < limit {
			limit = host
		}
		known = true
	}
	if !known {
		return 0, false, nil
	}
	if s.o.RCCL.RotatingTensor == 1 {
		limit -= plan.RotatingBytes // every buffer is that much longer
	}
	limit, err = world.Min(s.world, limit)
	return limit, err == nil, err
}

// hostFit is the largest buffer size whose host memory (hostBytes) fits in budget.
func (s *Session) hostFit(budget int64) int64 {
	if s.hostBytes(0) > budget {
		return 0
	}
	lo, hi := int64(0), max(budget, 0)
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if s.hostBytes(mid) <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// hostBytes is the host memory this process takes for buffers of n bytes: hostCopies of them and the engine's
// scratch for each local rank.
func (s *Session) hostBytes(n int64) int64 {
	total := s.hostCopies() * n
	if sr, ok := s.comm.(collectives.ScratchReporter); ok {
		total += int64(len(s.localRanks())) * sr.HostScratch(s.Coll, n)
	}
	return total
}

// hostProcesses counts the processes of the run on this process's host (by the devices' host names), this
// one included.
func (s *Session) hostProcesses() int {
	mine := map[int]bool{}
	for _, r := range s.localRanks() {
		mine[r] = true
	}
	var host string
	pids := map[int]bool{}
	for _, d := range s.devices {
		if mine[d.Rank] {
			host = d.Hostname
		}
	}
	for _, d := range s.devices {
		if d.Hostname == host {
			pids[d.Pid] = true
		}
	}
	return max(len(pids), 1)
}

// keepHeapUnder sets the Go runtime's soft memory limit to what the process uses now plus the plan's share of
// room (room less the reserve), or leaves a lower one the user set (GOMEMLIMIT): the garbage of each row's
// inputs is then collected before the heap outgrows the plan. Measured on the host engine (-g 4, -d all,
// 64 MiB): without the limit the peak was twice the buffers the plan counts; with it, within 10% of them.
func keepHeapUnder(room int64) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	plan := int64(ms.Sys) + room - reserve(room)
	if now := debug.SetMemoryLimit(-1); now != heapLimit.Load() && now <= plan {
		return
	}
	heapLimit.Store(plan)
	debug.SetMemoryLimit(plan)
}

// heapLimit is the soft memory limit keepHeapUnder last set.
var heapLimit atomic.Int64

// hostCopies counts the buffers of -e bytes this process keeps in host memory: each rank's send and receive
// buffer with the host engine, the poison pattern and, when validating, the inputs, the expected outputs, the
// read-back copies and one more, the next row's inputs while the last row's are still referenced (measured:
// the peak with the soft memory limit was one copy above the others' sum).
func (s *Session) hostCopies() int64 {
	ranks := int64(len(s.localRanks()))
	n := int64(1)
	if s.eng.Name() == "host" {
		n += 2 * ranks
	}
	if s.o.Check > 0 {
		expected := ranks
		if s.Coll.SameOnEveryRank() {
			expected = 1
		}
		n += ranks + expected + 2*int64(len(s.threads)) + 1
	}
	return n
}

// freeMemory asks every local rank's group for its free memory; nil when the groups cannot tell.
func (s *Session) freeMemory() ([]int64, error) {
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
func (s *Session) snapshotMemory() error {
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
func (s *Session) memoryLine() string {
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
		initText, total = report.MemoryString(float64(opened)), report.MemoryString(float64(opened+user+coll))
	}
	return fmt.Sprintf("Initialization %s | User-Allocated %s | Collective %s | Total  %s", initText,
		report.MemoryString(float64(user)), report.MemoryString(float64(coll)), total)
}
