// Command rcclx-doctor checks what the engines of the perf binaries need on this machine: the GPU runtime (the
// CUDA driver, or HIP) and the GPUs it sees, the kernel compiler (NVRTC or hiprtc) and a kernel compiled,
// launched and cached, copies, the memory kinds of -Y, graphs, IPC between processes, peer access between GPUs,
// and the NCCL-ABI library of the vendor engine with the runtime it links. It prints one row per check, a fix
// for each failure, and exits 1 when a check failed. Without a GPU it says so and which engine still works.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rcclx-tests/rcclx-tests/gpurt"
	"github.com/rcclx-tests/rcclx-tests/internal/version"
	"github.com/rcclx-tests/rcclx-tests/nccl"
)

func init() { runtime.LockOSThread() } // the current context (CUDA) or device (HIP) is per OS thread

// Check names that carry a fix hint (runtimes.go has those of HIP).
const (
	stepDriver  = "GPU driver" // where no runtime loads and the PCI bus shows no GPU of one maker
	stepDevices = "GPUs"
	stepNVRTC   = "NVRTC"
	stepCompile = "kernel compile + cache"
	stepIPC     = "IPC"
	stepPeer    = "peer access"
	stepLibrary = "NCCL-ABI library"
)

// hints say what to do when the check of that name (or starting with it) fails; on HIP, hipHints first.
var hints = map[string]string{
	stepDriver: "install the NVIDIA driver (libcuda.so.1) for an NVIDIA GPU, or ROCm's HIP runtime (libamdhip64) " +
		"for an AMD GPU (RCCLX_TESTS_LIBCUDA, RCCLX_TESTS_LIBAMDHIP64 point at them); without a GPU the perf " +
		"binaries run with --engine host (auto picks it)",
	stepCUDA: "install the NVIDIA driver (it brings libcuda.so.1), or point RCCLX_TESTS_LIBCUDA at libcuda.so.1; " +
		"without a GPU the perf binaries run with --engine host (auto picks it)",
	stepDevices: "the driver is there but sees no usable GPU: check nvidia-smi, CUDA_VISIBLE_DEVICES, and that " +
		"the container was started with the GPUs",
	stepNVRTC: "the gpu engine compiles its kernels with NVRTC: install it (CUDA toolkit libnvrtc.so, or pip " +
		"install nvidia-cuda-nvrtc-cu12) or point RCCLX_TESTS_LIBNVRTC at it; --engine vendor works without it",
	stepCompile: "NVRTC older than the GPU's architecture, or a kernel cache that cannot be written: update " +
		"NVRTC, or point RCCLX_TESTS_KERNEL_CACHE at a writable folder",
	stepIPC: "processes cannot share GPU memory (a container needs --ipc=host): one process per GPU with " +
		"--engine gpu needs IPC; run one process with -g N instead",
	stepPeer: "the GPUs cannot reach each other's memory: one process with -g N needs peer access (NVLink or " +
		"PCIe P2P; check nvidia-smi topo -m); --engine vendor lets NCCL choose another path",
	stepLibrary: "only --engine vendor needs it: install NCCL (libnccl2, or pip install nvidia-nccl-cu12), RCCL " +
		"(/opt/rocm/lib), or pass --lib PATH",
	stepMemory: "a kind of memory rccl-tests' -Y asks for cannot be allocated or does not hold data: -Y host needs " +
		"pinned memory (check ulimit -l), -Y managed unified memory",
}

type result struct {
	step, detail string
	err          error
}

// options are rcclx-doctor's flags.
type options struct {
	lib, ipcChild      string
	bench, showVersion bool
	iters, ipcDevice   int
	ipcBytes           int64
}

// parseFlags reads the command line. It returns the options and -1 to go on, or the exit status after it has
// printed the usage (--help: on stdout, nothing on stderr) or one line on stderr for a bad argument.
func parseFlags(args []string, stdout, stderr io.Writer) (options, int) {
	var o options
	fs := pflag.NewFlagSet("rcclx-doctor", pflag.ContinueOnError)
	fs.StringVar(&o.lib, "lib", "", "NCCL-ABI library to look for: a name or a path (default: what --engine vendor tries)")
	fs.BoolVar(&o.bench, "bench", false, "also measure the host cost of each kind of call (purego, launches, events)")
	fs.IntVar(&o.iters, "iters", 20000, "calls per call-cost measurement with --bench")
	fs.BoolVar(&o.showVersion, "version", false, "print the suite, commit and Go versions, and exit")
	fs.StringVar(&o.ipcChild, "ipc-child", "", "internal: open this hex IPC handle and print the SHA-256 of its bytes")
	fs.IntVar(&o.ipcDevice, "ipc-device", 0, "internal: device for --ipc-child")
	fs.Int64Var(&o.ipcBytes, "ipc-bytes", 0, "internal: bytes for --ipc-child")
	for _, f := range []string{"ipc-child", "ipc-device", "ipc-bytes"} {
		_ = fs.MarkHidden(f)
	}
	fs.SetOutput(io.Discard)
	fs.Usage = func() {} // a bad flag is one line on stderr; --help prints the usage below on stdout
	if err := fs.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			fmt.Fprintf(stdout, "Usage: rcclx-doctor [flags]\n\nChecks the CUDA driver, GPUs, NVRTC, IPC, peer access and "+
				"the NCCL-ABI library that the perf binaries' engines need, with a fix for each failure.\n"+
				"Exit status: 0 all checks passed, 1 a check failed, 2 bad arguments.\n\nFlags:\n%s", fs.FlagUsages())
			return o, 0
		}
		fmt.Fprintf(stderr, "rcclx-doctor: %v\n", err)
		return o, 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "rcclx-doctor: unexpected argument %q\n", fs.Arg(0))
		return o, 2
	}
	if o.iters < 1 {
		fmt.Fprintf(stderr, "rcclx-doctor: --iters %d: want at least 1\n", o.iters)
		return o, 2
	}
	return o, -1
}

func main() {
	o, code := parseFlags(os.Args[1:], os.Stdout, os.Stderr)
	if code >= 0 {
		os.Exit(code)
	}
	if o.showVersion {
		fmt.Print(version.Text("rcclx-doctor",
			"loads the GPU runtime (CUDA or HIP), its kernel compiler and an NCCL-ABI library only when checking"))
		return
	}
	if o.ipcChild != "" {
		if err := runIPCChild(o.ipcChild, o.ipcDevice, o.ipcBytes); err != nil {
			fmt.Fprintln(os.Stderr, "rcclx-doctor ipc child:", err)
			os.Exit(1)
		}
		return
	}
	results, gpus := runChecks()
	results = append(results, checkLibrary(o.lib))
	if gpus == nil {
		results = append(results, result{"engine host", "works on every machine: --engine host (what auto picks without a GPU)", nil})
	} else if o.bench {
		results = append(results, measureCallCosts(gpus[0], o.iters)...)
	}
	if failed := printTable(results); failed > 0 {
		fmt.Printf("%d check(s) failed\n", failed)
		os.Exit(1)
	}
}

// checkLibrary opens the vendor engine's library as it would (nccl.Open) and reports its file, version and the
// GPU runtime it runs on, which must be this machine's.
func checkLibrary(nameOrPath string) result {
	l, err := nccl.Open(nameOrPath)
	if err != nil {
		return result{stepLibrary, "", err}
	}
	rt, err := libraryRuntime(l.File, gpurt.Loaded())
	return result{stepLibrary, fmt.Sprintf("%s, version %d, %s", l.File, l.Version(), rt), err}
}

func printTable(results []result) (failed int) {
	fmt.Printf("%-28s %-5s %s\n", "check", "ok", "detail")
	for _, r := range results {
		ok, detail := "ok", r.detail
		if r.err != nil {
			ok, failed = "FAIL", failed+1
			detail = strings.ReplaceAll(r.err.Error(), "\n", " | ")
		}
		fmt.Printf("%-28s %-5s %s\n", r.step, ok, detail)
		if r.err != nil {
			if h := hintFor(r.step); h != "" {
				fmt.Printf("%-28s %-5s %s\n", "", "fix:", h)
			}
		}
	}
	return failed
}

// hintFor is the fix of the check named step ("IPC dev0 -> child dev1" takes IPC's): the runtime's own
// (hintTables), else the common one.
func hintFor(step string) string {
	for _, t := range hintTables(step) {
		best := ""
		for name := range t {
			if strings.HasPrefix(step, name) && len(name) > len(best) {
				best = name
			}
		}
		if best != "" {
			return t[best]
		}
	}
	return ""
}
