// Command rcclx-doctor checks what the engines of the perf binaries need on this machine: the CUDA driver and
// the GPUs it sees, NVRTC and a kernel compiled, launched and cached, copies, graphs, IPC between processes,
// peer access between GPUs, and the NCCL-ABI library of the vendor engine. It prints one row per check, a fix
// for each failure, and exits 1 when a check failed. Without a GPU it says so and which engine still works.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rcclx-tests/rcclx-tests/internal/version"
	"github.com/rcclx-tests/rcclx-tests/nccl"
)

func init() { runtime.LockOSThread() } // CUDA's current context is per OS thread

// Check names that carry a fix hint.
const (
	stepDriver  = "CUDA driver"
	stepDevices = "GPUs"
	stepNVRTC   = "NVRTC"
	stepCompile = "kernel compile + cache"
	stepIPC     = "IPC"
	stepPeer    = "peer access"
	stepLibrary = "NCCL-ABI library"
)

// hints say what to do when the check of that name (or starting with it) fails.
var hints = map[string]string{
	stepDriver: "install the NVIDIA driver (it brings libcuda.so.1), or point RCCLX_TESTS_LIBCUDA at libcuda.so.1; " +
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
}

type result struct {
	step, detail string
	err          error
}

func main() {
	lib := pflag.String("lib", "", "NCCL-ABI library to look for: a name or a path (default: what --engine vendor tries)")
	bench := pflag.Bool("bench", false, "also measure the host cost of each kind of call (purego, launches, events)")
	iters := pflag.Int("iters", 20000, "calls per call-cost measurement with --bench")
	showVersion := pflag.Bool("version", false, "print the suite, commit and Go versions, and exit")
	ipcChild := pflag.String("ipc-child", "", "internal: open this hex IPC handle and print the SHA-256 of its bytes")
	ipcDevice := pflag.Int("ipc-device", 0, "internal: device for --ipc-child")
	ipcBytes := pflag.Int64("ipc-bytes", 0, "internal: bytes for --ipc-child")
	for _, f := range []string{"ipc-child", "ipc-device", "ipc-bytes"} {
		_ = pflag.CommandLine.MarkHidden(f)
	}
	usage := func() {
		fmt.Fprintf(os.Stdout, "Usage: rcclx-doctor [flags]\n\nChecks the CUDA driver, GPUs, NVRTC, IPC, peer access and "+
			"the NCCL-ABI library that the perf binaries' engines need, with a fix for each failure.\n"+
			"Exit status: 0 all checks passed, 1 a check failed, 2 bad arguments.\n\nFlags:\n%s", pflag.CommandLine.FlagUsages())
	}
	pflag.CommandLine.Init("rcclx-doctor", pflag.ContinueOnError)
	pflag.CommandLine.Usage = func() {} // a bad flag is one line on stderr
	if err := pflag.CommandLine.Parse(os.Args[1:]); err != nil {
		if err == pflag.ErrHelp {
			usage()
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "rcclx-doctor: %v\n", err)
		os.Exit(2)
	}
	if pflag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "rcclx-doctor: unexpected argument %q\n", pflag.Arg(0))
		os.Exit(2)
	}
	if *showVersion {
		fmt.Print(version.Text("rcclx-doctor", "loads the CUDA driver, NVRTC and an NCCL-ABI library only when checking"))
		return
	}
	if *ipcChild != "" {
		if err := runIPCChild(*ipcChild, *ipcDevice, *ipcBytes); err != nil {
			fmt.Fprintln(os.Stderr, "rcclx-doctor ipc child:", err)
			os.Exit(1)
		}
		return
	}
	results, gpus := runChecks()
	results = append(results, checkLibrary(*lib))
	if gpus == nil {
		results = append(results, result{"engine host", "works on every machine: --engine host (what auto picks without a GPU)", nil})
	} else if *bench {
		results = append(results, measureCallCosts(gpus[0], *iters)...)
	}
	if failed := printTable(results); failed > 0 {
		fmt.Printf("%d check(s) failed\n", failed)
		os.Exit(1)
	}
}

// checkLibrary opens the vendor engine's library as it would (nccl.Open) and reports its file and version.
func checkLibrary(nameOrPath string) result {
	l, err := nccl.Open(nameOrPath)
	if err != nil {
		return result{stepLibrary, "", err}
	}
	return result{stepLibrary, fmt.Sprintf("%s, version %d", l.File, l.Version()), nil}
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

// hintFor is the fix of the check named step ("IPC dev0 -> child dev1" takes IPC's).
func hintFor(step string) string {
	for name, h := range hints {
		if strings.HasPrefix(step, name) {
			return h
		}
	}
	return ""
}
