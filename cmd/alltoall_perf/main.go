// Command alltoall_perf measures and validates alltoall like nccl-tests' binary of the same name.
package main

import (
	"os"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness"
)

func main() { os.Exit(harness.Main(collectives.AllToAll, os.Args[1:])) }
