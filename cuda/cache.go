package cuda

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// kernelCacheDir is $RCCLX_TESTS_KERNEL_CACHE, else $XDG_CACHE_HOME/rcclx-tests/kernels,
// else ~/.cache/rcclx-tests/kernels.
func kernelCacheDir(getenv func(string) string, home func() (string, error)) (string, error) {
	if d := getenv("RCCLX_TESTS_KERNEL_CACHE"); d != "" {
		return d, nil
	}
	if d := getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "rcclx-tests", "kernels"), nil
	}
	h, err := home()
	if err != nil {
		return "", fmt.Errorf("cuda: kernel cache: no RCCLX_TESTS_KERNEL_CACHE, XDG_CACHE_HOME or home directory: %w", err)
	}
	return filepath.Join(h, ".cache", "rcclx-tests", "kernels"), nil
}

type compileFunc func(src, name string, arch int, opts ...string) ([]byte, string, error)

// kernelCache keeps compiled kernels in files named by a hash of everything
// that affects the output. An entry is the CUBIN followed by its SHA-256.
type kernelCache struct {
	dir     string
	version string // of the compiler, part of the key
	compile compileFunc
}

func (c kernelCache) key(src, name string, arch int, opts []string) string {
	h := sha256.New()
	field := func(s string) {
		_ = binary.Write(h, binary.LittleEndian, uint64(len(s)))
		h.Write([]byte(s))
	}
	field("rcclx-tests kernel cache v1")
	field(src)
	field(name)
	field(fmt.Sprint(arch))
	field(c.version)
	for _, o := range opts {
		field(o)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// get returns the cached CUBIN or compiles and stores it. Failing to store
// is not an error: the cache only saves time.
func (c kernelCache) get(src, name string, arch int, opts []string) ([]byte, error) {
	path := filepath.Join(c.dir, c.key(src, name, arch, opts)+".cubin")
	if cubin, err := readEntry(path); err == nil {
		return cubin, nil
	}
	cubin, _, err := c.compile(src, name, arch, opts...)
	if err != nil {
		return nil, err
	}
	_ = writeEntry(path, cubin)
	return cubin, nil
}

var errCorruptEntry = errors.New("cuda: corrupt kernel cache entry")

func readEntry(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) < sha256.Size {
		return nil, errCorruptEntry
	}
	payload, sum := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if want := sha256.Sum256(payload); !bytes.Equal(sum, want[:]) {
		return nil, errCorruptEntry
	}
	return payload, nil
}

// writeEntry writes a temporary file and renames it into place, so readers
// see either no entry or a whole one.
func writeEntry(path string, payload []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	sum := sha256.Sum256(payload)
	_, werr := f.Write(append(payload[:len(payload):len(payload)], sum[:]...))
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

// CompileCached is Compile with an on-disk cache keyed by the source, name,
// arch, options and NVRTC version. Unreadable or corrupt entries are
// recompiled and replaced.
func CompileCached(src, name string, arch int, opts ...string) ([]byte, error) {
	if err := LoadNVRTC(); err != nil {
		return nil, err
	}
	major, minor, err := NVRTCVersion()
	if err != nil {
		return nil, err
	}
	dir, err := kernelCacheDir(os.Getenv, os.UserHomeDir)
	if err != nil {
		return nil, err
	}
	c := kernelCache{dir: dir, version: fmt.Sprintf("nvrtc %d.%d", major, minor), compile: Compile}
	return c.get(src, name, arch, opts)
}
