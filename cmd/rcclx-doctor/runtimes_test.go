package main

import (
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/gpurt"
	"github.com/rcclx-tests/rcclx-tests/internal/fakehip"
)

// TestMain lets this test binary stand in for rcclx-doctor as the IPC check's child process (it runs itself with
// --ipc-child): the child binds a fake HIP too (TestIPCChildOnFakeHIP).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "--ipc-child" {
		os.Setenv(ipcChildArgs, strings.Join(os.Args[1:], " "))
		os.Args = []string{os.Args[0], "-test.run=^TestIPCChildOnFakeHIP$"}
	}
	os.Exit(m.Run())
}

const ipcChildArgs = "RCCLX_DOCTOR_TEST_IPC_CHILD"

// TestIPCChildOnFakeHIP is the IPC check's child, on a fake HIP of two MI300X: it prints the digest of what it
// read and exits before the test framework prints anything. It does nothing in a normal run.
func TestIPCChildOnFakeHIP(t *testing.T) {
	args := os.Getenv(ipcChildArgs)
	if args == "" {
		t.Skip("only the IPC check's child runs it")
	}
	fakehip.Start(t, &fakehip.HIP{Devices: []fakehip.Device{fakehip.MI300X, fakehip.MI300X}})
	o, code := parseFlags(strings.Fields(args), os.Stdout, os.Stderr)
	if code >= 0 {
		os.Exit(code)
	}
	if err := runIPCChild(o.ipcChild, o.ipcDevice, o.ipcBytes); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	os.Exit(0)
}

// pciTree makes a /sys/bus/pci/devices of devices given as "class vendor".
func pciTree(t *testing.T, devs ...string) string {
	root := t.TempDir()
	for i, d := range devs {
		f := strings.Fields(d)
		dir := filepath.Join(root, "0000:00:0"+string(rune('0'+i))+".0")
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "class"), []byte(f[0]+"\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "vendor"), []byte(f[1]+"\n"), 0o644)
	}
	return root
}

func usePCI(t *testing.T, root string) {
	saved := pciRoot
	pciRoot = root
	t.Cleanup(func() { pciRoot = saved })
}

// Without a GPU runtime, the first row and its fix speak of the maker whose GPUs the PCI bus shows: an MI300X
// (a processing accelerator, class 0x12) gets HIP's row and ROCm's fix, never NVIDIA's driver; an NVIDIA GPU
// gets CUDA's and never ROCm; neither gets both.
func TestNoRuntimeFixFollowsTheGPUsMaker(t *testing.T) {
	if err := gpurt.Load(); err == nil {
		t.Skipf("%s loads here: the no-runtime rows cannot be shown", gpurt.Loaded().Title())
	}
	hostBridge := "0x060000 0x1022"
	for _, c := range []struct {
		name        string
		devs        []string
		step        string
		want, never []string
	}{
		{"MI300X", []string{hostBridge, "0x120000 0x1002"}, stepHIP, []string{"install ROCm's HIP runtime", "RCCL or RCCLX"},
			[]string{"NVIDIA", "nvidia", "libnccl2"}},
		{"H200", []string{hostBridge, "0x030200 0x10de"}, stepCUDA, []string{"install the NVIDIA driver", "install NCCL"},
			[]string{"ROCm", "HIP", "librccl", "RCCL "}},
		{"no GPU", []string{hostBridge}, stepDriver, []string{"install the NVIDIA driver", "ROCm's HIP runtime"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			usePCI(t, pciTree(t, c.devs...))
			results, gpus := runChecks()
			if gpus != nil || len(results) != 1 || results[0].step != c.step || results[0].err == nil {
				t.Fatalf("rows %+v; want one failed %s row", results, c.step)
			}
			results = append(results, result{step: stepLibrary, err: os.ErrNotExist})
			out := captureStdout(t, func() { printTable(results) })
			fixes := ""
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(line, "fix:") || strings.Contains(line, "add:") { // a missing runtime is an "add:" row
					fixes += line + "\n"
				}
			}
			for _, w := range c.want {
				if !strings.Contains(fixes, w) {
					t.Errorf("no %q in the fixes:\n%s", w, fixes)
				}
			}
			for _, n := range c.never {
				if strings.Contains(fixes, n) {
					t.Errorf("%q in the fixes:\n%s", n, fixes)
				}
			}
		})
	}
}

// On HIP (a fake one, of two MI300X) the rows are HIP's: the runtime and its version, the GPUs, hiprtc and a
// module compiled for the full gcnArchName and cached, each device with its arch, CUs, wave64 and FNUZ FP8, the
// memory kinds of -Y allocated as rccl-tests allocates them on the device, and IPC to a second process that
// binds HIP too. The fake runs no kernels: the rows that check a kernel's result (peer access's too) fail, and
// no other.
func TestHIPRows(t *testing.T) {
	if rt := gpurt.Loaded(); rt != gpurt.None {
		t.Skipf("%s is bound in this process; the fake HIP needs it unbound", rt.Title())
	}
	t.Setenv("RCCLX_TESTS_KERNEL_CACHE", t.TempDir())
	runtime.LockOSThread() // the current device is per thread, as the command's main thread is locked
	t.Cleanup(runtime.UnlockOSThread)
	sizeShift = 10 // the fake's device memory is host memory
	t.Cleanup(func() { sizeShift = 0 })
	h := fakehip.Start(t, &fakehip.HIP{Devices: []fakehip.Device{fakehip.MI300X, fakehip.MI300X}})
	usePCI(t, pciTree(t))
	results, gpus := runChecks()
	if len(gpus) != 2 {
		t.Fatalf("%d GPUs; rows %+v", len(gpus), results)
	}
	rows := map[string]result{}
	var names []string
	for _, r := range results {
		rows[r.step] = r
		names = append(names, r.step)
	}
	want := map[string]string{
		stepHIP:                         "HIP 6.2.0 (libfake-amdhip64.so)",
		stepHIPDevices:                  "2 device(s)",
		stepHIPRTC:                      "",
		stepHIPRTC + " version":         "9.0",
		stepCompile:                     fakehip.MI300X.Arch + ", ",
		"device 1":                      "AMD Instinct MI300X [0000:11:00.0] gfx942:sramecc+:xnack-, 304 CUs, 192.0 GiB, wave64, FP8 fnuz",
		"copy round trip dev1":          "64KiB random bytes",
		stepMemory + " dev0":            "coarse, fine, host, managed: 1 MiB each written and read back",
		stepIPC + " dev0 -> child dev1": "16KiB opened and read by a second process",
	}
	for step, detail := range want {
		r, ok := rows[step]
		if !ok || r.err != nil || !strings.Contains(r.detail, detail) {
			t.Errorf("row %q: %+v; want ok with %q (rows %q)", step, r, detail, names)
		}
	}
	for _, step := range []string{stepHIPRTC + " kernel dev0", "graph capture/replay", stepPeer + " dev0 -> dev1"} {
		if r, ok := rows[step]; !ok || r.err == nil {
			t.Errorf("row %q: %+v; the fake runs no kernel, so it must fail", step, r)
		}
	}
	for _, r := range results {
		if r.err != nil && !strings.Contains(r.step, "kernel") && r.step != "graph capture/replay" && !strings.HasPrefix(r.step, stepPeer) {
			t.Errorf("row %q failed: %v", r.step, r.err)
		}
	}
	kinds := map[string]int{}
	for _, a := range h.Allocs {
		if a.Bytes == 1<<20 && a.Device == 0 {
			kinds[a.Func] = int(a.Flags)
		}
	}
	wantKinds := map[string]int{"hipMalloc": 0, "hipExtMallocWithFlags": 3, "hipHostMalloc": 3, "hipMallocManaged": 1}
	if !maps.Equal(kinds, wantKinds) {
		t.Errorf("1 MiB allocations on device 0 (function: flags) %v, want %v", kinds, wantKinds)
	}
	if h := hintFor(stepIPC + " dev0 -> child dev1"); !strings.Contains(h, "/dev/kfd") {
		t.Errorf("IPC's fix on HIP: %q", h)
	}
}

// The library row says which runtime the library runs on, and fails where it is not this machine's.
func TestLibraryRuntime(t *testing.T) {
	libc := "/usr/lib/x86_64-linux-gnu/libc.so.6"
	if _, err := os.Stat(libc); err != nil {
		t.Skip("no", libc)
	}
	if d, err := libraryRuntime(libc, gpurt.CUDA); err != nil || !strings.Contains(d, "runs on CUDA") {
		t.Errorf("a library linking no HIP on CUDA: %q, %v", d, err)
	}
	if _, err := libraryRuntime(libc, gpurt.HIP); err == nil || !strings.Contains(err.Error(), "NVIDIA's NCCL") {
		t.Errorf("a library linking no HIP on HIP: %v", err)
	}
}
