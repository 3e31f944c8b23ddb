package bootstrap

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func envOf(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestDetect(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		want Launch
	}{
		{"none", nil, Launch{Rank: 0, Size: 1, LocalRank: 0, LocalSize: 1}},
		{"mpirun", map[string]string{"OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "8",
			"OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "4", "PMIX_NAMESPACE": "1031798785"},
			Launch{"mpirun", 5, 8, 1, 4, "1031798785"}},
		{"pmi", map[string]string{"PMI_RANK": "2", "PMI_SIZE": "3"}, Launch{"pmi", 2, 3, -1, -1, ""}},
		{"pmi with hydra's local ids", map[string]string{"PMI_RANK": "2", "PMI_SIZE": "3",
			"MPI_LOCALRANKID": "0", "MPI_LOCALNRANKS": "1"}, Launch{"pmi", 2, 3, 0, 1, ""}},
		{"slurm multi-node", map[string]string{"SLURM_PROCID": "3", "SLURM_NTASKS": "4", "SLURM_LOCALID": "1",
			"SLURM_NNODES": "2", "SLURM_JOB_ID": "77", "SLURM_STEP_ID": "0"}, Launch{"slurm", 3, 4, 1, -1, "77.0"}},
		{"slurm one node", map[string]string{"SLURM_PROCID": "3", "SLURM_NTASKS": "4", "SLURM_LOCALID": "3",
			"SLURM_NNODES": "1"}, Launch{"slurm", 3, 4, 3, 4, ""}},
		{"slurm step without SLURM_NTASKS", map[string]string{"SLURM_PROCID": "1", "SLURM_STEP_NUM_TASKS": "2",
			"SLURM_LOCALID": "1", "SLURM_NNODES": "1"}, Launch{"slurm", 1, 2, 1, 2, ""}},
		{"slurm step smaller than allocation", map[string]string{"SLURM_PROCID": "1", "SLURM_NTASKS": "16",
			"SLURM_STEP_NUM_TASKS": "2", "SLURM_LOCALID": "1", "SLURM_NNODES": "1"}, Launch{"slurm", 1, 2, 1, 2, ""}},
		{"torchrun", map[string]string{"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2",
			"TORCHELASTIC_RUN_ID": "none", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500",
			"TORCHELASTIC_RESTART_COUNT": "0"}, Launch{"torchrun", 1, 2, 1, 2, "none.127.0.0.1.29500.0"}},
		{"by hand: no run id", map[string]string{"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
			"MASTER_PORT": "29500"}, Launch{"torchrun", 1, 2, -1, -1, ""}},
		{"torchrun started by srun wins", map[string]string{"RANK": "6", "WORLD_SIZE": "8", "SLURM_PROCID": "1",
			"SLURM_NTASKS": "2"}, Launch{"torchrun", 6, 8, -1, -1, ""}},
		{"mpirun inside slurm wins", map[string]string{"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2",
			"SLURM_PROCID": "0", "SLURM_NTASKS": "1"}, Launch{"mpirun", 1, 2, -1, -1, ""}},
		{"salloc's shell: SLURM_NTASKS alone is no launcher", map[string]string{"SLURM_NTASKS": "4", "SLURM_JOB_ID": "9"},
			Launch{Rank: 0, Size: 1, LocalRank: 0, LocalSize: 1}},
		{"torchrun's run id", map[string]string{"RANK": "1", "WORLD_SIZE": "2", "TORCHELASTIC_RUN_ID": "t"},
			Launch{"torchrun", 1, 2, -1, -1, "t"}},
		{"the suite's run id wins", map[string]string{"RANK": "1", "WORLD_SIZE": "2", "TORCHELASTIC_RUN_ID": "t",
			EnvRunID: "mine"}, Launch{"torchrun", 1, 2, -1, -1, "mine"}},
	}
	for _, c := range cases {
		got, err := Detect(envOf(c.env))
		if err != nil || got != c.want {
			t.Errorf("%s: Detect = %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
}

func TestDetectRejects(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"RANK": "x", "WORLD_SIZE": "2"}, `RANK="x" is not an integer`},
		{map[string]string{"RANK": "2", "WORLD_SIZE": "2"}, "torchrun rank 2 is not within world size 2"},
		{map[string]string{"PMI_RANK": "0", "PMI_SIZE": "0"}, "pmi rank 0 is not within world size 0"},
		{map[string]string{"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "a"},
			`OMPI_COMM_WORLD_LOCAL_RANK="a"`},
		// A launcher's rank without its size, or the reverse, ran as independent single-process runs.
		{map[string]string{"RANK": "1"}, `RANK="1" and WORLD_SIZE="": a launcher sets both`},
		{map[string]string{"WORLD_SIZE": "4"}, `RANK="" and WORLD_SIZE="4"`},
		{map[string]string{"OMPI_COMM_WORLD_SIZE": "2"}, `OMPI_COMM_WORLD_RANK="" and OMPI_COMM_WORLD_SIZE="2"`},
		{map[string]string{"PMI_RANK": "0"}, `PMI_RANK="0" and PMI_SIZE=""`},
		{map[string]string{"WORLD_SIZE": "4\x1b[2J"}, `WORLD_SIZE="4\x1b[2J"`},
		{map[string]string{"RANK": "0", "WORLD_SIZE": "2", EnvRunID: strings.Repeat("x", 201)}, "RCCLX_TESTS_RUN_ID is 201 bytes long"},
	}
	for _, c := range cases {
		_, err := Detect(envOf(c.env))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Detect(%v) error = %v, want it to contain %q", c.env, err, c.want)
		}
	}
}

func TestRendezvous(t *testing.T) {
	single := Launch{"slurm", 1, 4, 1, 4, "77.0"}
	multi := Launch{"slurm", 1, 4, 1, -1, "77.0"}
	slurmPort := derivedPort("77.0")
	cases := []struct {
		name string
		env  map[string]string
		l    Launch
		want string
	}{
		{"master", map[string]string{"MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500", "RCCLX_TESTS_BOOTSTRAP": "h:1"},
			multi, "10.0.0.1:29500"},
		{"ipv6 master", map[string]string{"MASTER_ADDR": "fe80::1", "MASTER_PORT": "29500"}, multi, "[fe80::1]:29500"},
		{"bracketed ipv6 master", map[string]string{"MASTER_ADDR": "[::1]", "MASTER_PORT": "29500"}, multi, "[::1]:29500"},
		{"suite variable", map[string]string{"RCCLX_TESTS_BOOTSTRAP": "node7:4000"}, multi, "node7:4000"},
		{"single node slurm job", map[string]string{"SLURM_JOB_ID": "77", "SLURM_STEP_ID": "0"}, single,
			"127.0.0.1:" + itoa(slurmPort)},
		{"multi-node slurm step", map[string]string{"SLURM_STEP_NODELIST": "gpu[07-08]", "SLURM_NODELIST": "gpu[01-09]"},
			multi, "gpu07:" + itoa(slurmPort)},
	}
	for _, c := range cases {
		got, err := Rendezvous(envOf(c.env), c.l)
		if err != nil || got != c.want {
			t.Errorf("%s: Rendezvous = %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	a, _ := Rendezvous(envOf(nil), Launch{"slurm", 0, 2, 0, 2, "1234.0"})
	b, _ := Rendezvous(envOf(nil), Launch{"slurm", 0, 2, 0, 2, "1235.0"})
	if a == b {
		t.Errorf("two job ids derived the same address %s", a)
	}
}

func TestRendezvousRejects(t *testing.T) {
	cases := []struct {
		env  map[string]string
		l    Launch
		want string
	}{
		{map[string]string{"MASTER_ADDR": "h"}, Launch{"torchrun", 0, 2, 0, 2, ""}, "set both"},
		{map[string]string{"MASTER_ADDR": "h", "MASTER_PORT": "70000"}, Launch{"torchrun", 0, 2, 0, 2, ""}, "not a number in 1-65535"},
		{map[string]string{"RCCLX_TESTS_BOOTSTRAP": "nocolon"}, Launch{"pmi", 0, 2, 0, 2, ""}, "is not host:port"},
		{map[string]string{"SLURM_JOB_ID": "5"}, Launch{"slurm", 3, 4, 1, -1, ""}, "rank 3 of 4 (slurm): no rendezvous address"},
		{nil, Launch{"torchrun", 0, 2, 0, 2, ""}, "set MASTER_ADDR and MASTER_PORT"},
		// A port inside MASTER_ADDR used to fail only at -T.
		{map[string]string{"MASTER_ADDR": "10.0.0.1:29500", "MASTER_PORT": "29500"}, Launch{"torchrun", 0, 2, 0, 2, ""},
			`MASTER_ADDR="10.0.0.1:29500" is not a host name or address (a port belongs in MASTER_PORT)`},
		{map[string]string{"MASTER_ADDR": "node7:29500", "MASTER_PORT": "29500"}, Launch{"torchrun", 0, 2, 0, 2, ""},
			"a port belongs in MASTER_PORT"},
	}
	for _, c := range cases {
		_, err := Rendezvous(envOf(c.env), c.l)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Rendezvous(%v, %+v) error = %v, want one line containing %q", c.env, c.l, err, c.want)
		}
	}
}

func TestDerivedPortRange(t *testing.T) {
	for _, id := range []string{"", "1", "slurm.0", strings.Repeat("x", 300)} {
		if p := derivedPort(id); p < 10000 || p >= 30000 {
			t.Errorf("derivedPort(%q) = %d, want 10000-29999", id, p)
		}
	}
}

// TestMPIInterruptIsAnInterrupt: a signal during the MPI meeting ends the run as interrupted (exit 130, 143), as a
// signal during the TCP rendezvous does, not as a failed run (exit 2).
func TestMPIInterruptIsAnInterrupt(t *testing.T) {
	err := error(interruptedError{rank: 0, in: "MPICH's MPI_Init"})
	if !errors.Is(fmt.Errorf("joining: %w", err), ErrInterrupted) {
		t.Errorf("%v is not ErrInterrupted", err)
	}
}
