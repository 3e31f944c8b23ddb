// Command rcclx-doctor checks what the engines of the perf binaries need on this machine: the GPU runtime (the
// CUDA driver, or HIP) and the GPUs it sees, the kernel compiler (NVRTC or hiprtc) and a kernel compiled,
// launched and cached, copies, the memory kinds of -Y, graphs, IPC between processes, peer access between GPUs,
// and the NCCL-ABI library of the vendor engine with the runtime it links. It prints one row per check, a fix
// for each failure, and a summary line of what this machine can measure. A piece that is not there (no GPU,
// no library) is a row that says so, not a failure: it exits 1 when something it found does not work, or
// when a piece --require names is missing.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rcclx-tests/rcclx-tests/engines"
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
	stepAuto    = "engine auto"
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
	stepAuto: "a GPU is seen but neither the library nor this suite's kernels can run on it: install one of them " +
		"(the rows above say what is missing), or measure the CPU with --engine host",
	stepMemory: "a kind of memory rccl-tests' -Y asks for cannot be allocated or does not hold data: -Y host needs " +
		"pinned memory (check ulimit -l), -Y managed unified memory",
}

type result struct {
	step, detail string
	err          error
	// absent: err says that a piece is not on this machine (no driver, no GPU, no library), which is no failure.
	absent bool
	// provides are the --require names that this row, passed, shows the machine has.
	provides []string
}

// requirable are the names --require accepts: the engines, and the GPU runtimes. A row provides them.
var requirable = []string{"gpu", "vendor", "host", "hip", "cuda"}

// runtimes are the requirable names that say a GPU is seen.
var runtimes = []string{"hip", "cuda"}

// options are rcclx-doctor's flags.
type options struct {
	lib, ipcChild      string
	bench, showVersion bool
	require            []string
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
	fs.StringSliceVar(&o.require, "require", nil, "fail (exit 1) unless this machine has these: a comma list of "+
		strings.Join(requirable, ", "))
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
				"the NCCL-ABI library that the perf binaries' engines need, with a fix for each failure, and what "+
				"this machine can measure.\nExit status: 0 everything found works (no GPU is no failure), 1 a check "+
				"failed or a --require piece is missing, 2 bad arguments.\n\nFlags:\n%s", fs.FlagUsages())
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
	for _, r := range o.require {
		if !slices.Contains(requirable, r) {
			fmt.Fprintf(stderr, "rcclx-doctor: --require %s: want a comma list of %s\n", r, strings.Join(requirable, ", "))
			return o, 2
		}
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
	os.Exit(finish(o, results, gpus))
}

// finish adds the library, the host engine and what auto picks to the rows of runChecks, prints them and the
// summary, and returns the exit status.
func finish(o options, results []result, gpus []*gpu) int {
	results = append(results, checkLibrary(o.lib, seesGPU(results)),
		result{step: "engine host", detail: "works on every machine: --engine host", provides: []string{"host"}})
	auto, _, autoErr := engines.Choose(o.lib)
	if autoErr != nil {
		results = append(results, result{step: stepAuto, err: autoErr})
	}
	if gpus != nil && o.bench {
		results = append(results, measureCallCosts(gpus[0], o.iters)...)
	}
	failed := printTable(results)
	has := provided(results)
	var can []string
	for _, e := range []struct{ name, what string }{{"vendor", "the NCCL-ABI library"},
		{"gpu", "this suite's kernels"}, {"host", "the CPU"}} {
		if has[e.name] {
			can = append(can, fmt.Sprintf("--engine %s (%s)", e.name, e.what))
		}
	}
	picks := "refuses to run (a GPU no engine can use)"
	if autoErr == nil {
		picks = "measures " + auto.Name()
	}
	fmt.Printf("summary: this machine can measure %s; --engine auto %s\n", strings.Join(can, ", "), picks)
	code := 0
	if failed > 0 {
		fmt.Printf("%d check(s) failed\n", failed)
		code = 1
	}
	for _, r := range o.require {
		if !has[r] {
			fmt.Printf("required %s: not on this machine (see the rows above)\n", r)
			code = 1
		}
	}
	return code
}

// provided is every --require name that a passed row provides.
func provided(results []result) map[string]bool {
	has := map[string]bool{}
	for _, r := range results {
		for _, p := range r.provides {
			has[p] = has[p] || r.err == nil
		}
	}
	return has
}

// seesGPU says whether a passed row shows a GPU runtime that sees a GPU.
func seesGPU(results []result) bool {
	has := provided(results)
	return slices.ContainsFunc(runtimes, func(r string) bool { return has[r] })
}

// checkLibrary opens the vendor engine's library as it would (nccl.Open) and reports its file, version and the
// GPU runtime it runs on, which must be this machine's; with a GPU seen, the vendor engine can run.
func checkLibrary(nameOrPath string, gpuSeen bool) result {
	l, err := nccl.Open(nameOrPath)
	if err != nil {
		return result{step: stepLibrary, err: err, absent: true}
	}
	rt, err := libraryRuntime(l.File, gpurt.Loaded())
	r := result{step: stepLibrary, detail: fmt.Sprintf("%s, version %d, %s", l.File, l.Version(), rt), err: err}
	if gpuSeen && err == nil {
		r.provides = []string{"vendor"}
	}
	return r
}

func printTable(results []result) (failed int) {
	fmt.Printf("%-28s %-5s %s\n", "check", "ok", "detail")
	for _, r := range results {
		ok, detail, fix := "ok", r.detail, "fix:"
		switch {
		case r.absent:
			ok, fix = "none", "add:"
		case r.err != nil:
			ok, failed = "FAIL", failed+1
		}
		if r.err != nil {
			detail = strings.ReplaceAll(r.err.Error(), "\n", " | ")
		}
		fmt.Printf("%-28s %-5s %s\n", r.step, ok, detail)
		if r.err != nil {
			if h := hintFor(r.step); h != "" {
				fmt.Printf("%-28s %-5s %s\n", "", fix, h)
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
