package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests start the binary through the real launchers, with nothing set by hand (no MASTER_ADDR, no
// port): Open MPI's and MPICH's mpirun, torchrun; and across two simulated nodes, network namespaces the
// test makes with a veth pair between them, where 127.0.0.1 cannot carry the meeting.

// tinySweep is a validated sweep of three sizes on the host engine.
var tinySweep = []string{"--engine", "host", "-g", "1", "-b", "1K", "-e", "4K", "-f", "2", "-n", "2", "-w", "1", "-T", "30"}

// launcherPath is the path of a launcher, or skips the test naming the Debian package that brings it.
func launcherPath(t *testing.T, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not found (Debian package %s)", name, pkg)
	}
	return path
}

// runLauncher runs argv (a launcher's command line) with the environment cleaned of every launcher's
// variables, plus env, and returns its output; the binary's path replaces "BIN".
func runLauncher(t *testing.T, ctx context.Context, env []string, argv ...string) (stdout, stderr string, err error) {
	t.Helper()
	bin := binary(t)
	for i, a := range argv {
		if a == "BIN" {
			argv[i] = bin
		}
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = t.TempDir()
	for _, kv := range baseEnv() {
		if !strings.HasPrefix(kv, "TORCHELASTIC_") && !strings.HasPrefix(kv, "PMIX_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// checkTable checks rank 0's table: n processes listed, and the sweep's three rows validated and right.
func checkTable(t *testing.T, n int, stdout, stderr string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	ranks, rows := 0, 0
	for _, line := range strings.Split(stdout, "\n") {
		f := strings.Fields(line)
		if len(f) > 2 && f[0] == "#" && f[1] == "Rank" {
			ranks++
		}
		if len(f) == 13 && (f[0] == "1024" || f[0] == "2048" || f[0] == "4096") && f[8] == "0" && f[12] == "0" {
			rows++
		}
	}
	if ranks != n || rows != 3 {
		t.Errorf("%d ranks and %d right rows, want %d and 3:\n%s\nstderr:\n%s", ranks, rows, n, stdout, stderr)
	}
}

func TestMpirunOpenMPI(t *testing.T) {
	mpirun := launcherPath(t, "mpirun.openmpi", "openmpi-bin")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	out, errs, err := runLauncher(t, ctx, nil, append([]string{mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "3",
		"BIN"}, tinySweep...)...)
	checkTable(t, 3, out, errs, err)
	t.Logf("%s: %v", launcherVersion(mpirun, "--version"), time.Since(start).Round(time.Millisecond))
}

func TestMpirunMPICH(t *testing.T) {
	mpirun := launcherPath(t, "mpirun.mpich", "mpich")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	out, errs, err := runLauncher(t, ctx, nil, append([]string{mpirun, "-np", "3", "BIN"}, tinySweep...)...)
	checkTable(t, 3, out, errs, err)
	t.Logf("%s: %v", launcherVersion(mpirun, "--version"), time.Since(start).Round(time.Millisecond))
}

// torchrun's agent holds MASTER_PORT with its store: the workers meet beside it. Debian's torchrun (torch
// 1.13) crashes when it collects its workers' exit unless their output is redirected (--redirects 2 --tee 2);
// --monitor_interval shortens its 5 s polls of the workers.
func torchrunArgs(torchrun string, port int, extra ...string) []string {
	args := []string{torchrun, "--master_port", strconv.Itoa(port), "--monitor_interval", "0.2", "--redirects", "2",
		"--tee", "2"}
	return append(append(args, extra...), append([]string{"--no_python", "BIN"}, tinySweep...)...)
}

func TestTorchrun(t *testing.T) {
	torchrun := launcherPath(t, "torchrun", "python3-torch")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := time.Now()
	out, errs, err := runLauncher(t, ctx, nil, torchrunArgs(torchrun, freePort(t), "--nproc_per_node", "2")...)
	checkTable(t, 2, out, errs, err)
	t.Logf("torchrun of torch %s: %v", torchVersion(torchrun), time.Since(start).Round(time.Millisecond))
}

// twoNodes makes two network namespaces joined by a veth pair, each with an address of the pair's network and
// its own loopback, and removes them at the end; it skips where it cannot (not root, no ip netns).
func twoNodes(t *testing.T) (ns, addrs [2]string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("simulating a second node takes network namespaces: run as root")
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		t.Skip("simulating a second node takes ip netns (Debian package iproute2)")
	}
	run := func(args ...string) error {
		if out, err := exec.Command(ip, args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	id := strconv.Itoa(os.Getpid())
	ns = [2]string{"rcclx" + id + "a", "rcclx" + id + "b"}
	addrs = [2]string{"10.213.58.1", "10.213.58.2"}
	veth := [2]string{"rx" + id + "a", "rx" + id + "b"}
	t.Cleanup(func() {
		for _, n := range ns {
			_ = run("netns", "del", n)
		}
	})
	if err := run("netns", "add", ns[0]); err != nil {
		t.Skipf("ip netns is unavailable here: %v", err)
	}
	steps := [][]string{{"netns", "add", ns[1]},
		{"link", "add", veth[0], "netns", ns[0], "type", "veth", "peer", "name", veth[1], "netns", ns[1]}}
	for i := range 2 {
		steps = append(steps, []string{"-n", ns[i], "addr", "add", addrs[i] + "/24", "dev", veth[i]},
			[]string{"-n", ns[i], "link", "set", veth[i], "up"}, []string{"-n", ns[i], "link", "set", "lo", "up"})
	}
	for _, s := range steps {
		if err := run(s...); err != nil {
			t.Fatal(err)
		}
	}
	return ns, addrs
}

// remoteShell writes the program an mpirun uses instead of ssh: it runs the command in the namespace of the
// host's address, and logs the namespace.
func remoteShell(t *testing.T, ns, addrs [2]string) (path, log string) {
	dir := t.TempDir()
	path, log = filepath.Join(dir, "netns-rsh"), filepath.Join(dir, "log")
	script := fmt.Sprintf(`#!/bin/sh
while [ "${1#-}" != "$1" ]; do shift; done
case $1 in %s) ns=%s;; %s) ns=%s;; *) echo "netns-rsh: unknown host $1" >&2; exit 1;; esac
shift
echo $ns >> %s
exec ip netns exec $ns sh -c "$*"
`, addrs[0], ns[0], addrs[1], ns[1], log)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, log
}

// Each MPI's mpirun on one simulated node starts a process on the other through its remote shell: the
// processes meet through MPI at rank 0's address on the veth network.
func TestMpirunAcrossNodes(t *testing.T) {
	for _, tc := range []struct{ name, pkg string }{{"mpirun.openmpi", "openmpi-bin"}, {"mpirun.mpich", "mpich"}} {
		t.Run(tc.name, func(t *testing.T) {
			mpirun := launcherPath(t, tc.name, tc.pkg)
			ns, addrs := twoNodes(t)
			rsh, log := remoteShell(t, ns, addrs)
			argv := []string{"ip", "netns", "exec", ns[0], mpirun}
			if tc.name == "mpirun.openmpi" {
				argv = append(argv, "--allow-run-as-root", "--mca", "plm_rsh_agent", rsh, "--mca", "plm_rsh_no_tree_spawn", "1",
					"-H", addrs[0]+":1,"+addrs[1]+":1", "-np", "2")
			} else {
				argv = append(argv, "-launcher", "ssh", "-launcher-exec", rsh, "-hosts", addrs[0]+","+addrs[1], "-np", "2", "-ppn", "1")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			start := time.Now()
			out, errs, err := runLauncher(t, ctx, nil, append(append(argv, "BIN"), tinySweep...)...)
			checkTable(t, 2, out, errs, err)
			if b, _ := os.ReadFile(log); !strings.Contains(string(b), ns[1]) {
				t.Errorf("no process was started in the second namespace (%s): %q", ns[1], b)
			}
			t.Logf("%v", time.Since(start).Round(time.Millisecond))
		})
	}
}

// torchrun on each of two simulated nodes (static rendezvous at the first node's address): the workers meet
// at MASTER_ADDR beside the agent's store.
func TestTorchrunAcrossNodes(t *testing.T) {
	torchrun := launcherPath(t, "torchrun", "python3-torch")
	ns, addrs := twoNodes(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := time.Now()
	port := freePort(t)
	type result struct {
		out, errs string
		err       error
	}
	binary(t) // built before the goroutine needs it
	node1 := make(chan result, 1)
	agent := func(node int) []string {
		return append([]string{"ip", "netns", "exec", ns[node]}, torchrunArgs(torchrun, port, "--nnodes", "2",
			"--node_rank", strconv.Itoa(node), "--nproc_per_node", "1", "--master_addr", addrs[0])...)
	}
	go func() {
		var r result
		r.out, r.errs, r.err = runLauncher(t, ctx, nil, agent(1)...)
		node1 <- r
	}()
	out, errs, err := runLauncher(t, ctx, nil, agent(0)...)
	checkTable(t, 2, out, errs, err)
	if r := <-node1; r.err != nil {
		t.Errorf("the second node's torchrun: %v\n%s", r.err, r.errs)
	}
	t.Logf("%v", time.Since(start).Round(time.Millisecond))
}

// launcherVersion is the first line of a launcher's version output.
func launcherVersion(path string, arg string) string {
	out, _ := exec.Command(path, arg).CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if s := strings.Join(strings.Fields(line), " "); s != "" && !strings.HasPrefix(s, "HYDRA build") {
			return s
		}
	}
	return path
}

// torchVersion asks the Python that runs torchrun (its #! line) for torch's version.
func torchVersion(torchrun string) string {
	b, _ := os.ReadFile(torchrun)
	python, _, _ := strings.Cut(strings.TrimPrefix(string(b), "#!"), "\n")
	out, _ := exec.Command(strings.TrimSpace(python), "-c", "import torch; print(torch.__version__)").Output()
	return strings.TrimSpace(string(out))
}

// The MPI library's calls block: a process whose peer never joins (here a second program of the MPI job that
// is not an MPI program) ends at -T naming the call, and within a second of SIGTERM or SIGHUP.
func TestMPIMeetingBounded(t *testing.T) {
	mpirun := launcherPath(t, "mpirun.mpich", "mpich")
	bin := binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	argv := func(timeout string) []string {
		return []string{mpirun, "-np", "1", "BIN", "--engine", "host", "-g", "1", "-b", "1K", "-e", "1K", "-T", timeout,
			":", "-np", "1", "sleep", "30"}
	}
	start := time.Now()
	_, errs, err := runLauncher(t, ctx, nil, argv("2")...)
	if took := time.Since(start); err == nil || !strings.Contains(errs, "bootstrap: rank 0: MPICH's MPI_Init did not return within 2s") || took > 8*time.Second {
		t.Errorf("-T 2: %v after %v, stderr %q: want MPI_Init named after about 2 s", err, took, errs)
	}

	for _, s := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP} {
		done := make(chan string, 1)
		go func() {
			_, errs, _ := runLauncher(t, ctx, nil, argv("60")...)
			done <- errs
		}()
		pid := 0
		for deadline := time.Now().Add(20 * time.Second); pid == 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			pid = pidOfExecutable(bin)
		}
		if pid == 0 {
			t.Fatal("the launched process did not appear within 20 s")
		}
		time.Sleep(500 * time.Millisecond) // in MPI_Init by now
		syscall.Kill(pid, s)
		signalled := time.Now()
		for syscall.Kill(pid, 0) == nil && time.Since(signalled) < 5*time.Second {
			time.Sleep(10 * time.Millisecond)
		}
		if took := time.Since(signalled); took > time.Second {
			t.Errorf("the process ended %v after %v, want within 1 s", took, s)
		}
		if errs := <-done; !strings.Contains(errs, "interrupted while it waited for the other processes in MPICH's MPI_Init") {
			t.Errorf("%v: stderr %q: want the interrupted MPI call named", s, errs)
		}
	}
}

// pidOfExecutable is the pid of a process running the executable at path, or 0.
func pidOfExecutable(path string) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == path {
			return pid
		}
	}
	return 0
}

// slurmConf is a cluster of two nodes, n1 and n2, one per simulated node, with the controller on the first;
// no munge (auth/none, cred/none) and no cgroup tracking, which a test box does without.
const slurmConf = `ClusterName=rcclx
SlurmctldHost=%[1]s(%[2]s)
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=%[4]s/state
SlurmdSpoolDir=%[4]s/spool-%%n
SlurmctldPidFile=%[4]s/slurmctld.pid
SlurmdPidFile=%[4]s/slurmd-%%n.pid
SlurmctldLogFile=%[4]s/slurmctld.log
SlurmdLogFile=%[4]s/slurmd-%%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/linear
SchedulerType=sched/builtin
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
NodeName=n1 NodeAddr=%[2]s CPUs=%[5]d
NodeName=n2 NodeAddr=%[3]s CPUs=%[5]d
PartitionName=debug Nodes=n[1-2] Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
`

// cgroupV1 mounts in the namespace's own mount namespace (ip netns exec mounts a fresh /sys) the cgroup v1
// hierarchies slurmd looks for at start, whether or not it tracks processes with them.
const cgroupV1 = `mount -t tmpfs none /sys/fs/cgroup && for c in cpu cpuacct cpuset memory devices freezer blkio pids; do
mkdir /sys/fs/cgroup/$c && mount -t cgroup -o $c cgroup /sys/fs/cgroup/$c || exit 1; done &&
mkdir /sys/fs/cgroup/systemd && mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd && exec "$@"`

// startSlurm starts slurmctld and a slurmd on each simulated node and waits until both nodes are idle; the
// node names resolve in the namespaces through /etc/netns/<namespace>/hosts, which ip netns exec mounts over
// /etc/hosts. It returns the variables srun needs, and skips where the daemons cannot run.
func startSlurm(t *testing.T, ns, addrs [2]string) []string {
	t.Helper()
	for _, name := range []string{"slurmctld", "slurmd", "srun", "sinfo"} {
		launcherPath(t, name, "slurm-wlm")
	}
	dir := t.TempDir()
	host, _ := os.Hostname()
	conf := filepath.Join(dir, "slurm.conf")
	text := fmt.Sprintf(slurmConf, host, addrs[0], addrs[1], dir, runtime.NumCPU())
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	hosts := fmt.Sprintf("127.0.0.1 localhost\n%s n1\n%s n2\n", addrs[0], addrs[1])
	for _, n := range ns {
		etc := filepath.Join("/etc/netns", n)
		t.Cleanup(func() { os.RemoveAll(etc) })
		if err := os.MkdirAll(etc, 0o755); err != nil {
			t.Skipf("cannot give the namespaces host names: %v", err)
		}
		if err := os.WriteFile(filepath.Join(etc, "hosts"), []byte(hosts), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"SLURM_CONF=" + conf}
	daemon := func(args ...string) {
		cmd := exec.Command("ip", args...)
		cmd.Env = append(baseEnv(), env...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
		})
	}
	for _, d := range []string{"state", "spool-n1", "spool-n2"} {
		os.Mkdir(filepath.Join(dir, d), 0o755)
	}
	daemon("netns", "exec", ns[0], "slurmctld", "-D", "-i")
	for i, n := range []string{"n1", "n2"} {
		daemon("netns", "exec", ns[i], "sh", "-c", cgroupV1, "sh", "slurmd", "-D", "-N", n)
	}
	var state []byte
	for start := time.Now(); time.Since(start) < 30*time.Second; time.Sleep(200 * time.Millisecond) {
		cmd := exec.Command("ip", "netns", "exec", ns[0], "sinfo", "-h", "-o", "%t %D")
		cmd.Env = append(baseEnv(), env...)
		state, _ = cmd.Output()
		if strings.TrimSpace(string(state)) == "idle 2" {
			return env
		}
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	var tail []string
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		tail = append(tail, filepath.Base(l)+": "+lines[len(lines)-1])
	}
	t.Skipf("Slurm's daemons did not bring up both nodes within 30 s (sinfo: %q): %s", state, strings.Join(tail, "; "))
	return nil
}

// srun on a cluster of two simulated nodes: the tasks meet at the step's first node, found in Slurm's node
// list, on a port derived from the job and step; and on one node, at 127.0.0.1.
func TestSrun(t *testing.T) {
	ns, addrs := twoNodes(t)
	env := startSlurm(t, ns, addrs)
	version := exec.Command("srun", "--version")
	version.Env = append(baseEnv(), env...)
	out, _ := version.Output()
	t.Logf("%s", strings.TrimSpace(string(out)))
	for _, tc := range []struct {
		name  string
		n     int
		nodes []string
	}{{"two nodes", 2, []string{"-N", "2", "--ntasks-per-node", "1"}}, {"one node", 2, []string{"-N", "1", "-n", "2"}},
		{"pmi2", 2, []string{"--mpi=pmi2", "-N", "2", "--ntasks-per-node", "1"}}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			start := time.Now()
			argv := append(append([]string{"ip", "netns", "exec", ns[0], "srun", "--overcommit"}, tc.nodes...), "BIN")
			stdout, stderr, err := runLauncher(t, ctx, env, append(argv, tinySweep...)...)
			checkTable(t, tc.n, stdout, stderr, err)
			t.Logf("%v", time.Since(start).Round(time.Millisecond))
		})
	}
}
