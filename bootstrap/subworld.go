package bootstrap

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// EnvBootstrap is the rendezvous address variable of this suite (see Rendezvous).
const EnvBootstrap = "RCCLX_TESTS_BOOTSTRAP"

// Addr is the rendezvous address of a multi-process world ("" in a single process).
func (w *World) Addr() string { return w.addr }

// SubWorlds prepares n worlds of child processes beside w: every process of w starts one child per sub-world,
// and the children of sub-world i meet each other (not w, not the other sub-worlds) at an address of their own,
// each with its parent's rank, local rank and world size. Every process of w must call it; it returns, per
// sub-world, the variables this process's child adds to an environment cleaned by Isolate. Rank 0 picks the
// ports (free when picked) on the host of w's rendezvous address and gives them to the others. A world of one
// process needs no rendezvous: its children are single processes.
func SubWorlds(w collectives.World, n int) ([][]string, error) {
	out := make([][]string, n)
	if w.Size() == 1 {
		return out, nil
	}
	host := "127.0.0.1"
	if a, ok := w.(interface{ Addr() string }); ok && a.Addr() != "" {
		host, _, _ = net.SplitHostPort(a.Addr())
	}
	var ports []int
	if w.Rank() == 0 {
		listen := host
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			listen = "" // every interface, as serve listens
		}
		for range n {
			ln, err := net.Listen("tcp", net.JoinHostPort(listen, "0"))
			if err != nil {
				return nil, fmt.Errorf("bootstrap: rank 0 found no free port for a sub-world: %v", err)
			}
			ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
			ln.Close()
		}
	}
	data, _ := json.Marshal(ports)
	all, err := w.AllGather(data)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(all[0], &ports); err != nil || len(ports) != n {
		return nil, fmt.Errorf("bootstrap: rank %d got %q from rank 0, want %d ports", w.Rank(), all[0], n)
	}
	localRank, localSize := -1, -1
	if l, ok := w.(interface{ LocalRank() int }); ok {
		localRank = l.LocalRank()
	}
	if l, ok := w.(interface{ LocalSize() int }); ok {
		localSize = l.LocalSize()
	}
	for i, port := range ports {
		out[i] = []string{"RANK=" + strconv.Itoa(w.Rank()), "WORLD_SIZE=" + strconv.Itoa(w.Size()),
			EnvBootstrap + "=" + net.JoinHostPort(host, strconv.Itoa(port))}
		if localRank >= 0 && localSize > 0 {
			out[i] = append(out[i], "LOCAL_RANK="+strconv.Itoa(localRank), "LOCAL_WORLD_SIZE="+strconv.Itoa(localSize))
		}
	}
	return out, nil
}

// Isolate returns environ without any launcher's or rendezvous variables (the run's identity included), then
// extra: the environment of a child process that must not take its parent's place in the parent's world.
func Isolate(environ []string, extra ...string) []string {
	drop := map[string]bool{"MASTER_ADDR": true, "MASTER_PORT": true, EnvBootstrap: true, "SLURM_STEP_NUM_TASKS": true,
		"SLURM_NNODES": true}
	for _, v := range launcherVars {
		for _, name := range append([]string{v.rank, v.size, v.localRank, v.localSize}, v.runID...) {
			if name != "" {
				drop[name] = true
			}
		}
	}
	var out []string
	for _, kv := range environ {
		if name, _, _ := strings.Cut(kv, "="); !drop[name] {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}
