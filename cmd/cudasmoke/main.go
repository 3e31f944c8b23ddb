// Command cudasmoke checks the cuda package on a GPU machine: devices,
// copies, NVRTC compile and cache, launches, events, IPC, graphs, peer
// copies, and the host cost of each kind of call. It prints a table last and
// exits 1 if any check failed.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/spf13/pflag"
)

func init() { runtime.LockOSThread() } // CUDA's current context is per OS thread

type result struct {
	step, detail string
	err          error
}

func main() {
	ipcChild := pflag.String("ipc-child", "", "internal: open this hex IPC handle and print the SHA-256 of its bytes")
	ipcDevice := pflag.Int("ipc-device", 0, "internal: device for --ipc-child")
	ipcBytes := pflag.Int64("ipc-bytes", 0, "internal: bytes for --ipc-child")
	iters := pflag.Int("iters", 20000, "calls per per-call cost measurement")
	pflag.Parse()
	if *ipcChild != "" {
		if err := runIPCChild(*ipcChild, *ipcDevice, *ipcBytes); err != nil {
			fmt.Fprintln(os.Stderr, "cudasmoke ipc child:", err)
			os.Exit(1)
		}
		return
	}
	results, gpus := runChecks()
	if gpus != nil {
		results = append(results, measureCallCosts(gpus[0], *iters)...)
	}
	failed := printTable(results)
	if failed > 0 {
		fmt.Printf("%d check(s) failed\n", failed)
		os.Exit(1)
	}
}

func printTable(results []result) (failed int) {
	fmt.Println()
	fmt.Printf("%-28s %-5s %s\n", "step", "ok", "detail")
	for _, r := range results {
		ok, detail := "ok", r.detail
		if r.err != nil {
			ok, failed = "FAIL", failed+1
			detail = strings.ReplaceAll(r.err.Error(), "\n", " | ")
		}
		fmt.Printf("%-28s %-5s %s\n", r.step, ok, detail)
	}
	return failed
}
