package gpurt

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
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
		return "", fmt.Errorf("gpu runtime: kernel cache: no RCCLX_TESTS_KERNEL_CACHE, XDG_CACHE_HOME or home directory: %w", err)
	}
	return filepath.Join(h, ".cache", "rcclx-tests", "kernels"), nil
}

type compileFunc func(src, name, arch string, opts ...string) ([]byte, string, error)

// kernelCache keeps compiled kernels in files named by a hash of everything
// that affects the output. An entry is the code object followed by its SHA-256.
type kernelCache struct {
	dir     string
	runtime Runtime
	version string // of the compiler (and runtime), part of the key
	compile compileFunc
}

func (c kernelCache) key(src, name, arch string, opts []string) string {
	h := sha256.New()
	field := func(s string) {
		_ = binary.Write(h, binary.LittleEndian, uint64(len(s)))
		h.Write([]byte(s))
	}
	field("rcclx-tests kernel cache v2")
	field(c.runtime.String())
	field(c.version)
	field(arch)
	field(src)
	field(name)
	for _, o := range opts {
		field(o)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// CompileJob is one module to compile: Compile's arguments.
type CompileJob struct {
	Src, Name, Arch string
	Opts            []string
}

// path is the job's entry: a code object, or an AMDGPU code object (.hsaco) on HIP.
func (c kernelCache) path(j CompileJob) string {
	ext := ".cubin"
	if c.runtime == HIP {
		ext = ".hsaco"
	}
	return filepath.Join(c.dir, c.key(j.Src, j.Name, j.Arch, j.Opts)+ext)
}

// get returns the cached code object or compiles and stores it.
func (c kernelCache) get(src, name, arch string, opts []string) ([]byte, error) {
	images, err := c.getAll([]CompileJob{{src, name, arch, opts}}, 1, nil)
	if err != nil {
		return nil, err
	}
	return images[0], nil
}

// getAll returns every job's code object: cached entries first, then the rest compiled by up to workers goroutines
// at once (NVRTC programs are independent) and stored. announce, when not nil, is told how many jobs compile,
// before they start and only when there are some. After a failed compile no further job starts; the error is
// that of the first failed job in jobs' order and names it. Failing to store is not an error: the cache only
// saves time.
func (c kernelCache) getAll(jobs []CompileJob, workers int, announce func(compiling int)) ([][]byte, error) {
	images := make([][]byte, len(jobs))
	var missing []int
	for i, j := range jobs {
		if cubin, err := readEntry(c.path(j)); err == nil {
			images[i] = cubin
		} else {
			missing = append(missing, i)
		}
	}
	if len(missing) == 0 {
		return images, nil
	}
	if announce != nil {
		announce(len(missing))
	}
	errs := make([]error, len(jobs))
	next := make(chan int, len(missing))
	for _, i := range missing {
		next <- i
	}
	close(next)
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range min(max(workers, 1), len(missing)) {
		wg.Go(func() {
			for i := range next {
				if failed.Load() {
					return
				}
				j := jobs[i]
				cubin, _, err := c.compile(j.Src, j.Name, j.Arch, j.Opts...)
				if err != nil {
					errs[i] = fmt.Errorf("gpu runtime: compiling %s for %s: %w", j.Name, j.Arch, err)
					failed.Store(true)
					return
				}
				_ = writeEntry(c.path(j), cubin)
				images[i] = cubin
			}
		})
	}
	wg.Wait()
	if err := firstError(errs); err != nil {
		return nil, err
	}
	return images, nil
}

func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

var errCorruptEntry = errors.New("gpu runtime: corrupt kernel cache entry")

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

// CompileCached is Compile with an on-disk cache keyed by the runtime, the compiler's version, the full arch,
// the source, name and options. Unreadable or corrupt entries are recompiled and replaced.
func CompileCached(src, name, arch string, opts ...string) ([]byte, error) {
	images, err := CompileAllCached([]CompileJob{{src, name, arch, opts}}, nil)
	if err != nil {
		return nil, err
	}
	return images[0], nil
}

// CompileAllCached is CompileCached for several jobs, those not in the cache compiled in parallel, one per
// CPU. announce is as in kernelCache.getAll: told how many jobs compile, only when some do.
func CompileAllCached(jobs []CompileJob, announce func(compiling int)) ([][]byte, error) {
	if err := LoadCompiler(); err != nil {
		return nil, err
	}
	version, err := CompilerVersion()
	if err != nil {
		return nil, err
	}
	dir, err := kernelCacheDir(os.Getenv, os.UserHomeDir)
	if err != nil {
		return nil, err
	}
	c := kernelCache{dir: dir, runtime: Loaded(), version: version, compile: Compile}
	return c.getAll(jobs, runtime.NumCPU(), announce)
}
