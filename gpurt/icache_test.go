package gpurt

import (
	"bytes"
	"debug/elf"
	"errors"
	"testing"

	"github.com/ebitengine/purego"
)

// The flush kernel compiles with Debian's real hiprtc for gfx90a through the compile path and cache the engines
// use, into an AMDGPU code object that defines it; on CUDA there is none to load.
func TestICacheFlushCompilesForGfx90a(t *testing.T) {
	if Loaded() != None {
		t.Skipf("%s is bound in this process", Loaded().Title())
	}
	sym := openDebianHIP(t)
	hipInit := purego.NewCallback(func(uintptr) uintptr { return 0 }) // no AMD GPU to initialize
	err := Bind(HIP, debianHIP, func(name string) uintptr {
		if name == "hipInit" {
			return hipInit
		}
		return sym(name)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(Unload)
	t.Setenv("RCCLX_TESTS_KERNEL_CACHE", t.TempDir())
	image, err := CompileCached(icacheSource, "rcclx_icache_flush.cpp", "gfx90a")
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(bytes.NewReader(image))
	if err != nil {
		t.Fatalf("not an ELF: %v", err)
	}
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range syms {
		found = found || s.Name == "rcclx_icache_flush"
	}
	if f.Machine != elf.EM_AMDGPU || !found {
		t.Errorf("code object for %s without rcclx_icache_flush (%d symbols)", f.Machine, len(syms))
	}
	Unload()
	if _, err := LoadICacheFlush(0); !errors.Is(err, ErrNoICacheFlush) {
		t.Errorf("LoadICacheFlush without HIP: %v", err)
	}
}
