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
	// RunID names this launch, the same in every process of it and different from any other launch:
	// RCCLX_TESTS_RUN_ID, else the launcher's job id (Open MPI's, Slurm's job and step, torchrun's run id, store
	// address and restart count), or, where the launcher has none (MPICH), one rank 0 makes and sends through
	// MPI when meeting. "" when nothing names the run (variables set by hand). The rendezvous refuses a process
	// whose RunID differs from rank 0's.
	RunID string
}

// EnvRunID names a run where the launcher gives no job id (processes started by hand): any text, the same in
// every process of the run and different from any other run that may share its rendezvous address.
const EnvRunID = "RCCLX_TESTS_RUN_ID"

// launcherVars are the variables each launcher sets, in the order Detect tries them: the innermost launcher
// wins, and torchrun is usually started by one of the others (its children carry the outer launcher's
// variables too, naming the torchrun agent instead of themselves). runID lists the variables that name the
// launch (Launch.RunID): the values that are set, joined with ".", once the first is set (torchrun's store
// address and restart count only qualify its run id). partial says whether a rank without its size, or the
// reverse, is an error rather than no launcher (an salloc shell has SLURM_NTASKS without being a task).
var launcherVars = []struct {
	name, rank, size, localRank, localSize string
	runID                                  []string
	partial                                bool
}{
	{"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
		[]string{"TORCHELASTIC_RUN_ID", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT"}, true},
	{"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
		[]string{"PMIX_NAMESPACE"}, true},
	{"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", []string{"PMI_PORT"}, true},
	{"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "", []string{"SLURM_JOB_ID", "SLURM_STEP_ID"}, false},
}

// Detect reads the launcher's variables through getenv. No launcher means a single process (Size 1). A rank
// without its world size (or the reverse) is refused: each process would otherwise run alone.
func Detect(getenv func(string) string) (Launch, error) {
	for _, v := range launcherVars {
		size := v.size
		if v.name == "slurm" && getenv("SLURM_STEP_NUM_TASKS") != "" {
			size = "SLURM_STEP_NUM_TASKS" // the step's tasks, where SLURM_NTASKS may describe the allocation
		}
		if getenv(v.rank) == "" || getenv(size) == "" {
			if v.partial && (getenv(v.rank) != "" || getenv(size) != "") {
				return Launch{}, partialError(getenv, v.rank, size)
			}
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
		if l.RunID, err = runID(getenv, v.runID); err != nil {
			return Launch{}, err
		}
		return l, nil
	}
	return Launch{Rank: 0, Size: 1, LocalRank: 0, LocalSize: 1}, nil
}

// partialError is the one line for a launcher's rank without its size or the reverse: running on would start
// independent single-process runs that all succeed.
func partialError(getenv func(string) string, rank, size string) error {
	return fmt.Errorf("bootstrap: %s=%q and %s=%q: a launcher sets both (set both, or neither for a single "+
		"process)", rank, getenv(rank), size, getenv(size))
}

// runID is the identity of this launch: RCCLX_TESTS_RUN_ID, else the values of the launcher's keys that are
// set, joined with "." ("" unless the first is set), hashed where longer than a hello holds.
func runID(getenv func(string) string, keys []string) (string, error) {
	if id := getenv(EnvRunID); id != "" {
		if len(id) > maxRunID {
			return "", fmt.Errorf("bootstrap: %s is %d bytes long, at most %d", EnvRunID, len(id), maxRunID)
		}
		return id, nil
	}
	if getenv(keys[0]) == "" {
		return "", nil
	}
	var parts []string
	for _, k := range keys {
		if v := getenv(k); v != "" {
			parts = append(parts, v)
		}
	}
	id := strings.Join(parts, ".")
	if len(id) > maxRunID {
		h := fnv.New64a()
		h.Write([]byte(id))
		id = fmt.Sprintf("%s#%016x", keys[0], h.Sum64())
	}
	return id, nil
}

func intVar(getenv func(string) string, key string) (int, error) {
	v, err := strconv.Atoi(strings.TrimSpace(getenv(key)))
	if err != nil {
		return 0, fmt.Errorf("bootstrap: %s=%q is not an integer", key, getenv(key))
	}
	return v, nil
}

// Rendezvous is the address rank 0 listens on and the others connect to, decided before anything connects:
// MASTER_ADDR:MASTER_PORT (under torchrun only where its agent does not hold that port), else
// RCCLX_TESTS_BOOTSTRAP, else the launcher's way: torchrun's MASTER_ADDR with a port derived from its run
// (launch_torchrun.go), srun's first node of the step with a port derived from the job and step
// (launch_slurm.go), and under mpirun "" with no error: rank 0 then sends its address to the others through
// the MPI library (launch_mpi.go). Where that library does not load and every process runs on this node,
// 127.0.0.1 and a port derived from the run id serve.
func Rendezvous(getenv func(string) string, l Launch) (string, error) {
	if l.Launcher == "torchrun" && agentStore(getenv) {
		return torchrunRendezvous(getenv, l)
	}
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
	var why string
	switch l.Launcher {
	case "slurm":
		addr, err := slurmRendezvous(getenv, l)
		if err != nil || addr != "" {
			return addr, err
		}
		why = "; srun's SLURM_JOB_ID and SLURM_STEP_NODELIST are not both set"
	case "mpirun", "pmi":
		if _, err := loadMPI(l.Launcher); err != nil {
			why = "; " + err.Error()
		} else {
			return "", nil
		}
	}
	if l.LocalSize == l.Size && l.RunID != "" {
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(derivedPort(l.RunID))), nil
	}
	return "", fmt.Errorf("bootstrap: rank %d of %d (%s): no rendezvous address: set MASTER_ADDR and MASTER_PORT "+
		"or RCCLX_TESTS_BOOTSTRAP=host:port%s", l.Rank, l.Size, l.Launcher, why)
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
