package bootstrap

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
)

// The processes an mpirun started meet as nccl-tests' MPI build does, through the MPI library, with nothing
// set by hand and on any number of nodes; but MPI only carries rank 0's address: rank 0 listens on a port the
// kernel picks, broadcasts its addresses and that port (MPI_Bcast), and every process finalizes MPI at once.
// The run then goes on over the suite's own connections, as under every other launcher: one data path, with
// its loss detection, goodbyes and timeouts, and no MPI progress threads beside the engines.

// mpiFlavor is the MPI library an MPI launcher's processes load, and how that library spells its handles:
// Open MPI's MPI_COMM_WORLD and MPI_BYTE are the addresses of predefined objects, MPICH's (and those of
// libraries of its ABI: Intel MPI, MVAPICH) are integer constants from its mpi.h.
type mpiFlavor struct {
	name        string
	libs        []string
	world, byte string  // Open MPI: the objects' symbols
	worldConst  uintptr // MPICH: the constants
	byteConst   uintptr
}

// mpiFlavors, by the launcher Detect names: Open MPI's mpirun sets OMPI_COMM_WORLD_*, MPICH's Hydra PMI_*.
var mpiFlavors = map[string]mpiFlavor{
	"mpirun": {name: "Open MPI", libs: []string{"libmpi.so.40"}, world: "ompi_mpi_comm_world", byte: "ompi_mpi_byte"},
	"pmi":    {name: "MPICH", libs: []string{"libmpich.so.12", "libmpi.so.12"}, worldConst: 0x44000000, byteConst: 0x4c00010d},
}

// mpiLib is a loaded MPI library: its entry points and handles.
type mpiLib struct {
	flavor                          mpiFlavor
	path                            string
	init, commRank, bcast, finalize uintptr
	world, byteType                 uintptr
}

var mpiLoaded sync.Map // launcher -> mpiResult

type mpiResult struct {
	lib *mpiLib
	err error
}

// loadMPI loads the MPI library of launcher's processes once; the error names every file tried.
func loadMPI(launcher string) (*mpiLib, error) {
	if r, ok := mpiLoaded.Load(launcher); ok {
		return r.(mpiResult).lib, r.(mpiResult).err
	}
	lib, err := openMPI(mpiFlavors[launcher])
	mpiLoaded.Store(launcher, mpiResult{lib, err})
	return lib, err
}

// keepGoSignals are settings of UCX, which MPI libraries load, that stop it replacing the Go runtime's signal
// handlers when it starts: its SIGHUP debug handler would swallow the hang-up that ends a run, and its
// SIGSEGV, SIGBUS, SIGILL and SIGFPE handlers would turn the runtime's own faults into UCX's backtrace.
// A value the user set is kept.
var keepGoSignals = [][2]string{{"UCX_DEBUG_SIGNO", "0"}, {"UCX_HANDLE_ERRORS", "none"}}

func openMPI(f mpiFlavor) (*mpiLib, error) {
	for _, kv := range keepGoSignals {
		if _, set := os.LookupEnv(kv[0]); !set {
			os.Setenv(kv[0], kv[1]) // the C environment too: the library reads it when it is loaded
		}
	}
	runtime.LockOSThread() // dlerror is per thread
	defer runtime.UnlockOSThread()
	var tried []string
	for _, path := range f.libs {
		// RTLD_GLOBAL: Open MPI's components, which it dlopens itself, resolve their symbols in libmpi.
		h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			tried = append(tried, err.Error())
			continue
		}
		l := &mpiLib{flavor: f, path: path, world: f.worldConst, byteType: f.byteConst}
		type sym struct {
			name string
			addr *uintptr
		}
		syms := []sym{{"MPI_Init", &l.init}, {"MPI_Comm_rank", &l.commRank}, {"MPI_Bcast", &l.bcast},
			{"MPI_Finalize", &l.finalize}}
		if f.world != "" {
			syms = append(syms, sym{f.world, &l.world}, sym{f.byte, &l.byteType})
		}
		for _, s := range syms {
			if *s.addr, err = purego.Dlsym(h, s.name); err != nil {
				break
			}
		}
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s: %v", path, err))
			continue
		}
		return l, nil
	}
	return nil, fmt.Errorf("%s's library (to meet without MASTER_ADDR) did not load: %s", f.name, strings.Join(tried, "; "))
}

// mpiBcastBytes is the size of rank 0's message: its address list is cut to fit.
const mpiBcastBytes = 4096

// mpiMessage is what rank 0 sends through MPI.
type mpiMessage struct {
	RunID string   `json:"run"`
	Port  int      `json:"port"`
	Addrs []string `json:"addrs"` // rank 0's interface addresses, the best guesses first
}

// mpiMeet meets the other processes through the launcher's MPI library and returns rank 0's address as this
// process reaches it, rank 0's listener on that port (nil on the other ranks) and the run id, which rank 0
// makes (the launcher's job id where there is one, and random bytes). The MPI calls block in C: they run on a
// thread of their own, and the wait for them ends at timeout or once stop is closed, whichever comes first.
func mpiMeet(getenv func(string) string, l Launch, timeout time.Duration, stop <-chan struct{}) (string, net.Listener, string, error) {
	lib, err := loadMPI(l.Launcher)
	if err != nil {
		return "", nil, "", fmt.Errorf("bootstrap: rank %d: %v", l.Rank, err)
	}
	var msg mpiMessage
	var ln net.Listener
	if l.Rank == 0 {
		if ln, err = net.Listen("tcp", ":0"); err != nil {
			return "", nil, "", fmt.Errorf("bootstrap: rank 0 could not listen: %v", err)
		}
		nonce := make([]byte, 8)
		rand.Read(nonce)
		msg = mpiMessage{RunID: strings.TrimPrefix(l.RunID+"."+hex.EncodeToString(nonce), "."),
			Port: ln.Addr().(*net.TCPAddr).Port, Addrs: ownAddrs(interfaceAddrs(), getenv("NCCL_SOCKET_IFNAME"))}
	}
	buf := make([]byte, mpiBcastBytes)
	if l.Rank == 0 {
		for b, _ := json.Marshal(msg); ; b, _ = json.Marshal(msg) {
			if len(b) <= len(buf) || len(msg.Addrs) == 1 {
				copy(buf, b)
				break
			}
			msg.Addrs = msg.Addrs[:len(msg.Addrs)-1]
		}
	}
	if err := lib.exchange(l.Rank, buf, timeout, stop); err != nil {
		if ln != nil {
			ln.Close()
		}
		return "", nil, "", err
	}
	if l.Rank == 0 {
		return net.JoinHostPort(msg.Addrs[0], strconv.Itoa(msg.Port)), ln, msg.RunID, nil
	}
	end := strings.IndexByte(string(buf), 0)
	if end < 0 {
		end = len(buf)
	}
	if err := json.Unmarshal(buf[:end], &msg); err != nil || len(msg.Addrs) == 0 || msg.Port < 1 || msg.Port > 65535 {
		return "", nil, "", fmt.Errorf("bootstrap: rank %d got %q from rank 0 through MPI, want its address", l.Rank,
			buf[:min(end, 200)])
	}
	return net.JoinHostPort(pickAddr(msg.Addrs, interfaceAddrs()), strconv.Itoa(msg.Port)), nil, msg.RunID, nil
}

// exchange runs MPI_Init, MPI_Bcast of buf from rank 0 and MPI_Finalize on a locked thread, and waits for them
// at most timeout, or until stop is closed.
func (lib *mpiLib) exchange(rank int, buf []byte, timeout time.Duration, stop <-chan struct{}) error {
	var step atomic.Pointer[string]
	first := "MPI_Init"
	step.Store(&first)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // MPI's calls belong to the thread that initialized it; this thread ends with them
		var pin runtime.Pinner
		var got int32
		pin.Pin(&buf[0])
		pin.Pin(&got)
		defer pin.Unpin()
		call := func(name string, fn uintptr, args ...uintptr) bool {
			step.Store(&name)
			if rc, _, _ := purego.SyscallN(fn, args...); int32(rc) != 0 {
				done <- fmt.Errorf("bootstrap: rank %d: %s failed (error %d of %s)", rank, name, int32(rc), lib.path)
				return false
			}
			return true
		}
		if !call("MPI_Init", lib.init, 0, 0) ||
			!call("MPI_Comm_rank", lib.commRank, lib.world, uintptr(unsafe.Pointer(&got))) {
			return
		}
		if int(got) != rank {
			done <- fmt.Errorf("bootstrap: the launcher says this process is rank %d, %s says %d", rank, lib.flavor.name, got)
			return
		}
		if call("MPI_Bcast", lib.bcast, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), lib.byteType, 0, lib.world) &&
			call("MPI_Finalize", lib.finalize) {
			done <- nil
		}
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		return fmt.Errorf("bootstrap: rank %d: %s's %s did not return within %v: a process of the run did not start, "+
			"or stopped", rank, lib.flavor.name, *step.Load(), timeout)
	case <-stop:
		return interruptedError{rank: rank, in: lib.flavor.name + "'s " + *step.Load()}
	}
}

// ifaceAddr is an address of one of this host's interfaces that are up.
type ifaceAddr struct {
	iface string
	net   *net.IPNet
}

func interfaceAddrs() []ifaceAddr {
	ifs, _ := net.Interfaces()
	var out []ifaceAddr
	for _, i := range ifs {
		if i.Flags&net.FlagUp == 0 {
			continue
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				out = append(out, ifaceAddr{i.Name, n})
			}
		}
	}
	return out
}

// ownAddrs are the addresses rank 0 offers, IPv4 first, then global IPv6, of the interfaces that NCCL would
// use for its own sockets: those NCCL_SOCKET_IFNAME names, as NCCL reads it (name prefixes, "^" to exclude
// them, "=" for exact names), else every interface but docker* and lo* (NCCL's default) and virbr*: Docker's
// and libvirt's default bridges have the same address on every host. 127.0.0.1 where none is left.
func ownAddrs(addrs []ifaceAddr, ifname string) []string {
	if ifname == "" {
		ifname = "^docker,lo,virbr"
	}
	exclude := strings.HasPrefix(ifname, "^")
	exact := strings.HasPrefix(strings.TrimPrefix(ifname, "^"), "=")
	names := strings.Split(strings.TrimPrefix(strings.TrimPrefix(ifname, "^"), "="), ",")
	listed := func(iface string) bool {
		for _, n := range names {
			if n != "" && (iface == n || !exact && strings.HasPrefix(iface, n)) {
				return true
			}
		}
		return false
	}
	var v4, v6 []string
	for _, a := range addrs {
		switch ip := a.net.IP; {
		case listed(a.iface) == exclude || ip.IsLoopback() || ip.IsLinkLocalUnicast():
		case ip.To4() != nil:
			v4 = append(v4, ip.String())
		default:
			v6 = append(v6, ip.String())
		}
	}
	if out := append(v4, v6...); len(out) > 0 {
		return out
	}
	return []string{"127.0.0.1"}
}

// pickAddr chooses which of rank 0's addresses to connect to: one of this host's own (rank 0 runs here), else
// one on a network this host is on, else the first.
func pickAddr(addrs []string, own []ifaceAddr) string {
	for _, a := range addrs {
		for _, o := range own {
			if o.net.IP.Equal(net.ParseIP(a)) {
				return a
			}
		}
	}
	for _, a := range addrs {
		for _, o := range own {
			if ip := net.ParseIP(a); ip != nil && !o.net.IP.IsLoopback() && o.net.Contains(ip) {
				return a
			}
		}
	}
	return addrs[0]
}
