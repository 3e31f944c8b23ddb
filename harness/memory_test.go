package harness

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/bench"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/internal/syncbuf"
)

// fakeCgroups writes a cgroup tree under a temporary directory: files maps paths below the mount to contents,
// self is what /proc/self/cgroup would say. It points the package at it until the test ends.
func fakeCgroups(t *testing.T, self string, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "self"), []byte(self), 0o644); err != nil {
		t.Fatal(err)
	}
	savedRoot, savedSelf := bench.CgroupRoot, bench.SelfCgroup
	bench.CgroupRoot, bench.SelfCgroup = root, filepath.Join(root, "self")
	t.Cleanup(func() { bench.CgroupRoot, bench.SelfCgroup = savedRoot, savedSelf })
	return root
}

const mib = 1 << 20

// TestCgroupRoom: the room is the least limit-less-usage over the process's cgroup and its ancestors, in
// cgroup v2 and v1 layouts, with "max" and v1's huge "no limit" ignored.
func TestCgroupRoom(t *testing.T) {
	for _, c := range []struct {
		name, self string
		files      map[string]string
		room       int64 // -1: no limit
	}{
		{"v2 nested", "0::/a/b\n", map[string]string{"a/memory.max": "1073741824", "a/memory.current": "104857600",
			"a/b/memory.max": "536870912", "a/b/memory.current": "419430400"}, 112 * mib},
		{"v2 parent tighter", "0::/a/b\n", map[string]string{"a/memory.max": "314572800", "a/memory.current": "262144000",
			"a/b/memory.max": "max", "a/b/memory.current": "5"}, 50 * mib},
		{"v2 unlimited", "0::/a\n", map[string]string{"a/memory.max": "max", "a/memory.current": "7"}, -1},
		{"v2 container", "0::/docker/abc\n", map[string]string{"memory.max": "4294967296", "memory.current": "1073741824"},
			3 << 30},
		{"v1", "12:pids:/x\n4:memory:/x\n1:name=systemd:/x\n", map[string]string{
			"memory/memory.limit_in_bytes": "9223372036854771712", "memory/memory.usage_in_bytes": "9",
			"memory/x/memory.limit_in_bytes": "314572800", "memory/x/memory.usage_in_bytes": "104857600"}, 200 * mib},
		{"v1 joint controllers", "3:cpu,memory:/y\n", map[string]string{
			"memory/y/memory.limit_in_bytes": "104857600", "memory/y/memory.usage_in_bytes": "0"}, 100 * mib},
		{"over the limit", "0::/a\n", map[string]string{"a/memory.max": "100", "a/memory.current": "200"}, 0},
		{"no controller files", "0::/a\n", nil, -1},
	} {
		fakeCgroups(t, c.self, c.files)
		room, known := bench.CgroupRoom()
		if want := c.room; known != (want >= 0) || (known && room != want) {
			t.Errorf("%s: room %d known %v, want %d", c.name, room, known, want)
		}
	}
}

// TestMemoryPlanHoldsUnderCgroup: in a (fake) memory cgroup with 300 MiB of room a sweep up to 1 GiB on 4
// host ranks shrinks -e with nccl-tests' line, and the process's real peak memory stays within the limit. The
// fake cgroup's usage is what a small run of the same binary peaks at, as a real cgroup would count it.
func TestMemoryPlanHoldsUnderCgroup(t *testing.T) {
	p := startChild(t, "all_reduce", nil, "--engine", "host", "-b", "8", "-e", "8", "-n", "1")
	if code, _ := p.exit(t, 30*time.Second); code != exit.OK {
		t.Fatalf("baseline run: exit %d: %s", code, p.stderr.String())
	}
	base := p.cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	limit := base + 300*mib
	root := fakeCgroups(t, "0::/job\n", map[string]string{"job/memory.max": strconv.FormatInt(limit, 10),
		"job/memory.current": strconv.FormatInt(base, 10)})
	p = startChild(t, "all_reduce", []string{childCgroupEnv + "=" + root}, "--engine", "host", "-g", "4", "-b", "1M",
		"-e", "1G", "-f", "4", "-n", "2", "-w", "1")
	code, _ := p.exit(t, 120*time.Second)
	m := regexp.MustCompile(`(?m)^#\n# Reducing maxBytes to (\d+) due to memory limitation\n#\n`).FindStringSubmatch(p.stdout.String())
	rows := tableRows(p.stdout.String())
	if code != exit.OK || m == nil || len(rows) == 0 {
		t.Fatalf("exit %d\n%s%s", code, p.stdout.String(), p.stderr.String())
	}
	peak := p.cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	t.Logf("-e reduced to %s, peak RSS %d MiB of %d (%d before the run)", m[1], peak/mib, limit/mib, base/mib)
	if peak > limit {
		t.Errorf("peak RSS %d MiB above the %d MiB limit", peak/mib, limit/mib)
	}

	// No room at all: one line, before anything is allocated.
	root = fakeCgroups(t, "0::/job\n", map[string]string{"job/memory.max": "1000", "job/memory.current": "1000"})
	p = startChild(t, "all_reduce", []string{childCgroupEnv + "=" + root}, "--engine", "host", "-g", "2")
	code, _ = p.exit(t, 30*time.Second)
	if code != exit.Runtime || strings.Count(p.stderr.String(), "\n") != 1 || !strings.Contains(p.stderr.String(), "not enough memory") {
		t.Errorf("exit %d, stderr %q", code, p.stderr.String())
	}
}

// TestHeaderBeforeAllocation: the header, the "# Using devices" lines and the "Reducing maxBytes" line are
// out before the first buffer is allocated.
func TestHeaderBeforeAllocation(t *testing.T) {
	fakeCgroups(t, "0::/job\n", map[string]string{"job/memory.max": strconv.Itoa(200 * mib), "job/memory.current": "0"})
	seed := rand.Uint64()
	out := &syncbuf.Buffer{}
	p := &probe{Engine: newFake(seed)}
	var before []string
	p.beforeAlloc = func() { before = append(before, out.String()) }
	r := runWith(t, collectives.AllGather, seedArgs(seed, "-g", "2", "-b", "1K", "-e", "4G", "-f", "1024", "-n", "1"),
		testSource(p), func(a *app) { a.stdout = out })
	if r.code != exit.OK || len(before) == 0 {
		t.Fatalf("exit %d, %d allocations\n%s%s", r.code, len(before), out.String(), r.stderr)
	}
	for _, want := range []string{"# Collective test starting: all_gather_perf", "# Using devices\n#  Rank  0 ", "#  Rank  1 Group",
		"# Reducing maxBytes to "} {
		if !strings.Contains(before[0], want) {
			t.Errorf("%q not printed before the first allocation; printed:\n%s\nin the end:\n%s", want, before[0], out.String())
		}
	}
}
