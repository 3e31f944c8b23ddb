package vendorengine

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/rcclx-tests/rcclx-tests/bootstrap"
	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
	"github.com/rcclx-tests/rcclx-tests/nccl"
)

// Open creates one communicator per local rank. Ranks are numbered as nccl-tests numbers them: process, then
// thread, then GPU; local rank l of the p-th process on a host drives device (p*local ranks + l) mod devices.
// The library decides the GPU runtime (loadRuntime).
func (engine) Open(cfg collectives.Config) (collectives.Comm, error) {
	lib, err := nccl.Open(cfg.Library)
	if err != nil {
		return nil, &collectives.LibraryError{Err: fmt.Errorf("vendor: %w", err)}
	}
	hip, err := nccl.LinkedHIP(lib.File)
	if err != nil {
		return nil, &collectives.LibraryError{Err: fmt.Errorf("vendor: %w", err)}
	}
	if err := loadRuntime(lib.File, hip); err != nil {
		return nil, runtimeError(err)
	}
	return open(cfg, lib)
}

// loadRuntime binds the GPU runtime of the library file: HIP from exactly the libamdhip64 soname hip that it
// links (RCCL, RCCLX), so that the library and the suite share one HIP runtime; CUDA where it links none
// (NVIDIA's NCCL).
func loadRuntime(file, hip string) error {
	if hip != "" {
		if err := gpurt.LoadHIP(hip); err != nil {
			return fmt.Errorf("vendor: %s links %s: %w", file, hip, err)
		}
		return nil
	}
	if err := gpurt.Load(); err != nil {
		return fmt.Errorf("vendor: %s links no libamdhip64 (an NVIDIA NCCL, which needs the CUDA driver): %w", file, err)
	}
	if rt := gpurt.Loaded(); rt != gpurt.CUDA {
		return fmt.Errorf("vendor: %s links no libamdhip64 (an NVIDIA NCCL, which needs the CUDA driver), but this "+
			"process runs %s (%s); for AMD GPUs use RCCL or RCCLX (--lib librccl.so.1)", file, rt.Title(), gpurt.Library())
	}
	return nil
}

// open is Open on the library lib, its GPU runtime bound.
func open(cfg collectives.Config, lib *nccl.Library) (collectives.Comm, error) {
	var err error
	if cfg.Register && !lib.Has("ncclCommRegister") {
		return nil, &collectives.LibraryError{Err: fmt.Errorf("vendor: -R: %s does not export ncclCommRegister", lib.File)}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	world := cfg.World
	if world == nil {
		world = bootstrap.Single()
	}
	nthreads, ngpus := max(cfg.NThreads, 1), max(cfg.NGpus, 1)
	nlocal := nthreads * ngpus
	c := &comm{lib: lib, nranks: world.Size() * nlocal, timeout: cfg.Timeout, register: cfg.Register,
		nonBlocking: useNonBlocking(lib, cfg.Timeout), memory: cfg.Memory,
		arrivals: collectives.NewArrivals(world.Rank()*nlocal, nlocal)}
	c.ctaPolicy, c.ctaNote = ctaPolicy(lib, cfg.CTAPolicy)
	getenv := func(k string) string { return cfg.Getenv(os.Getenv, k) }
	if c.hooks, err = collectives.HooksFromEnv(getenv, c.nranks); err != nil {
		return nil, fmt.Errorf("vendor: %w", err)
	}
	if c.nativeAlltoAll, err = alltoallNative(getenv(alltoallEnv), lib.Has("ncclAlltoAll")); err != nil {
		return nil, fmt.Errorf("vendor: %w", err)
	}
	c.nativeGather, c.nativeScatter = lib.Has("ncclGather"), lib.Has("ncclScatter")
	c.withBias = lib.Has("ncclAllReduceWithBias")

	// CommInitAll makes every communicator of a single-process run in one blocking call; otherwise rank 0's
	// unique id reaches every rank through the world.
	initAll := world.Size() == 1 && !cfg.ParallelInit && !c.nonBlocking && c.ctaPolicy < 0
	var id nccl.UniqueID
	if !initAll && world.Rank() == 0 {
		if id, err = lib.GetUniqueID(); err != nil {
			return nil, libraryError(err)
		}
	}
	hostIndex, err := exchange(world, &id)
	if err != nil {
		return nil, err
	}
	if err := c.openRanks(cfg, world.Rank()*nlocal, hostIndex, nlocal, ngpus); err != nil {
		c.Close()
		return nil, err
	}
	caps := make([]gpurt.Caps, len(c.ranks))
	for i, r := range c.ranks {
		caps[i] = r.caps
	}
	fp8, err := gpurt.CommonFP8(caps)
	if err != nil {
		c.Close()
		return nil, runtimeError(fmt.Errorf("vendor: %w", err))
	}
	c.fp8 = collectives.FP8Flavour(fp8) // the two enumerations agree: OCP 0, FNUZ 1
	watch := gpurt.MemWatch{}
	for _, r := range c.ranks {
		if err := watch.Start(r.dev, r.ctx); err != nil {
			c.Close()
			return nil, runtimeError(err)
		}
	}
	restore := overrideEnv(cfg.Env)
	err = c.initComms(initAll, cfg.ParallelInit, id, ngpus)
	restore()
	if err != nil {
		c.Close()
		return nil, libraryError(err)
	}
	if c.opened, err = watch.Used(); err != nil {
		c.Close()
		return nil, runtimeError(err)
	}
	for t := range nthreads {
		c.groups = append(c.groups, newGroup(c, c.ranks[t*ngpus:(t+1)*ngpus]))
	}
	return c, nil
}

// exchange shares rank 0's unique id with every process and returns how many processes of lower rank run on
// this host.
func exchange(world collectives.World, id *nccl.UniqueID) (hostIndex int, err error) {
	if world.Size() == 1 {
		return 0, nil
	}
	host, _ := os.Hostname()
	msg := append([]byte(host+"\x00"), id.Internal[:]...)
	all, err := world.AllGather(msg)
	if err != nil {
		return 0, err
	}
	if i := bytes.IndexByte(all[0], 0); i >= 0 && len(all[0]) == i+1+len(id.Internal) {
		copy(id.Internal[:], all[0][i+1:])
	} else {
		return 0, fmt.Errorf("vendor: rank 0 sent a malformed unique id (%d bytes)", len(all[0]))
	}
	for r := range world.Rank() {
		if bytes.HasPrefix(all[r], []byte(host+"\x00")) {
			hostIndex++
		}
	}
	return hostIndex, nil
}

// openRanks retains each local rank's device context and creates its stream.
func (c *comm) openRanks(cfg collectives.Config, firstRank, hostIndex, nlocal, ngpus int) error {
	ndev, err := gpurt.DeviceCount()
	if err != nil {
		return runtimeError(err)
	}
	if nlocal > ndev {
		return runtimeError(fmt.Errorf("vendor: this process drives %d ranks but sees %d GPUs; NCCL needs a GPU per rank", nlocal, ndev))
	}
	host, _ := os.Hostname()
	for l := range nlocal {
		dev, err := cfg.Device(hostIndex, nlocal, l, ndev)
		if err != nil {
			return runtimeError(fmt.Errorf("vendor: %w", err))
		}
		r := &rank{global: firstRank + l, dev: gpurt.Device(dev)}
		c.ranks = append(c.ranks, r)
		if err := r.open(cfg.StreamNull); err != nil {
			return runtimeError(fmt.Errorf("vendor: rank %d on device %d: %w", r.global, r.dev, err))
		}
		name, _ := r.dev.Name()
		c.devices = append(c.devices, collectives.Device{Rank: r.global, Group: l / ngpus, Pid: os.Getpid(),
			Hostname: host, Index: int(r.dev), BusID: busID(r.dev), Name: name})
	}
	return nil
}

// busID is the device's PCI domain:bus:device as nccl-tests prints it ("0000:00:06").
func busID(d gpurt.Device) string {
	var id [3]int
	for i, a := range []gpurt.DeviceAttribute{gpurt.PCIDomainID, gpurt.PCIBusIDAttr, gpurt.PCIDeviceID} {
		id[i], _ = d.Attribute(a)
	}
	return fmt.Sprintf("%04x:%02x:%02x", id[0], id[1], id[2])
}

// initComms creates the communicators: in one ncclCommInitAll, in one group of ncclCommInitRank calls, or
// (-p) in one such group per thread, each on its own OS thread.
func (c *comm) initComms(initAll, parallel bool, id nccl.UniqueID, ngpus int) error {
	if initAll {
		devs := make([]int32, len(c.ranks))
		for l, r := range c.ranks {
			devs[l] = int32(r.dev)
		}
		comms, err := c.lib.CommInitAll(devs)
		if err == nil {
			for l, r := range c.ranks {
				r.comm = comms[l]
			}
		}
		return err
	}
	if !parallel {
		return c.initRanks(c.ranks, id)
	}
	errs := make([]error, len(c.ranks)/ngpus)
	var wg sync.WaitGroup
	for t := range errs {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			errs[t] = c.initRanks(c.ranks[t*ngpus:(t+1)*ngpus], id)
		})
	}
	wg.Wait()
	if cause := c.usable(); cause != nil {
		return cause // every thread reports the abort; once is enough
	}
	return errors.Join(errs...)
}

// initRanks makes the communicators of ranks in one NCCL group on the calling (locked) thread.
func (c *comm) initRanks(ranks []*rank, id nccl.UniqueID) error {
	if err := c.lib.GroupStart(); err != nil {
		return err
	}
	var failed error
	for _, r := range ranks {
		if err := r.ctx.SetCurrent(); err != nil {
			failed = runtimeError(err)
			break
		}
		var err error
		if c.ctaPolicy >= 0 {
			cfg := nccl.NewCTAConfig(c.ctaPolicy, c.nonBlocking)
			r.comm, err = c.lib.CommInitRankConfig(c.nranks, id, r.global, cfg.Base())
		} else if c.nonBlocking {
			cfg := nccl.NonBlockingConfig()
			r.comm, err = c.lib.CommInitRankConfig(c.nranks, id, r.global, &cfg)
		} else {
			r.comm, err = c.lib.CommInitRank(c.nranks, id, r.global)
		}
		if err != nil && !nccl.IsInProgress(err) {
			failed = err
			break
		}
	}
	end := c.finish(ranks, "ncclCommInitRank", c.lib.GroupEnd())
	if failed != nil {
		return failed
	}
	return end
}

// useNonBlocking says whether to make non-blocking communicators: only they let -T bound a wait inside a
// library call, but recent NCCL releases start a thread for every non-blocking group end (the cost is
// measured by TestGPUNonBlockingLaunchCost), so without -T (nothing to bound) the communicators stay
// blocking, as nccl-tests makes them.
func useNonBlocking(lib *nccl.Library, timeout time.Duration) bool {
	return timeout > 0 && lib.Has("ncclCommInitRankConfig")
}

// overrideEnv sets the communicator's variables in the process environment, where the library reads them
// when it creates communicators, and returns a function restoring the previous values. NVLink multicast is
// turned off for the rest of the process unless the user chose otherwise (the lent machines require it, and
// the library may read the variable after creating a communicator).
func overrideEnv(env map[string]string) (restore func()) {
	if _, set := os.LookupEnv("NCCL_NVLS_ENABLE"); !set {
		os.Setenv("NCCL_NVLS_ENABLE", "0")
	}
	type saved struct {
		value string
		set   bool
	}
	before := map[string]saved{}
	for k, v := range env {
		old, set := os.LookupEnv(k)
		before[k] = saved{old, set}
		os.Setenv(k, v)
	}
	return func() {
		for k, s := range before {
			if s.set {
				os.Setenv(k, s.value)
			} else {
				os.Unsetenv(k)
			}
		}
	}
}

// alltoallEnv picks how alltoall reaches the library: "sendrecv" makes it nccl-tests' grouped ncclSend/ncclRecv
// (nccl-tests never calls ncclAlltoAll: set it to compare times with nccl-tests), "native" insists on
// ncclAlltoAll; unset, ncclAlltoAll where the library exports it.
const alltoallEnv = "RCCLX_TESTS_VENDOR_ALLTOALL"

func alltoallNative(mode string, exported bool) (bool, error) {
	switch mode {
	case "":
		return exported, nil
	case "sendrecv":
		return false, nil
	case "native":
		if !exported {
			return false, fmt.Errorf("%s=native: the library does not export ncclAlltoAll: %w", alltoallEnv, collectives.ErrUnsupported)
		}
		return true, nil
	}
	return false, fmt.Errorf("%s=%q: want native or sendrecv", alltoallEnv, mode)
}
