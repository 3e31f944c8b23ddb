// Package nccl binds the NCCL C ABI (NCCL itself, or RCCL and RCCLX, which export the same functions) through
// purego, without cgo. A Library is one loaded shared object; its methods are the C functions, with result
// codes turned into *Error. NCCL's group state is per OS thread: make a group's calls from one locked thread.
package nccl

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/rcclx-tests/rcclx-tests/pysite"
)

// Library is a loaded NCCL-ABI library.
type Library struct {
	Path    string // what was opened: a name the loader resolved, or a path
	File    string // the file the loader mapped for Path, where /proc/self/maps says
	version int32

	getVersion, getUniqueID, commInitAll, commDestroy, commAbort, commGetAsyncError, getErrorString cfunc
	groupStart, groupEnd, allReduce, allGather, reduceScatter, broadcast, reduce                    cfunc
	// Optional: absent from older or other libraries; calls report collectives.ErrUnsupported.
	getLastError, send, recv, alltoAll, redOpCreatePreMulSum, redOpDestroy, commRegister, commDeregister cfunc
	memAlloc, memFree, gather, scatter, allReduceWithBias                                                cfunc
	kernelTimingDrain                                                                                    cfunc

	// ncclCommInitRank and ncclCommInitRankConfig take the 128-byte unique id by value, which ccall cannot
	// pass. The config variant is optional (NCCL 2.14 and later): nil when absent. The library copies *cfg
	// during the call and keeps no pointer to it.
	commInitRank       func(comm *Comm, nranks int32, id UniqueID, rank int32) Result
	commInitRankConfig func(comm *Comm, nranks int32, id UniqueID, rank int32, cfg *Config) Result
}

// cfunc is one C function: the names it may be exported under (NCCL and RCCL spell some differently) and the
// address of the one found.
type cfunc struct {
	names []string
	addr  uintptr
	fail  func(status int) error // the error of a non-zero status, for a Foreign function
}

func (f *cfunc) name() string { return f.names[0] }

// DefaultNames are the libraries Open tries by name when given none: NCCL, then RCCL (RCCLX builds librccl).
var DefaultNames = []string{"libnccl.so.2", "librccl.so.1"}

// Open loads an NCCL-ABI library. nameOrPath is a path (used alone), a file name (searched for by the dynamic
// loader, then in the known install directories), or "" for DefaultNames. A failure is one line naming every
// path tried and why each failed.
func Open(nameOrPath string) (*Library, error) {
	var tried []string
	for _, c := range Candidates(nameOrPath, os.Getenv, filepath.Glob) {
		lib, err := openOne(c)
		if err == nil {
			return lib, nil
		}
		tried = append(tried, fmt.Sprintf("%s (%s)", c, oneLine(strings.TrimPrefix(err.Error(), c+": "))))
	}
	return nil, fmt.Errorf("nccl: no usable NCCL library; tried %s", strings.Join(tried, "; "))
}

// Candidates lists what Open tries for nameOrPath, in order.
func Candidates(nameOrPath string, getenv func(string) string, glob func(string) ([]string, error)) []string {
	if strings.Contains(nameOrPath, "/") {
		return []string{nameOrPath}
	}
	names := DefaultNames
	if nameOrPath != "" {
		names = []string{nameOrPath}
	}
	var dirs []string
	for _, sp := range pysite.Dirs(getenv, glob) {
		dirs = append(dirs, filepath.Join(sp, "nvidia", "nccl", "lib"))
	}
	dirs = append(dirs, "/opt/rocm/lib")
	out := append([]string(nil), names...)
	for _, name := range names {
		for _, d := range dirs {
			if nameOrPath != "" || installs(d, name) {
				out = append(out, filepath.Join(d, name))
			}
		}
	}
	return out
}

// installs says whether dir is where name is installed by default (NCCL's wheel, or ROCm).
func installs(dir, name string) bool {
	return strings.HasPrefix(name, "librccl") == strings.HasPrefix(dir, "/opt/rocm")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// openOne loads path and resolves its functions; a library lacking a required one is closed again.
func openOne(path string) (*Library, error) {
	runtime.LockOSThread() // dlerror is per thread
	defer runtime.UnlockOSThread()
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, err
	}
	lib, err := Bind(path, func(name string) uintptr {
		a, _ := purego.Dlsym(h, name)
		return a
	})
	if err != nil {
		purego.Dlclose(h)
		return nil, err
	}
	if maps, err := os.ReadFile("/proc/self/maps"); err == nil {
		lib.File = mappedFile(string(maps), path)
	}
	return lib, nil
}

// mappedFile finds the file a bare library name resolved to in a /proc/self/maps listing (libnccl.so.2 is
// usually a link to libnccl.so.2.<minor>.<patch>); a path, or a name not found, is returned as is.
func mappedFile(maps, name string) string {
	if strings.Contains(name, "/") {
		return name
	}
	for _, line := range strings.Split(maps, "\n") {
		if i := strings.IndexByte(line, '/'); i >= 0 && strings.HasPrefix(filepath.Base(line[i:]), name) {
			return line[i:]
		}
	}
	return name
}

// Bind makes a Library of the functions that sym finds by their exported names (0 where there is none) and
// reads its version. Open binds a loaded file so; a test can bind functions written in Go (purego.NewCallback).
func Bind(path string, sym func(name string) uintptr) (*Library, error) {
	lib := &Library{Path: path, File: path}
	if err := lib.resolve(sym); err != nil {
		return nil, err
	}
	if err := lib.call(&lib.getVersion, uintptr(unsafe.Pointer(&lib.version))); err != nil {
		return nil, err
	}
	return lib, nil
}

func (l *Library) resolve(sym func(name string) uintptr) error {
	fn := func(f *cfunc, names ...string) *cfunc { f.names = names; return f }
	required := []*cfunc{
		fn(&l.getVersion, "ncclGetVersion"), fn(&l.getUniqueID, "ncclGetUniqueId"),
		fn(&l.commInitAll, "ncclCommInitAll"), fn(&l.commDestroy, "ncclCommDestroy"),
		fn(&l.commAbort, "ncclCommAbort"), fn(&l.commGetAsyncError, "ncclCommGetAsyncError"),
		fn(&l.getErrorString, "ncclGetErrorString"), fn(&l.groupStart, "ncclGroupStart"),
		fn(&l.groupEnd, "ncclGroupEnd"), fn(&l.allReduce, "ncclAllReduce"), fn(&l.allGather, "ncclAllGather"),
		fn(&l.reduceScatter, "ncclReduceScatter"), fn(&l.broadcast, "ncclBroadcast"), fn(&l.reduce, "ncclReduce"),
	}
	optional := []*cfunc{
		fn(&l.getLastError, "ncclGetLastError"), fn(&l.send, "ncclSend"), fn(&l.recv, "ncclRecv"),
		fn(&l.alltoAll, "ncclAlltoAll", "ncclAllToAll"),
		fn(&l.redOpCreatePreMulSum, "ncclRedOpCreatePreMulSum"), fn(&l.redOpDestroy, "ncclRedOpDestroy"),
		fn(&l.commRegister, "ncclCommRegister"), fn(&l.commDeregister, "ncclCommDeregister"),
		fn(&l.memAlloc, "ncclMemAlloc"), fn(&l.memFree, "ncclMemFree"), fn(&l.gather, "ncclGather"),
		fn(&l.scatter, "ncclScatter"), fn(&l.allReduceWithBias, "ncclAllReduceWithBias"),
		fn(&l.kernelTimingDrain, "ncclKernelTimingDrain"),
	}
	var missing []string
	for _, f := range append(required, optional...) {
		for _, n := range f.names {
			if a := sym(n); a != 0 {
				f.addr = a
				break
			}
		}
	}
	for _, f := range required {
		if f.addr == 0 {
			missing = append(missing, f.name())
		}
	}
	initRank := sym("ncclCommInitRank")
	if initRank == 0 {
		missing = append(missing, "ncclCommInitRank")
	}
	if len(missing) > 0 {
		return fmt.Errorf("loads, but lacks %s: not an NCCL-ABI library", strings.Join(missing, ", "))
	}
	purego.RegisterFunc(&l.commInitRank, initRank)
	if a := sym("ncclCommInitRankConfig"); a != 0 {
		purego.RegisterFunc(&l.commInitRankConfig, a)
	}
	return nil
}

// Has reports whether the library exports the named optional function ("ncclSend", "ncclAlltoAll",
// "ncclGather", "ncclRedOpCreatePreMulSum", "ncclCommInitRankConfig", "ncclAllReduceWithBias" ...), under any of its
// spellings. "ncclCommInitRankConfig" means non-blocking communicators are available.
func (l *Library) Has(name string) bool {
	if name == "ncclCommInitRankConfig" {
		return l.commInitRankConfig != nil
	}
	for _, f := range []*cfunc{&l.getLastError, &l.send, &l.recv, &l.alltoAll, &l.redOpCreatePreMulSum,
		&l.redOpDestroy, &l.commRegister, &l.commDeregister, &l.memAlloc, &l.memFree, &l.gather, &l.scatter,
		&l.allReduceWithBias} {
		for _, n := range f.names {
			if n == name {
				return f.addr != 0
			}
		}
	}
	return false
}

// Version is the library's version code, e.g. 22803 for 2.28.3.
func (l *Library) Version() int { return int(l.version) }
