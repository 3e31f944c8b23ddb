package bootstrap

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// agentStore says whether torchrun's agent holds MASTER_PORT itself: its TCPStore listens there for the whole
// run (static rendezvous, torchrun's default; c10d rendezvous where the agent shares its store), and it tells
// its workers so. Without it (c10d rendezvous of torch 1.x), MASTER_PORT is a port the agent found free for
// the workers.
func agentStore(getenv func(string) string) bool {
	v := strings.ToLower(getenv("TORCHELASTIC_USE_AGENT_STORE"))
	return v == "true" || v == "1"
}

// torchrunRendezvous is where torchrun's workers meet when the agent's store holds MASTER_PORT:
// RCCLX_TESTS_BOOTSTRAP if set, else MASTER_ADDR (global rank 0 runs on the node of the agent with group rank
// 0, which is MASTER_ADDR's) and a port derived from the run id, which includes the store's address and the
// restart count: every process derives the same port, another torchrun run on the node another one, and a
// restart a fresh one. The suite meets beside the store rather than as its client: torch 1.x and 2.x speak
// different store protocols (2.x opens every connection with a validation query that 1.x reads as a SET and
// waits on), and a wrong guess would stall the agent's own rendezvous.
func torchrunRendezvous(getenv func(string) string, l Launch) (string, error) {
	if addr := getenv(EnvBootstrap); addr != "" {
		return checkAddr(EnvBootstrap, addr)
	}
	host, port := getenv("MASTER_ADDR"), getenv("MASTER_PORT")
	store, err := checkAddr("MASTER_ADDR/MASTER_PORT", net.JoinHostPort(host, port))
	if err != nil || host == "" {
		return "", fmt.Errorf("bootstrap: torchrun's MASTER_ADDR=%q and MASTER_PORT=%q do not name its store; "+
			"set RCCLX_TESTS_BOOTSTRAP=host:port", host, port)
	}
	p := derivedPort(l.RunID + "@" + store)
	if strconv.Itoa(p) == port {
		p = derivedPort(l.RunID + "@" + store + "+")
	}
	return net.JoinHostPort(host, strconv.Itoa(p)), nil
}
