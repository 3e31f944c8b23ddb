package gpurt

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeCompiler returns a fresh random "CUBIN" per compile, counts calls and the most compiles at once, and
// fails the sources named in failOn (or every source with fail).
type fakeCompiler struct {
	mu       sync.Mutex
	calls    int
	running  int
	most     int
	fail     error
	failOn   map[string]bool
	hold     time.Duration // each compile takes this long, so that compiles overlap
	compiled []string
}

func (f *fakeCompiler) compile(src, name, arch string, opts ...string) ([]byte, string, error) {
	f.mu.Lock()
	f.calls++
	f.running++
	f.most = max(f.most, f.running)
	f.compiled = append(f.compiled, name)
	fail := f.fail
	if f.failOn[name] {
		fail = errors.New("syntax error in " + src)
	}
	f.mu.Unlock()
	time.Sleep(f.hold)
	f.mu.Lock()
	f.running--
	f.mu.Unlock()
	if fail != nil {
		return nil, "log", fail
	}
	return randomBytes(100 + rand.IntN(4000)), "", nil
}

func newTestCache(t *testing.T) (kernelCache, *fakeCompiler) {
	f := &fakeCompiler{}
	return kernelCache{dir: filepath.Join(t.TempDir(), "k"), runtime: CUDA, version: "nvrtc 13.0", compile: f.compile}, f
}

func entryPath(c kernelCache, src, name, arch string, opts []string) string {
	return filepath.Join(c.dir, c.key(src, name, arch, opts)+".cubin")
}

func TestCacheHitAfterMiss(t *testing.T) {
	c, f := newTestCache(t)
	a, err := c.get("src", "k.cu", "sm_90", []string{"-DX=1"})
	if err != nil || f.calls != 1 {
		t.Fatalf("first get: %v, %d compiles", err, f.calls)
	}
	b, err := c.get("src", "k.cu", "sm_90", []string{"-DX=1"})
	if err != nil || f.calls != 1 || !bytes.Equal(a, b) {
		t.Fatalf("second get: %v, %d compiles, same=%v", err, f.calls, bytes.Equal(a, b))
	}
	ents, _ := os.ReadDir(c.dir)
	if len(ents) != 1 || strings.HasPrefix(ents[0].Name(), ".tmp") {
		t.Fatalf("cache dir holds %v, want one entry and no temporary files", ents)
	}
}

func TestCacheKeyCoversInputs(t *testing.T) {
	c, _ := newTestCache(t)
	base := c.key("src", "k.cu", "sm_90", []string{"-DX=1"})
	other := c
	other.version = "nvrtc 13.1"
	hip := c
	hip.runtime = HIP
	variants := map[string]string{
		"src":     c.key("src2", "k.cu", "sm_90", []string{"-DX=1"}),
		"name":    c.key("src", "j.cu", "sm_90", []string{"-DX=1"}),
		"arch":    c.key("src", "k.cu", "sm_100", []string{"-DX=1"}),
		"opts":    c.key("src", "k.cu", "sm_90", []string{"-DX=2"}),
		"no opts": c.key("src", "k.cu", "sm_90", nil),
		"split":   c.key("src", "k.cu", "sm_90", []string{"-DX", "=1"}),
		"shift":   c.key("sr", "ck.cu", "sm_90", []string{"-DX=1"}),
		"version": other.key("src", "k.cu", "sm_90", []string{"-DX=1"}),
		"runtime": hip.key("src", "k.cu", "sm_90", []string{"-DX=1"}),
		"flags":   c.key("src", "k.cu", "sm_90:x", []string{"-DX=1"}),
	}
	for what, k := range variants {
		if k == base {
			t.Errorf("changing %s keeps the key", what)
		}
	}
	if c.key("src", "k.cu", "sm_90", []string{"-DX=1"}) != base {
		t.Error("key is not deterministic")
	}
}

func TestCacheRecompilesBadEntries(t *testing.T) {
	damage := map[string]func(path string){
		"flipped byte": func(p string) {
			b, _ := os.ReadFile(p)
			b[rand.IntN(len(b))] ^= 0x10
			os.WriteFile(p, b, 0o644)
		},
		"truncated": func(p string) {
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)/2], 0o644)
		},
		"empty": func(p string) { os.WriteFile(p, nil, 0o644) },
	}
	for what, hurt := range damage {
		c, f := newTestCache(t)
		first, _ := c.get("s", "n", "sm_90", nil)
		hurt(entryPath(c, "s", "n", "sm_90", nil))
		got, err := c.get("s", "n", "sm_90", nil)
		if err != nil || f.calls != 2 || bytes.Equal(got, first) {
			t.Errorf("%s: err=%v compiles=%d (want a fresh compile)", what, err, f.calls)
		}
		if again, _ := c.get("s", "n", "sm_90", nil); f.calls != 2 || !bytes.Equal(again, got) {
			t.Errorf("%s: the recompiled entry was not stored", what)
		}
	}
}

func TestCacheUnreadableEntryStillCompiles(t *testing.T) {
	c, f := newTestCache(t)
	p := entryPath(c, "s", "n", "sm_90", nil)
	if err := os.MkdirAll(p, 0o755); err != nil { // a directory where the file belongs
		t.Fatal(err)
	}
	for range 2 {
		if b, err := c.get("s", "n", "sm_90", nil); err != nil || len(b) == 0 {
			t.Fatalf("get with an unreadable entry: %v", err)
		}
	}
	if f.calls != 2 {
		t.Errorf("compiles = %d, want 2 (entry can neither be read nor replaced)", f.calls)
	}
	ents, _ := os.ReadDir(c.dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".tmp") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestCacheCompileErrorNotStored(t *testing.T) {
	c, f := newTestCache(t)
	f.fail = errors.New("syntax error")
	if _, err := c.get("s", "n", "sm_90", nil); err == nil || !strings.Contains(err.Error(), "syntax error") {
		t.Fatalf("compile error lost: %v", err)
	}
	if _, err := os.Stat(entryPath(c, "s", "n", "sm_90", nil)); !os.IsNotExist(err) {
		t.Errorf("a failed compile left an entry: %v", err)
	}
}

func TestKernelCacheDir(t *testing.T) {
	home := func() (string, error) { return "/home/u", nil }
	noHome := func() (string, error) { return "", errors.New("no home") }
	cases := []struct {
		env  map[string]string
		home func() (string, error)
		want string
	}{
		{map[string]string{"RCCLX_TESTS_KERNEL_CACHE": "/c", "XDG_CACHE_HOME": "/x"}, home, "/c"},
		{map[string]string{"XDG_CACHE_HOME": "/x"}, home, "/x/rcclx-tests/kernels"},
		{nil, home, "/home/u/.cache/rcclx-tests/kernels"},
		{nil, noHome, ""},
	}
	for _, c := range cases {
		got, err := kernelCacheDir(func(k string) string { return c.env[k] }, c.home)
		if got != c.want || (c.want == "") != (err != nil) {
			t.Errorf("env %v: %q, %v; want %q", c.env, got, err, c.want)
		}
	}
}

func TestNVRTCCandidates(t *testing.T) {
	root := t.TempDir()
	mk := func(p string) string {
		full := filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		os.WriteFile(full, nil, 0o644)
		return full
	}
	venvLib := mk("venv/lib/python3.12/site-packages/nvidia/cu13/lib/libnvrtc.so.13")
	mk("venv/lib/python3.12/site-packages/nvidia/cu13/lib/libnvrtc-builtins.so.13.0")
	userLib := mk("home/.local/lib/python3.11/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12")
	env := map[string]string{"RCCLX_TESTS_LIBNVRTC": "/opt/nvrtc.so", "HOME": filepath.Join(root, "home"),
		"VIRTUAL_ENV": filepath.Join(root, "venv")}
	c := nvrtcCandidates(func(k string) string { return env[k] }, filepath.Glob)
	if c[0] != "/opt/nvrtc.so" || c[1] != "libnvrtc.so.13" {
		t.Errorf("override and plain name must come first: %q", c)
	}
	joined := strings.Join(c, "\n")
	for _, want := range []string{venvLib, userLib, "/usr/local/cuda/lib64/libnvrtc.so.13"} {
		if !strings.Contains(joined, want) {
			t.Errorf("missing %s in\n%s", want, joined)
		}
	}
	if strings.Contains(joined, "builtins") {
		t.Errorf("builtins library is not NVRTC itself:\n%s", joined)
	}
}

// jobs returns n jobs that differ in name and options only, as the modules of one source do.
func jobs(n int) []CompileJob {
	out := make([]CompileJob, n)
	for i := range out {
		out[i] = CompileJob{Src: "src", Name: fmt.Sprintf("k%d.cu", i), Arch: "sm_90", Opts: []string{fmt.Sprintf("-DK=%d", i)}}
	}
	return out
}

func TestGetAllCompilesMissingInParallel(t *testing.T) {
	c, f := newTestCache(t)
	f.hold = 20 * time.Millisecond
	js := jobs(12)
	// Three entries are in the cache already: only the other nine compile.
	warm, err := c.getAll(js[:3], 1, nil)
	if err != nil || f.calls != 3 || f.most != 1 {
		t.Fatalf("warming: %v, %d compiles, %d at once", err, f.calls, f.most)
	}
	var announced []int
	images, err := c.getAll(js, 4, func(n int) { announced = append(announced, n) })
	if err != nil {
		t.Fatal(err)
	}
	if f.calls != 12 || f.most < 2 || f.most > 4 {
		t.Errorf("%d compiles, at most %d at once; want 12 in all, 2 to 4 at once", f.calls, f.most)
	}
	if len(announced) != 1 || announced[0] != 9 {
		t.Errorf("announced %v, want [9]", announced)
	}
	for i := range 3 {
		if !bytes.Equal(images[i], warm[i]) {
			t.Errorf("job %d: the cached image was not returned", i)
		}
	}
	// Every image is stored under its own key: a second call compiles nothing and says nothing.
	again, err := c.getAll(js, 4, func(n int) { t.Errorf("announced %d with every entry cached", n) })
	if err != nil || f.calls != 12 {
		t.Fatalf("warm call: %v, %d compiles", err, f.calls)
	}
	for i := range js {
		if len(images[i]) == 0 || !bytes.Equal(again[i], images[i]) {
			t.Errorf("job %d: image differs between the cold and the warm call", i)
		}
	}
}

func TestGetAllErrorNamesTheKernel(t *testing.T) {
	c, f := newTestCache(t)
	js := jobs(40)
	f.failOn = map[string]bool{"k7.cu": true, "k30.cu": true}
	_, err := c.getAll(js, 2, nil)
	if err == nil || !strings.Contains(err.Error(), "k7.cu") || !strings.Contains(err.Error(), "sm_90") ||
		!strings.Contains(err.Error(), "syntax error") || strings.Contains(err.Error(), "k30.cu") {
		t.Fatalf("error = %v; want the first failed kernel (k7.cu) named with the compiler's message", err)
	}
	if f.calls == len(js) {
		t.Errorf("all %d jobs compiled after a failure; later jobs should not start", f.calls)
	}
	for _, j := range js {
		_, err := os.Stat(c.path(j))
		if stored := err == nil; stored && f.failOn[j.Name] {
			t.Errorf("%s failed but has an entry", j.Name)
		}
	}
}

func TestGetAllSingleWorkerIsSerial(t *testing.T) {
	c, f := newTestCache(t)
	f.hold = time.Millisecond
	if _, err := c.getAll(jobs(5), 1, nil); err != nil || f.most != 1 || f.calls != 5 {
		t.Fatalf("%v, %d compiles, %d at once; want 5 one at a time", err, f.calls, f.most)
	}
}
