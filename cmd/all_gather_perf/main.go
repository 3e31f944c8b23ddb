// Command all_gather_perf measures and validates all_gather like nccl-tests' binary of the same name.
package main

import (
	"os"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness"
)

func main() { os.Exit(harness.Main(collectives.AllGather, os.Args[1:])) }
