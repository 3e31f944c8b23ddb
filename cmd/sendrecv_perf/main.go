// Command sendrecv_perf measures and validates sendrecv like nccl-tests' binary of the same name.
package main

import (
	"os"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness"
)

func main() { os.Exit(harness.Main(collectives.SendRecv, os.Args[1:])) }
