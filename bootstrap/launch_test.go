package bootstrap

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
)

func TestHostlist(t *testing.T) {
	cases := []struct{ in, want string }{
		{"gpu5", "gpu5"},
		{"n[01-03,7],gpu5", "n01 n02 n03 n7 gpu5"},
		{"n[8-10]", "n8 n9 n10"},
		{"n[008-010]", "n008 n009 n010"},
		{"a,b[1-2],c", "a b1 b2 c"},
		{"rack[1-2]-node[01-02]", "rack1-node01 rack1-node02 rack2-node01 rack2-node02"},
		{"node[1-2]-ib", "node1-ib node2-ib"},
		{"[1-2]x", "1x 2x"},
		{" a , b ", "a b"},
		{"node-1,node-2", "node-1 node-2"},
		{"n[0]", "n0"},
	}
	for _, c := range cases {
		got, err := hostlist(c.in, 1000)
		if err != nil || strings.Join(got, " ") != c.want {
			t.Errorf("hostlist(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
		first, err := hostlist(c.in, 1)
		if err != nil || len(first) != 1 || first[0] != strings.Fields(c.want)[0] {
			t.Errorf("hostlist(%q, 1) = %q, %v; want its first name", c.in, first, err)
		}
	}
	if got, _ := hostlist("n[1-1000000]", 3); len(got) != 3 {
		t.Errorf("a limit of 3 gave %d names", len(got))
	}
}

func TestHostlistRejects(t *testing.T) {
	for _, in := range []string{"", "a,,b", "n[1-2", "n1-2]", "n[3-1]", "n[a-b]", "n[1-]", "n[]", "n[1,,2]",
		"n[-1]", "n[0-99999999]", "n[1[2]]"} {
		if got, err := hostlist(in, 1000); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("hostlist(%q) = %q, %v; want one line of error", in, got, err)
		}
	}
}

// srun's tasks across nodes meet at the step's first node without MASTER_ADDR, at a port every task derives
// alike from the job and step; rank 0 placed elsewhere says so at once.
func TestSlurmRendezvous(t *testing.T) {
	env := map[string]string{"SLURM_STEP_NODELIST": "node[2-3]", "SLURM_JOB_NODELIST": "node[1-3]", "SLURMD_NODENAME": "node3"}
	l := Launch{"slurm", 5, 8, 1, -1, "4242.1"}
	want := "node2:" + strconv.Itoa(derivedPort("4242.1"))
	if got, err := Rendezvous(envOf(env), l); got != want || err != nil {
		t.Errorf("rank 5: %q, %v; want %q", got, err, want)
	}
	env["SLURMD_NODENAME"] = "node2"
	l.Rank = 0
	if got, err := Rendezvous(envOf(env), l); got != want || err != nil {
		t.Errorf("rank 0 on the first node: %q, %v; want %q", got, err, want)
	}
	env["SLURMD_NODENAME"] = "node3"
	if _, err := Rendezvous(envOf(env), l); err == nil || !strings.Contains(err.Error(), "srun placed rank 0 on node3, not on the step's first node node2") {
		t.Errorf("rank 0 on another node: %v", err)
	}
	delete(env, "SLURM_STEP_NODELIST")
	if got, _ := Rendezvous(envOf(env), Launch{"slurm", 1, 8, 1, -1, "4242.1"}); !strings.HasPrefix(got, "node1:") {
		t.Errorf("without the step's list: %q, want the job's first node", got)
	}
	env["SLURM_JOB_NODELIST"] = "node[1-"
	if _, err := Rendezvous(envOf(env), Launch{"slurm", 1, 8, 1, -1, "4242.1"}); err == nil || !strings.Contains(err.Error(), `SLURM_JOB_NODELIST="node[1-"`) {
		t.Errorf("bad list: %v", err)
	}
	other, _ := Rendezvous(envOf(map[string]string{"SLURM_STEP_NODELIST": "node[2-3]"}), Launch{"slurm", 1, 8, 1, -1, "4242.2"})
	if other == want {
		t.Errorf("the next step of the job derived the same address %s", other)
	}
}

// Under torchrun the agent's store holds MASTER_PORT: the workers meet at MASTER_ADDR on a port of their own,
// the same in every worker, another for another run or restart, never the store's.
func TestTorchrunRendezvous(t *testing.T) {
	env := map[string]string{"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500",
		"TORCHELASTIC_RUN_ID": "none", "TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_USE_AGENT_STORE": "True"}
	addr := func(env map[string]string) string {
		t.Helper()
		l, err := Detect(envOf(env))
		if err != nil {
			t.Fatal(err)
		}
		a, err := Rendezvous(envOf(env), l)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	first := addr(env)
	host, port, _ := net.SplitHostPort(first)
	if host != "127.0.0.1" || port == "29500" {
		t.Fatalf("rank 0 meets at %s: want MASTER_ADDR and a port other than the store's", first)
	}
	env["RANK"] = "1"
	if a := addr(env); a != first {
		t.Errorf("rank 1 meets at %s, rank 0 at %s", a, first)
	}
	env["TORCHELASTIC_RESTART_COUNT"] = "1"
	if a := addr(env); a == first {
		t.Errorf("a restart meets at the same address %s", a)
	}
	env["MASTER_PORT"] = "29501"
	if a := addr(env); a == first {
		t.Errorf("another store meets at the same address %s", a)
	}
	env["RCCLX_TESTS_BOOTSTRAP"] = "127.0.0.1:4000"
	if a := addr(env); a != "127.0.0.1:4000" {
		t.Errorf("with RCCLX_TESTS_BOOTSTRAP: %s", a)
	}
	delete(env, "RCCLX_TESTS_BOOTSTRAP")
	env["TORCHELASTIC_USE_AGENT_STORE"] = "False" // c10d rendezvous: MASTER_PORT is free for the workers
	if a := addr(env); a != "127.0.0.1:29501" {
		t.Errorf("without the agent's store: %s, want MASTER_ADDR:MASTER_PORT", a)
	}
	env["TORCHELASTIC_USE_AGENT_STORE"] = "True"
	delete(env, "MASTER_ADDR")
	l, _ := Detect(envOf(env))
	if _, err := Rendezvous(envOf(env), l); err == nil || !strings.Contains(err.Error(), "do not name its store") {
		t.Errorf("without MASTER_ADDR: %v", err)
	}
}

func TestPickAddr(t *testing.T) {
	own := []ifaceAddr{addr(t, "lo", "127.0.0.1/8"), addr(t, "eth0", "10.1.0.5/16")}
	cases := []struct {
		addrs []string
		want  string
	}{
		{[]string{"192.168.1.1", "10.1.7.7"}, "10.1.7.7"},      // the network this host is on
		{[]string{"192.168.1.1", "10.1.0.5"}, "10.1.0.5"},      // this host itself
		{[]string{"192.168.1.1", "172.16.0.1"}, "192.168.1.1"}, // else the first
		{[]string{"127.0.0.1"}, "127.0.0.1"},
	}
	for _, c := range cases {
		if got := pickAddr(c.addrs, own); got != c.want {
			t.Errorf("pickAddr(%v) = %s, want %s", c.addrs, got, c.want)
		}
	}
}

func addr(t *testing.T, iface, cidr string) ifaceAddr {
	ip, n, err := net.ParseCIDR(cidr)
	if err != nil {
		t.Fatal(err)
	}
	n.IP = ip
	return ifaceAddr{iface, n}
}

// Rank 0 offers the addresses of the interfaces NCCL would use: never Docker's or libvirt's bridge, whose
// address every host shares (a process elsewhere would connect to itself), and NCCL_SOCKET_IFNAME as NCCL reads it.
func TestOwnAddrs(t *testing.T) {
	addrs := []ifaceAddr{addr(t, "lo", "127.0.0.1/8"), addr(t, "docker0", "172.17.0.1/16"),
		addr(t, "virbr0", "192.168.122.1/24"), addr(t, "ib0", "fd00::5/64"), addr(t, "eth0", "10.1.0.5/16"),
		addr(t, "eth0", "fe80::1/64"), addr(t, "eth1", "10.2.0.5/16"), addr(t, "ens1", "10.3.0.5/16")}
	cases := []struct{ ifname, want string }{
		{"", "10.1.0.5 10.2.0.5 10.3.0.5 fd00::5"},
		{"eth", "10.1.0.5 10.2.0.5"},
		{"=eth1", "10.2.0.5"},
		{"^eth,ib", "172.17.0.1 192.168.122.1 10.3.0.5"}, // the user's list replaces the default
		{"^=eth0", "172.17.0.1 192.168.122.1 10.2.0.5 10.3.0.5 fd00::5"},
		{"ib", "fd00::5"},
		{"nothing", "127.0.0.1"},
	}
	for _, c := range cases {
		if got := strings.Join(ownAddrs(addrs, c.ifname), " "); got != c.want {
			t.Errorf("NCCL_SOCKET_IFNAME=%q: %s, want %s", c.ifname, got, c.want)
		}
	}
	if a := ownAddrs(interfaceAddrs(), ""); len(a) == 0 || net.ParseIP(a[0]) == nil {
		t.Errorf("this host's: %v", a)
	}
}

// Without the MPI library the environment's ways stay, and the error says what did not load.
func TestRendezvousWithoutMPILibrary(t *testing.T) {
	if _, err := openMPI(mpiFlavor{name: "Some MPI", libs: []string{"libmpi-absent.so.99"}}); err == nil ||
		!strings.Contains(err.Error(), "Some MPI's library (to meet without MASTER_ADDR) did not load: ") ||
		!strings.Contains(err.Error(), "libmpi-absent.so.99") {
		t.Errorf("openMPI: %v", err)
	}
	defer mpiLoaded.Delete("pmi")
	mpiLoaded.Store("pmi", mpiResult{err: errors.New("MPICH's library did not load: libmpich.so.12: not found")})
	if a, err := Rendezvous(envOf(nil), Launch{"pmi", 1, 2, 1, 2, "7"}); err != nil || !strings.HasPrefix(a, "127.0.0.1:") {
		t.Errorf("one node: %q, %v; want 127.0.0.1 and a derived port", a, err)
	}
	_, err := Rendezvous(envOf(nil), Launch{"pmi", 1, 4, 1, -1, ""})
	if err == nil || !strings.Contains(err.Error(), "set MASTER_ADDR and MASTER_PORT or RCCLX_TESTS_BOOTSTRAP=host:port; "+
		"MPICH's library did not load: libmpich.so.12: not found") {
		t.Errorf("across nodes: %v", err)
	}
}
