package hostengine

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// Ranks in several processes of one machine meet in shared memory. Every process owns one arena, a file in
// shmDir that it creates, maps and grows; every other process maps it too, the files are unlinked once all
// are mapped or the set-up fails (every process removes every file then, so that a process killed during the
// set-up leaves nothing behind either), and the owner keeps growing the file through its
// descriptor. An arena starts with a header that holds its ranks' flags, words updated with sync/atomic:
//
//	the run's abort record (read from process 0's arena only)
//	per rank: progress (own cache line), the doorbell, its sleepers count and the calls the rank entered
//	(own cache line), the exposed descriptor (own cache line), the barrier mailbox (n words)
//
// and then the memory peers read: every buffer Alloc returns and every peer-visible buffer of the algorithms.
// Peers find a rank's exposed memory from its descriptor, offsets into its owner's arena, which each process
// turns into slices of its own mapping of that arena. A waiting rank sleeps on its doorbell, a futex word that
// every publish to it increments (wait.go), for at most a growing nap, and after each nap also looks at the
// abort record and at the World (a process that died), so that a failure anywhere ends every process's calls.

// shmDir holds the arenas; a variable for tests.
var shmDir = "/dev/shm"

const (
	arenaMagic   = 0x31424d4853584352 // "RCXSHMB1" as a little-endian word
	abortAt      = 64                 // the abort record: state, kind, rank, after, text length, text
	abortTextAt  = abortAt + 64
	abortTextMax = 960
	ranksAt      = abortTextAt + abortTextMax
	descWords    = 8 // offset and length of in, partial, out and scales
	pageBytes    = 4096
	growStep     = 1 << 20 // an arena grows by at least this much
)

// Abort record states and kinds.
const (
	abortNone = iota
	abortWriting
	abortPosted
	kindTimeout = 1
	kindOther   = 2
)

// watcher is a World that notices a process that died (bootstrap's World): Err is nil while every process is
// connected.
type watcher interface{ Err() error }

// aborter is a World that can end the run for every process (bootstrap's World): processes that wait outside
// the engine learn of an error here as those inside it do.
type aborter interface{ Abort(err error) }

// shared is the cross-process part of a communicator.
type shared struct {
	world  collectives.World
	watch  watcher // nil when the World cannot tell
	proc   int     // this process's index in the World
	nlocal int     // ranks per process
	arenas []*arena
	remote atomic.Pointer[error] // the abort another process posted, once seen
	// arrivals counts every rank's calls in the arenas, so that a timeout another process posted names the
	// ranks that never arrived here too.
	arrivals *collectives.Arrivals
}

// arena is one process's shared memory as this process maps it.
type arena struct {
	mem  []byte   // the whole reserved mapping; bytes past the file's size must not be touched
	file *os.File // owner only: grows the file

	mu   sync.Mutex // owner: allocation
	size int64      // owner: the file's size
	top  int64      // owner: the end of the highest allocation
	free []span     // owner: released spans, by offset
}

type span struct{ off, len int64 }

// rankStride is the header bytes of one rank: progress, doorbell, descriptor and a mailbox of n words, each on
// cache lines of its own.
func rankStride(n int) int64 { return 3*64 + (int64(n)*8+63)/64*64 }

func headerBytes(n, nlocal int) int64 {
	return (ranksAt + int64(nlocal)*rankStride(n) + pageBytes - 1) / pageBytes * pageBytes
}

func (a *arena) word(off int64) *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Pointer(&a.mem[off])) }

func (a *arena) words(off int64, n int) []atomic.Uint64 {
	return unsafe.Slice((*atomic.Uint64)(unsafe.Pointer(&a.mem[off])), n)
}

// mapLength is how much address space each arena's mapping reserves: the size of shmDir's file system, which
// no arena can outgrow.
func mapLength() (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(shmDir, &st); err != nil {
		return 0, fmt.Errorf("host engine: %s: %v (ranks in several processes share memory there)", shmDir, err)
	}
	n := int64(st.Blocks) * int64(st.Bsize)
	return (n + pageBytes - 1) / pageBytes * pageBytes, nil
}

func mapFile(f *os.File, length int64) ([]byte, error) {
	return syscall.Mmap(int(f.Fd()), 0, int(length), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
}

// grow extends the owner's file to at least size bytes, allocating the memory now: a full file system is an
// error here rather than a SIGBUS on first touch.
func (a *arena) grow(size int64) error {
	if size <= a.size {
		return nil
	}
	if size > int64(len(a.mem)) {
		return fmt.Errorf("host engine: needs %d bytes of shared memory in %s, which holds %d: enlarge it (docker --shm-size) or lower -e",
			size, shmDir, len(a.mem))
	}
	size = min(max(size, a.size+growStep), int64(len(a.mem)))
	if err := reserve(a.file, a.size, size-a.size); err != nil {
		if errors.Is(err, syscall.ENOSPC) {
			return fmt.Errorf("host engine: %s is full (%d more bytes wanted): enlarge it (docker --shm-size) or lower -e", shmDir, size-a.size)
		}
		return fmt.Errorf("host engine: growing shared memory in %s: %v", shmDir, err)
	}
	a.size = size
	return nil
}

// alloc returns n zeroed bytes of the owner's arena, bufferAlign-aligned.
func (a *arena) alloc(n int64) ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	need := (max(n, 1) + bufferAlign - 1) / bufferAlign * bufferAlign
	for i, s := range a.free {
		if s.len >= need {
			if s.len == need {
				a.free = append(a.free[:i], a.free[i+1:]...)
			} else {
				a.free[i] = span{s.off + need, s.len - need}
			}
			b := a.mem[s.off : s.off+n : s.off+n]
			clear(b)
			return b, nil
		}
	}
	if err := a.grow(a.top + need); err != nil {
		return nil, err
	}
	off := a.top
	a.top += need
	return a.mem[off : off+n : off+n], nil // fresh file pages are zero
}

// release returns b, which alloc returned, to the owner's arena.
func (a *arena) release(b []byte) {
	off, ok := a.offset(b)
	if !ok || cap(b) == 0 {
		return
	}
	need := (max(int64(cap(b)), 1) + bufferAlign - 1) / bufferAlign * bufferAlign
	a.mu.Lock()
	defer a.mu.Unlock()
	i := sort.Search(len(a.free), func(i int) bool { return a.free[i].off > off })
	a.free = append(a.free, span{})
	copy(a.free[i+1:], a.free[i:])
	a.free[i] = span{off, need}
	// coalesce with the neighbours
	if i+1 < len(a.free) && a.free[i].off+a.free[i].len == a.free[i+1].off {
		a.free[i].len += a.free[i+1].len
		a.free = append(a.free[:i+1], a.free[i+2:]...)
	}
	if i > 0 && a.free[i-1].off+a.free[i-1].len == a.free[i].off {
		a.free[i-1].len += a.free[i].len
		a.free = append(a.free[:i], a.free[i+1:]...)
	}
}

// offset is where b starts in the arena, and whether it lies in it.
func (a *arena) offset(b []byte) (int64, bool) {
	if cap(b) == 0 {
		return 0, true
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(a.mem)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if p < base || p-base+uintptr(cap(b)) > uintptr(len(a.mem)) {
		return 0, false
	}
	return int64(p - base), true
}

// encode writes e into a rank's descriptor; every slice must lie in the owner's arena (memory from c.alloc).
func (a *arena) encode(desc []atomic.Uint64, e exposed) {
	scales := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(e.scales))), 4*len(e.scales))
	for i, b := range [][]byte{e.in, e.partial, e.out, scales} {
		off, ok := a.offset(b)
		if !ok {
			panic("host engine: a rank exposed memory outside its process's shared arena (allocate with grow or alloc)")
		}
		desc[2*i].Store(uint64(off))
		desc[2*i+1].Store(uint64(len(b)))
	}
}

// decode is the exposed memory a descriptor describes, as this process maps the owner's arena.
func (a *arena) decode(desc []atomic.Uint64) exposed {
	var b [4][]byte
	for i := range b {
		off, n := int64(desc[2*i].Load()), int64(desc[2*i+1].Load())
		b[i] = a.mem[off : off+n : off+n]
	}
	return exposed{in: b[0], partial: b[1], out: b[2], scales: as[float32](b[3])}
}

// post records err as the run's abort, unless another process or rank posted first.
func (s *shared) post(err error) {
	a := s.arenas[0]
	state := a.word(abortAt)
	if !state.CompareAndSwap(abortNone, abortWriting) {
		return
	}
	kind, rank, after, text := uint64(kindOther), uint64(0), uint64(0), err.Error()
	var te *collectives.TimeoutError
	if errors.As(err, &te) {
		kind, rank, after, text = kindTimeout, uint64(te.Rank), uint64(te.After), te.Phase
	}
	n := copy(a.mem[abortTextAt:abortTextAt+abortTextMax], text)
	a.word(abortAt + 8).Store(kind)
	a.word(abortAt + 16).Store(rank)
	a.word(abortAt + 24).Store(after)
	a.word(abortAt + 32).Store(uint64(n))
	state.Store(abortPosted)
	if ab, ok := s.world.(aborter); ok {
		ab.Abort(err)
	}
}

// failure is why the run must stop as this process sees it from outside: an abort another process posted, or
// a process that died; nil while all is well.
func (s *shared) failure() error {
	if e := s.remote.Load(); e != nil {
		return *e
	}
	if s.watch != nil { // this process's own view first: its words name the dead process as seen from here
		if err := s.watch.Err(); err != nil {
			return err
		}
	}
	a := s.arenas[0]
	if a.word(abortAt).Load() == abortPosted {
		text := string(a.mem[abortTextAt : abortTextAt+int64(a.word(abortAt+32).Load())])
		var err error = errors.New(text)
		if a.word(abortAt+8).Load() == kindTimeout {
			err = &collectives.TimeoutError{Rank: int(a.word(abortAt + 16).Load()), Phase: text,
				After: time.Duration(a.word(abortAt + 24).Load()), Missing: s.arrivals.Missing()}
		}
		s.remote.Store(&err)
		return err
	}
	return nil
}

// agree gathers every process's error (or none) and returns the first, so that all fail together.
func agree(w collectives.World, err error) error {
	var text []byte
	if err != nil {
		text = []byte(err.Error())
	}
	all, gerr := w.AllGather(text)
	if gerr != nil {
		return gerr
	}
	for p, t := range all {
		if len(t) > 0 {
			if p == w.Rank() {
				return err
			}
			return fmt.Errorf("host engine: process %d: %s", p, strings.TrimPrefix(string(t), "host engine: "))
		}
	}
	return nil
}

// openShared meets the other processes: one machine, one rank count per process, an arena each, all mapped.
func openShared(w collectives.World, n, nlocal int) (*shared, error) {
	host, _ := os.Hostname()
	id := make([]byte, 8)
	rand.Read(id)
	me := fmt.Sprintf("%s\x00%d\x00%s-%d", host, nlocal, hex.EncodeToString(id), os.Getpid())
	all, err := w.AllGather([]byte(me))
	if err != nil {
		return nil, err
	}
	var runID string
	for p, b := range all {
		f := strings.Split(string(b), "\x00")
		if len(f) != 3 {
			return nil, fmt.Errorf("host engine: process %d sent %q at setup", p, b)
		}
		if f[0] != host {
			return nil, fmt.Errorf("host engine: all processes must run on one machine (shared memory), but process %d is on %s and process %d on %s: use the gpu or vendor engine across machines",
				w.Rank(), host, p, f[0])
		}
		if f[1] != strconv.Itoa(nlocal) {
			return nil, fmt.Errorf("host engine: process %d has %s ranks and process %d has %d: every process needs the same -t and -g", p, f[1], w.Rank(), nlocal)
		}
		if p == 0 {
			runID = f[2]
		}
	}
	s := &shared{world: w, proc: w.Rank(), nlocal: nlocal, arenas: make([]*arena, w.Size())}
	s.watch, _ = w.(watcher)
	path := func(p int) string { return filepath.Join(shmDir, fmt.Sprintf("rcclx-tests-%s-%d", runID, p)) }
	length, err := mapLength()
	if err == nil {
		err = s.create(path(s.proc), length, headerBytes(n, nlocal))
	}
	// Every process removes every arena's file once they are all mapped or the run fails, so that the file of a
	// process killed during the set-up goes too (a file already removed is no error).
	removeAll := func() {
		for p := range s.arenas {
			os.Remove(path(p))
		}
	}
	if err = agree(w, err); err != nil {
		s.close()
		removeAll()
		return nil, err
	}
	for p := range s.arenas {
		if p != s.proc && err == nil {
			err = s.attach(p, path(p), length)
		}
	}
	err = agree(w, err)
	removeAll()
	if err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// create makes this process's arena: the file, its header, the mapping.
func (s *shared) create(path string, length, header int64) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("host engine: creating shared memory: %v", err)
	}
	mem, err := mapFile(f, length)
	if err != nil {
		f.Close()
		return fmt.Errorf("host engine: mapping %s: %v", path, err)
	}
	a := &arena{mem: mem, file: f}
	s.arenas[s.proc] = a
	if err := a.grow(header); err != nil {
		return err
	}
	a.top = header
	a.word(0).Store(arenaMagic)
	return nil
}

// attach maps process p's arena.
func (s *shared) attach(p int, path string, length int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("host engine: process %d cannot open process %d's shared memory (%v): every process must see one /dev/shm", s.proc, p, err)
	}
	defer f.Close()
	mem, err := mapFile(f, length)
	if err != nil {
		return fmt.Errorf("host engine: mapping %s: %v", path, err)
	}
	s.arenas[p] = &arena{mem: mem}
	if s.arenas[p].word(0).Load() != arenaMagic {
		return fmt.Errorf("host engine: %s is not an arena of this run", path)
	}
	return nil
}

// attachRank points rank r's flags, doorbell and descriptor at shared memory and returns its barrier mailbox.
func (s *shared) attachRank(rk *rank, n int) []atomic.Uint64 {
	a := s.arenas[rk.id/s.nlocal]
	at := ranksAt + int64(rk.id%s.nlocal)*rankStride(n)
	rk.arena, rk.progress = a, a.word(at)
	rk.bell, rk.sleepers = (*atomic.Uint32)(unsafe.Pointer(&a.mem[at+64])), (*atomic.Uint32)(unsafe.Pointer(&a.mem[at+68]))
	rk.arrived = a.word(at + 72)
	rk.desc = a.words(at+128, descWords)
	return a.words(at+192, n)
}

// close unmaps every arena; called once no rank of this process runs.
func (s *shared) close() {
	for _, a := range s.arenas {
		if a == nil {
			continue
		}
		_ = syscall.Munmap(a.mem) // closing: nothing to do about a failure
		if a.file != nil {
			a.file.Close()
		}
	}
}
