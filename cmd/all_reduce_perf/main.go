// Command all_reduce_perf measures and validates all_reduce like nccl-tests' binary of the same name.
package main

import (
	"os"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness"
)

func main() { os.Exit(harness.Main(collectives.AllReduce, os.Args[1:])) }
