// Command reduce_scatter_perf measures and validates reduce_scatter like nccl-tests' binary of the same name.
package main

import (
	"os"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness"
)

func main() { os.Exit(harness.Main(collectives.ReduceScatter, os.Args[1:])) }
