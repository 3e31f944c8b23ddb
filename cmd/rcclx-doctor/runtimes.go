package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
	"github.com/rcclx-tests/rcclx-tests/internal/memkind"
	"github.com/rcclx-tests/rcclx-tests/nccl"
)

// The rows that depend on the GPU runtime: their names, and fixes that speak of the vendor's own software (an
// AMD user is never sent to NVIDIA's driver, nor an NVIDIA user to ROCm).

// Names of the rows of one runtime.
const (
	stepCUDA       = "CUDA driver"
	stepHIP        = "HIP runtime"
	stepHIPDevices = "HIP GPUs"
	stepHIPRTC     = "hiprtc"
	stepMemory     = "memory kinds"
)

// steps are the names of the rows that differ by runtime.
type steps struct{ driver, devices, compiler string }

// stepsOf names the rows for the bound runtime rt; before one is bound (none loads), for the GPUs the PCI bus
// shows: HIP's for AMD alone, CUDA's for NVIDIA alone, and a row for either where it shows both or neither.
func stepsOf(rt gpurt.Runtime, vendors map[string]bool) steps {
	switch {
	case rt == gpurt.HIP || rt == gpurt.None && vendors[amd] && !vendors[nvidia]:
		return steps{stepHIP, stepHIPDevices, stepHIPRTC}
	case rt == gpurt.CUDA || rt == gpurt.None && vendors[nvidia] && !vendors[amd]:
		return steps{stepCUDA, stepDevices, stepNVRTC}
	}
	return steps{stepDriver, stepDevices, stepNVRTC}
}

// hintTables are the fix tables for the row step, first match first: HIP's where HIP is bound (or, none bound,
// the PCI bus shows AMD GPUs alone) or the row is HIP's, CUDA's likewise, then the common one (hints).
func hintTables(step string) []map[string]string {
	switch stepsOf(gpurt.Loaded(), gpuVendors(pciRoot)).driver {
	case stepHIP:
		return []map[string]string{hipHints, hints}
	case stepCUDA:
		return []map[string]string{cudaHints, hints}
	}
	if strings.HasPrefix(step, stepHIP) || strings.HasPrefix(step, stepHIPRTC) {
		return []map[string]string{hipHints, hints}
	}
	return []map[string]string{hints}
}

// cudaHints are the fixes on CUDA, where they differ from the common ones (hints).
var cudaHints = map[string]string{
	stepLibrary: "only --engine vendor needs it: install NCCL (libnccl2, or pip install nvidia-nccl-cu12), or pass " +
		"--lib PATH",
}

// hipHints are the fixes on HIP, where they differ from the common ones (hints).
var hipHints = map[string]string{
	stepHIP: "install ROCm's HIP runtime (libamdhip64.so.7, .so.6 or .so.5; /opt/rocm/lib), or point " +
		"RCCLX_TESTS_LIBAMDHIP64 at it; without a GPU the perf binaries run with --engine host",
	stepHIPDevices: "HIP is there but sees no usable GPU: check rocm-smi (or amd-smi), HIP_VISIBLE_DEVICES and " +
		"ROCR_VISIBLE_DEVICES, that this user is in the render and video groups, and that a container was given " +
		"/dev/kfd and /dev/dri",
	stepHIPRTC: "the gpu engine compiles its kernels with hiprtc: install it (libhiprtc.so.7 or .so.6 from ROCm 6 " +
		"on; ROCm 5 keeps it in libamdhip64) or point RCCLX_TESTS_LIBHIPRTC at it; --engine vendor works without it",
	stepCompile: "a hiprtc older than the GPU's architecture (ROCm 5 knows no gfx942 or gfx950), or a kernel cache " +
		"that cannot be written: update ROCm, or point RCCLX_TESTS_KERNEL_CACHE at a writable folder",
	stepIPC: "processes cannot share GPU memory (a container needs --ipc=host, /dev/kfd and /dev/dri): one process " +
		"per GPU with --engine gpu needs IPC; run one process with -g N instead",
	stepPeer: "the GPUs cannot reach each other's memory: one process with -g N needs peer access (xGMI or PCIe; " +
		"check rocm-smi --showtopo, and that IOMMU is off or in passthrough); --engine vendor lets RCCL choose another path",
	stepMemory: "a kind of memory rccl-tests' -Y asks for cannot be allocated or does not hold data: -Y host and " +
		"managed need the kernel's HMM and XNACK support; -Y coarse (the default) is what RCCL uses",
	stepLibrary: "only --engine vendor needs it: RCCL or RCCLX for AMD GPUs (librccl.so.1 in /opt/rocm/lib, or " +
		"pass --lib PATH)",
}

// PCI vendors of GPUs.
const (
	amd    = "AMD"
	nvidia = "NVIDIA"
)

// pciRoot is where gpuVendors looks; tests point it at a tree of their own.
var pciRoot = "/sys/bus/pci/devices"

// gpuVendors are the makers of the GPUs on the PCI bus under root (display controllers, class 0x03, and
// processing accelerators, 0x12, as an MI300X reports itself): what the machine has even where no driver loads.
func gpuVendors(root string) map[string]bool {
	out := map[string]bool{}
	devs, _ := os.ReadDir(root)
	for _, d := range devs {
		read := func(name string) uint64 {
			b, _ := os.ReadFile(filepath.Join(root, d.Name(), name))
			v, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 0, 32)
			return v
		}
		if class := read("class") >> 16; class != 0x03 && class != 0x12 {
			continue
		}
		switch read("vendor") {
		case 0x1002:
			out[amd] = true
		case 0x10de:
			out[nvidia] = true
		}
	}
	return out
}

// runtimeDetail is the first row's detail: the bound runtime's version and library ("" for none).
func runtimeDetail() string {
	v, err := gpurt.Version()
	if err != nil {
		return gpurt.Library()
	}
	return fmt.Sprintf("%s (%s)", v, gpurt.Library())
}

// deviceDetail describes device d for its row: name, bus, architecture, multiprocessors, memory, and on HIP the
// wavefront and the FP8 flavour (FNUZ on gfx942), which the engines follow.
func deviceDetail(d gpurt.Device, name, bus string, units int, mem int64) (string, error) {
	caps, err := d.Caps()
	if err != nil {
		return "", err
	}
	s := fmt.Sprintf("%s [%s] %s, %d SMs, %.1f GiB", name, bus, caps.Arch, units, float64(mem)/(1<<30))
	if caps.Runtime == gpurt.HIP {
		s = fmt.Sprintf("%s [%s] %s, %d CUs, %.1f GiB, wave%d, FP8 %s", name, bus, caps.Arch, units,
			float64(mem)/(1<<30), caps.WarpSize, caps.FP8)
	}
	return s, nil
}

// memoryKinds allocates 1 MiB of each kind of memory -Y asks for on g's device, as the engines allocate it
// (memkind), and checks that random bytes written to it read back.
func memoryKinds(g *gpu) (string, error) {
	if err := g.use(); err != nil {
		return "", err
	}
	const n = 1 << 20
	in := make([]byte, n)
	for i := range in {
		in[i] = byte(rand.Uint32())
	}
	var names []string
	for _, m := range []struct {
		k    collectives.MemoryKind
		name string
	}{{collectives.MemoryCoarse, "coarse"}, {collectives.MemoryFine, "fine"}, {collectives.MemoryHost, "host"},
		{collectives.MemoryManaged, "managed"}} {
		name := m.name
		p, free, err := gpurt.AllocKind(memkind.Of(m.k), n)
		if err != nil {
			return "", fmt.Errorf("-Y %s: %w", name, err)
		}
		out := make([]byte, n)
		err = firstErr(gpurt.MemcpyHtoD(p, in), gpurt.MemcpyDtoH(out, p))
		if ferr := free(); err == nil {
			err = ferr
		}
		if err == nil && !bytes.Equal(in, out) {
			err = fmt.Errorf("1 MiB written and read back differs")
		}
		if err != nil {
			return "", fmt.Errorf("-Y %s: %w", name, err)
		}
		names = append(names, name)
	}
	return strings.Join(names, ", ") + ": 1 MiB each written and read back", nil
}

// libraryRuntime says which GPU runtime the library file runs on (the libamdhip64 it links: RCCL, RCCLX; none:
// NVIDIA's NCCL) and fails where that is not the runtime rt that this machine's GPUs run.
func libraryRuntime(file string, rt gpurt.Runtime) (string, error) {
	hip, err := nccl.LinkedHIP(file)
	switch {
	case err != nil:
		return "", err
	case hip != "" && rt == gpurt.CUDA:
		return "", fmt.Errorf("%s links %s: an AMD library (RCCL), but this machine's GPUs run CUDA", file, hip)
	case hip == "" && rt == gpurt.HIP:
		return "", fmt.Errorf("%s links no libamdhip64: NVIDIA's NCCL, but this machine's GPUs run HIP", file)
	case hip != "":
		return "runs on HIP: links " + hip + ", which --engine vendor binds", nil
	}
	return "runs on CUDA (links no HIP runtime)", nil
}
