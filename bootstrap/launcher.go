// Package bootstrap is the process group of multi-process runs: it detects the launcher (mpirun, an MPICH-style
// PMI launcher, srun, torchrun) from the environment, meets the other processes over TCP at a rendezvous
// address, and offers AllGather and Barrier through rank 0 (a star: small messages, few processes).
package bootstrap

import (
	"fmt"
	"hash/fnv"
	"net"
	"strconv"
	"strings"
)

// Launch is what the launcher says about this process. LocalRank and LocalSize are -1 when the launcher does
// not say; FromEnv then derives them from the hostnames of all processes.
type Launch struct {
	Launcher             string // "torchrun", "mpirun", "pmi", "slurm", or "" for a single process
	Rank, Size           int
	LocalRank, LocalSize int
	// RunID names this launch alike in every one of its processes and differently from any other launch (the
	// launcher's job id, or RCCLX_TESTS_RUN_ID); "" when nothing does. The rendezvous refuses a process whose
	// RunID differs from rank 0's.
	RunID string
}

// EnvRunID names a run where the launcher gives no job id (processes started by hand): any text, the same in
// every process of the run and different from any other run that may share its rendezvous address.
const EnvRunID = "RCCLX_TESTS_RUN_ID"

// launcherVars are the variables each launcher sets, in the order Detect tries them: the innermost launcher
// wins, and torchrun is usually started by one of the others (its children carry the outer launcher's
// variables too, naming the torchrun agent instead of themselves).
var launcherVars = []struct {
	name, rank, size, localRank, localSize string
}{
	{"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
	{"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
	{"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
	{"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", ""},
}

// Detect reads the launcher's variables through getenv. No launcher means a single process (Size 1). A rank
// without its world size (or the reverse) is refused: each process would otherwise run alone.
func Detect(getenv func(string) string) (Launch, error) {
	for _, v := range launcherVars[:3] { // Slurm sets SLURM_NTASKS in a batch script too, where no task has a rank
		if rank, size := getenv(v.rank), getenv(v.size); (rank == "") != (size == "") {
			set, unset := v.rank+"="+rank, v.size
			if rank == "" {
				set, unset = v.size+"="+size, v.rank
			}
			return Launch{}, fmt.Errorf("bootstrap: %s is set but %s is not: a %s launch sets both (unset it, or "+
				"set both)", Printable(set), unset, v.name)
		}
	}
	for _, v := range launcherVars {
		size := v.size
		if v.name == "slurm" && getenv("SLURM_STEP_NUM_TASKS") != "" {
			size = "SLURM_STEP_NUM_TASKS" // the step's tasks, where SLURM_NTASKS may describe the allocation
		}
		if getenv(v.rank) == "" || getenv(size) == "" { // a lone RANK may be anyone's variable
			continue
		}
		l := Launch{Launcher: v.name, LocalRank: -1, LocalSize: -1}
		var err error
		if l.Rank, err = intVar(getenv, v.rank); err != nil {
			return Launch{}, err
		}
		if l.Size, err = intVar(getenv, size); err != nil {
			return Launch{}, err
		}
		if l.Size < 1 || l.Rank < 0 || l.Rank >= l.Size {
			return Launch{}, fmt.Errorf("bootstrap: %s rank %d is not within world size %d", v.name, l.Rank, l.Size)
		}
		if getenv(v.localRank) != "" {
			if l.LocalRank, err = intVar(getenv, v.localRank); err != nil {
				return Launch{}, err
			}
		}
		if v.localSize != "" && getenv(v.localSize) != "" {
			if l.LocalSize, err = intVar(getenv, v.localSize); err != nil {
				return Launch{}, err
			}
		}
		if v.name == "slurm" && getenv("SLURM_NNODES") == "1" {
			l.LocalSize = l.Size
		}
		if l.RunID, err = runID(getenv, v.name); err != nil {
			return Launch{}, err
		}
		return l, nil
	}
	return Launch{Rank: 0, Size: 1, LocalRank: 0, LocalSize: 1}, nil
}

func intVar(getenv func(string) string, key string) (int, error) {
	v, err := strconv.Atoi(strings.TrimSpace(getenv(key)))
	if err != nil {
		return 0, fmt.Errorf("bootstrap: %s=%q is not an integer", key, getenv(key))
	}
	return v, nil
}

// jobIDVars name a job uniquely per launch; on a single node the rendezvous port is derived from the first set.
var jobIDVars = []string{
	"SLURM_JOB_ID", "OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_ess_jobid", "PMIX_NAMESPACE", "PMI_PORT",
	"TORCHELASTIC_RUN_ID",
}

// runID is the identity of this launch: RCCLX_TESTS_RUN_ID, else the first job id of the launchers that give
// one the same in every process (PMI_PORT is a node's own), else "". torchrun's default run id ("none") names
// nothing.
func runID(getenv func(string) string, launcher string) (string, error) {
	if id := getenv(EnvRunID); id != "" {
		if len(id) > maxRunID {
			return "", fmt.Errorf("bootstrap: %s is %d bytes long, at most %d", EnvRunID, len(id), maxRunID)
		}
		return id, nil
	}
	for _, key := range jobIDVars {
		id := getenv(key)
		if id == "" || key == "PMI_PORT" || key == "TORCHELASTIC_RUN_ID" && (id == "none" || launcher != "torchrun") {
			continue
		}
		if key == "SLURM_JOB_ID" {
			id += "." + getenv("SLURM_STEP_ID")
		}
		id = key + "=" + id
		if len(id) > maxRunID {
			h := fnv.New64a()
			h.Write([]byte(id))
			id = fmt.Sprintf("%s#%016x", key, h.Sum64())
		}
		return id, nil
	}
	return "", nil
}

// Rendezvous is the address rank 0 listens on and the others connect to: MASTER_ADDR:MASTER_PORT, else
// RCCLX_TESTS_BOOTSTRAP, else, when every process runs on this node, 127.0.0.1 and a port derived from the
// launcher's job id.
func Rendezvous(getenv func(string) string, l Launch) (string, error) {
	if host, port := getenv("MASTER_ADDR"), getenv("MASTER_PORT"); host != "" || port != "" {
		if host == "" || port == "" {
			return "", fmt.Errorf("bootstrap: MASTER_ADDR=%q and MASTER_PORT=%q: set both", host, port)
		}
		bare := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		if strings.Contains(bare, ":") && net.ParseIP(bare) == nil {
			return "", fmt.Errorf("bootstrap: MASTER_ADDR=%q is not a host name or address (a port belongs in "+
				"MASTER_PORT)", host)
		}
		return checkAddr("MASTER_ADDR/MASTER_PORT", net.JoinHostPort(bare, port))
	}
	if addr := getenv(EnvBootstrap); addr != "" {
		return checkAddr(EnvBootstrap, addr)
	}
	if l.LocalSize == l.Size {
		for _, key := range jobIDVars {
			if id := getenv(key); id != "" {
				if key == "SLURM_JOB_ID" {
					id += "." + getenv("SLURM_STEP_ID")
				}
				return net.JoinHostPort("127.0.0.1", strconv.Itoa(derivedPort(id))), nil
			}
		}
	}
	return "", fmt.Errorf("bootstrap: rank %d of %d (%s): no rendezvous address: set MASTER_ADDR and MASTER_PORT "+
		"or RCCLX_TESTS_BOOTSTRAP=host:port (single-node runs may instead rely on one of %s)",
		l.Rank, l.Size, l.Launcher, strings.Join(jobIDVars, " "))
}

func checkAddr(source, addr string) (string, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("bootstrap: %s: %q is not host:port", source, addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return "", fmt.Errorf("bootstrap: %s: port %q is not a number in 1-65535", source, port)
	}
	return addr, nil
}

// derivedPort maps a job id into 10000-29999, below Linux's default ephemeral range (32768-60999) so that it
// does not collide with outgoing connections.
func derivedPort(jobID string) int {
	h := fnv.New32a()
	h.Write([]byte(jobID))
	return 10000 + int(h.Sum32()%20000)
}
