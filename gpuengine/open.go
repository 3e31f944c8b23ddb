package gpuengine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

// Open creates the communicator of this process's ranks. Ranks are numbered as nccl-tests numbers them:
// process, then thread, then GPU; local rank l of the p-th process on a host uses device (p*local ranks + l)
// mod devices.
func (engine) Open(cfg collectives.Config) (collectives.Comm, error) {
	if err := gpurt.Load(); err != nil {
		return nil, runtimeError(nil, err)
	}
	if err := gpurt.LoadCompiler(); err != nil {
		return nil, runtimeError(nil, err)
	}
	getenv := func(k string) string { return cfg.Getenv(os.Getenv, k) }
	policy, err := collectives.PolicyFromEnv(getenv)
	if err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	tun, err := collectives.GPUTuningFromEnv(getenv)
	if err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	if cfg.Memory == collectives.MemoryHost || cfg.Memory == collectives.MemoryManaged {
		tun.CEBytes = -1 // peer copies are defined between device memory only
	}
	world := cfg.World
	if world == nil {
		world = single{}
	}
	nlocal := max(cfg.NThreads, 1) * max(cfg.NGpus, 1)
	c := &comm{nranks: world.Size() * nlocal, policy: policy, tuning: tun, timeout: cfg.Timeout,
		half: halfBytes(policy.SendBuf), memory: cfg.Memory,
		arrivals: collectives.NewArrivals(world.Rank()*nlocal, nlocal)}
	if c.hooks, err = collectives.HooksFromEnv(getenv, c.nranks); err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := c.open(cfg, world, nlocal); err != nil {
		c.Close()
		return nil, err
	}
	if c.tuning.CEPerPeer && c.gatedOff.CopyEngine { // RCCLX_TESTS_GPU_CE_BYTES unset: the runtime's default
		c.tuning.CEBytes = -1
	}
	for t := range max(cfg.NThreads, 1) {
		g := &group{c: c, ranks: c.ranks[t*max(cfg.NGpus, 1) : (t+1)*max(cfg.NGpus, 1)]}
		c.groups = append(c.groups, g)
	}
	return c, nil
}

func (c *comm) open(cfg collectives.Config, world collectives.World, nlocal int) error {
	ndev, err := gpurt.DeviceCount()
	if err != nil {
		return runtimeError(nil, err)
	}
	if nlocal > ndev && !cfg.Oversubscribe {
		return runtimeError(nil, fmt.Errorf("gpu: this process drives %d ranks but sees %d GPUs (allow sharing with --oversubscribe)", nlocal, ndev))
	}
	host, _ := os.Hostname()
	hostIndex, err := hostIndex(world, host)
	if err != nil {
		return err
	}
	shared := map[gpurt.Device]int{} // local ranks per device
	watch := gpurt.MemWatch{}
	for l := range nlocal {
		dev, err := cfg.Device(hostIndex, nlocal, l, ndev)
		if err != nil {
			return runtimeError(nil, fmt.Errorf("gpu: %w", err))
		}
		r := &rank{global: world.Rank()*nlocal + l, local: l, dev: gpurt.Device(dev)}
		c.ranks = append(c.ranks, r)
		shared[r.dev]++
		if err := c.openRank(r, cfg.StreamNull, watch); err != nil {
			return runtimeError(r, err)
		}
		name, _ := r.dev.Name()
		c.devices = append(c.devices, collectives.Device{Rank: r.global, Group: l / max(cfg.NGpus, 1),
			Pid: os.Getpid(), Hostname: host, Index: int(r.dev), BusID: busID(r.dev), Name: name})
	}
	// Mapped host memory is portable: one allocation (made with rank 0's context current) serves all ranks.
	if err := c.ranks[0].ctx.SetCurrent(); err != nil {
		return runtimeError(c.ranks[0], err)
	}
	c.flagsHost, c.flagsDev, err = gpurt.HostAllocMapped(int64(4 * (1 + nlocal)))
	if err != nil {
		return runtimeError(c.ranks[0], err)
	}
	clear(unsafe.Slice((*byte)(c.flagsHost), 4*(1+nlocal)))
	if cfg.StreamNull && len(shared) < nlocal {
		return runtimeError(nil, fmt.Errorf("gpu: -y (the default stream) with ranks sharing a GPU would serialize kernels that wait for each other"))
	}
	var table [][]gpurt.DevicePtr
	if world.Size() == 1 {
		table, err = c.peerLocal(shared)
	} else {
		table, err = c.peerRemote(world, host)
	}
	if err != nil {
		return err
	}
	for _, r := range c.ranks {
		if err := r.uploadPeers(table[r.local]); err != nil {
			return runtimeError(r, err)
		}
	}
	c.opened, err = watch.Used()
	return runtimeError(nil, err)
}

// openRank retains the rank's context, creates its stream, its peer-visible buffer (control words and LL
// flags zeroed) and its alltoallv table; watch records the device's free memory before the first of these.
func (c *comm) openRank(r *rank, streamNull bool, watch gpurt.MemWatch) error {
	var err error
	if r.ctx, err = r.dev.RetainPrimaryContext(); err != nil {
		return err
	}
	if r.args, err = gpurt.NewArgBlock(); err != nil {
		return err
	}
	if err := watch.Start(r.dev, r.ctx); err != nil {
		return err
	}
	if r.caps, err = r.dev.Caps(); err != nil {
		return err
	}
	if r.sms, err = r.dev.Attribute(gpurt.MultiprocessorCount); err != nil {
		return err
	}
	if r.sharedOptin, err = r.dev.Attribute(gpurt.MaxSharedMemoryPerBlockOptin); err != nil {
		return err
	}
	if !streamNull {
		if r.stream, err = gpurt.StreamCreate(true); err != nil {
			return err
		}
	}
	if r.buf, err = gpurt.MemAlloc(dataOffset + 2*c.half); err != nil {
		return err
	}
	// Allocated here, not at a launch: an allocation there could wait for kernels that wait for this rank.
	if r.vtable.dev, err = gpurt.MemAlloc(vTableBytes(c.nranks)); err != nil {
		return err
	}
	return gpurt.MemsetD8(r.buf, 0, ctrlBytes+llAreaBytes+ll128AreaBytes)
}

// peerLocal enables peer access between the GPUs of this process and returns each rank's view of every
// buffer (the same pointers everywhere). The block cap keeps the kernels of ranks sharing a GPU co-resident.
func (c *comm) peerLocal(shared map[gpurt.Device]int) ([][]gpurt.DevicePtr, error) {
	done := map[gpurt.Device]bool{}
	for _, r := range c.ranks {
		if done[r.dev] {
			continue // ranks on one device share its primary context
		}
		done[r.dev] = true
		if err := r.ctx.SetCurrent(); err != nil {
			return nil, runtimeError(r, err)
		}
		for _, p := range c.ranks {
			if p.dev == r.dev {
				continue
			}
			if ok, err := r.dev.CanAccessPeer(p.dev); err != nil || !ok {
				return nil, runtimeError(r, fmt.Errorf("no peer access to device %d (%v)", p.dev, err))
			}
			if err := gpurt.EnablePeerAccess(p.ctx); err != nil {
				return nil, runtimeError(r, err)
			}
		}
	}
	row := make([]gpurt.DevicePtr, len(c.ranks))
	sms, sharing := make([]int, len(c.ranks)), make([]int, len(c.ranks))
	var off gates
	for i, r := range c.ranks {
		row[i] = r.buf
		sms[i], sharing[i] = r.sms, shared[r.dev]
		off = off.or(c.gatesOf(r.caps))
	}
	caps := make([]gpurt.Caps, len(c.ranks))
	for i, r := range c.ranks {
		caps[i] = r.caps
	}
	fp8, err := gpurt.CommonFP8(caps)
	if err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	c.fp8 = collectives.FP8Flavour(fp8) // the two enumerations agree: OCP 0, FNUZ 1
	c.setCaps(sms, sharing)
	c.setGates(off)
	table := make([][]gpurt.DevicePtr, len(c.ranks))
	for i := range table {
		table[i] = row
	}
	return table, c.checkCap()
}

// setCaps sets the block caps from each rank's multiprocessors and how many ranks share its GPU. The kernels of
// ranks that share a GPU must all be resident at once (each waits for the others), so each gets its share of
// the multiprocessors. A kernel launched early sits beside the one ahead of it on its stream, which waits for
// the other ranks; where ranks share a GPU both must fit beside the other ranks' two, so early launches get
// half a share, and none where half is not a block.
func (c *comm) setCaps(sms, sharing []int) {
	c.blockCap, c.earlyCap, c.ownGPUs = maxBlocks, maxBlocks, true
	for i := range sms {
		c.ownGPUs = c.ownGPUs && sharing[i] == 1
		share := sms[i] / sharing[i]
		c.blockCap = min(c.blockCap, share)
		if sharing[i] > 1 {
			share /= 2
		}
		c.earlyCap = min(c.earlyCap, share)
	}
}

func (c *comm) checkCap() error {
	if c.blockCap < 1 {
		return runtimeError(nil, fmt.Errorf("gpu: more ranks share a GPU than it has multiprocessors"))
	}
	return nil
}

// rankInfo is what every process tells the others about each of its ranks.
type rankInfo struct {
	Handle gpurt.IpcMemHandle
	SMs    int32
	BusID  [16]byte
	Off    gates
}

// peerRemote exchanges IPC handles of every rank's buffer through the world and maps the other processes'
// buffers into each local rank's context (once per device).
func (c *comm) peerRemote(world collectives.World, host string) ([][]gpurt.DevicePtr, error) {
	var msg bytes.Buffer
	for _, r := range c.ranks {
		if err := r.ctx.SetCurrent(); err != nil {
			return nil, runtimeError(r, err)
		}
		h, err := gpurt.IpcGetMemHandle(r.buf)
		if err != nil {
			return nil, runtimeError(r, err)
		}
		info := rankInfo{Handle: h, SMs: int32(r.sms), Off: c.gatesOf(r.caps)}
		copy(info.BusID[:], host+"/"+busID(r.dev))
		if err := binary.Write(&msg, binary.LittleEndian, info); err != nil {
			return nil, fmt.Errorf("gpu: encoding rank %d's info: %w", r.global, err)
		}
	}
	all, err := world.AllGather(msg.Bytes())
	if err != nil {
		return nil, err
	}
	infos := make([]rankInfo, 0, c.nranks)
	for p, b := range all {
		n := len(b) / binary.Size(rankInfo{})
		if n != len(c.ranks) || len(b)%binary.Size(rankInfo{}) != 0 {
			return nil, fmt.Errorf("gpu: process %d sent %d bytes of rank info; want %d ranks", p, len(b), len(c.ranks))
		}
		part := make([]rankInfo, n)
		if err := binary.Read(bytes.NewReader(b), binary.LittleEndian, part); err != nil {
			return nil, fmt.Errorf("gpu: process %d's rank info: %w", p, err)
		}
		infos = append(infos, part...)
	}
	perGPU := map[[16]byte]int{}
	for _, in := range infos {
		perGPU[in.BusID]++
	}
	sms, sharing := make([]int, len(infos)), make([]int, len(infos))
	var off gates
	for i, in := range infos {
		sms[i], sharing[i] = int(in.SMs), perGPU[in.BusID]
		off = off.or(in.Off)
	}
	c.setCaps(sms, sharing)
	c.setGates(off)
	table := make([][]gpurt.DevicePtr, len(c.ranks))
	opened := map[[2]int]gpurt.DevicePtr{} // (device, global rank) -> mapping
	first := c.ranks[0].global
	for _, r := range c.ranks {
		if err := r.ctx.SetCurrent(); err != nil {
			return nil, runtimeError(r, err)
		}
		table[r.local] = make([]gpurt.DevicePtr, c.nranks)
		for g := range c.nranks {
			if g >= first && g < first+len(c.ranks) {
				table[r.local][g] = c.ranks[g-first].buf
				continue
			}
			key := [2]int{int(r.dev), g}
			p, ok := opened[key]
			if !ok {
				if p, err = gpurt.IpcOpenMemHandle(infos[g].Handle); err != nil {
					return nil, runtimeError(r, fmt.Errorf("mapping rank %d's buffer: %w", g, err))
				}
				opened[key] = p
				r.mapped = append(r.mapped, p)
			}
			table[r.local][g] = p
		}
	}
	return table, c.checkCap()
}

// uploadPeers copies the rank's peer table to the device.
func (r *rank) uploadPeers(row []gpurt.DevicePtr) error {
	if err := r.ctx.SetCurrent(); err != nil {
		return err
	}
	b := make([]byte, 8*len(row))
	for i, p := range row {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(p))
	}
	var err error
	if r.peers, err = gpurt.MemAlloc(int64(len(b))); err != nil {
		return err
	}
	return gpurt.MemcpyHtoD(r.peers, b)
}

// hostIndex is how many processes of lower rank run on this host.
func hostIndex(world collectives.World, host string) (int, error) {
	if world.Size() == 1 {
		return 0, nil
	}
	all, err := world.AllGather([]byte(host))
	if err != nil {
		return 0, err
	}
	n := 0
	for r := range world.Rank() {
		if string(all[r]) == host {
			n++
		}
	}
	return n, nil
}

// busID is the device's PCI domain:bus:device as nccl-tests prints it ("0000:00:06").
func busID(d gpurt.Device) string {
	var id [3]int
	for i, a := range []gpurt.DeviceAttribute{gpurt.PCIDomainID, gpurt.PCIBusIDAttr, gpurt.PCIDeviceID} {
		id[i], _ = d.Attribute(a)
	}
	return fmt.Sprintf("%04x:%02x:%02x", id[0], id[1], id[2])
}

// single is the world of a run in one process, for a Config without one.
type single struct{}

func (single) Rank() int                               { return 0 }
func (single) Size() int                               { return 1 }
func (single) AllGather(data []byte) ([][]byte, error) { return [][]byte{data}, nil }
func (single) Barrier() error                          { return nil }
