package cuda

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeCompiler returns a fresh random "CUBIN" per compile and counts calls.
type fakeCompiler struct {
	calls int
	fail  error
}

func (f *fakeCompiler) compile(src, name string, arch int, opts ...string) ([]byte, string, error) {
	f.calls++
	if f.fail != nil {
		return nil, "log", f.fail
	}
	return randomBytes(100 + rand.IntN(4000)), "", nil
}

func newTestCache(t *testing.T) (kernelCache, *fakeCompiler) {
	f := &fakeCompiler{}
	return kernelCache{dir: filepath.Join(t.TempDir(), "k"), version: "nvrtc 13.0", compile: f.compile}, f
}

func entryPath(c kernelCache, src, name string, arch int, opts []string) string {
	return filepath.Join(c.dir, c.key(src, name, arch, opts)+".cubin")
}

func TestCacheHitAfterMiss(t *testing.T) {
	c, f := newTestCache(t)
	a, err := c.get("src", "k.cu", 90, []string{"-DX=1"})
	if err != nil || f.calls != 1 {
		t.Fatalf("first get: %v, %d compiles", err, f.calls)
	}
	b, err := c.get("src", "k.cu", 90, []string{"-DX=1"})
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
	base := c.key("src", "k.cu", 90, []string{"-DX=1"})
	other := c
	other.version = "nvrtc 13.1"
	variants := map[string]string{
		"src":     c.key("src2", "k.cu", 90, []string{"-DX=1"}),
		"name":    c.key("src", "j.cu", 90, []string{"-DX=1"}),
		"arch":    c.key("src", "k.cu", 100, []string{"-DX=1"}),
		"opts":    c.key("src", "k.cu", 90, []string{"-DX=2"}),
		"no opts": c.key("src", "k.cu", 90, nil),
		"split":   c.key("src", "k.cu", 90, []string{"-DX", "=1"}),
		"shift":   c.key("sr", "ck.cu", 90, []string{"-DX=1"}),
		"version": other.key("src", "k.cu", 90, []string{"-DX=1"}),
	}
	for what, k := range variants {
		if k == base {
			t.Errorf("changing %s keeps the key", what)
		}
	}
	if c.key("src", "k.cu", 90, []string{"-DX=1"}) != base {
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
		first, _ := c.get("s", "n", 90, nil)
		hurt(entryPath(c, "s", "n", 90, nil))
		got, err := c.get("s", "n", 90, nil)
		if err != nil || f.calls != 2 || bytes.Equal(got, first) {
			t.Errorf("%s: err=%v compiles=%d (want a fresh compile)", what, err, f.calls)
		}
		if again, _ := c.get("s", "n", 90, nil); f.calls != 2 || !bytes.Equal(again, got) {
			t.Errorf("%s: the recompiled entry was not stored", what)
		}
	}
}

func TestCacheUnreadableEntryStillCompiles(t *testing.T) {
	c, f := newTestCache(t)
	p := entryPath(c, "s", "n", 90, nil)
	if err := os.MkdirAll(p, 0o755); err != nil { // a directory where the file belongs
		t.Fatal(err)
	}
	for range 2 {
		if b, err := c.get("s", "n", 90, nil); err != nil || len(b) == 0 {
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
	if _, err := c.get("s", "n", 90, nil); err == nil || !strings.Contains(err.Error(), "syntax error") {
		t.Fatalf("compile error lost: %v", err)
	}
	if _, err := os.Stat(entryPath(c, "s", "n", 90, nil)); !os.IsNotExist(err) {
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
