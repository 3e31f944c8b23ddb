// Command all_reduce_bias_perf measures and validates all_reduce_bias like rccl-tests' binary of the same name.
package main

import (
	"os"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness"
)

func main() { os.Exit(harness.Main(collectives.AllReduceBias, os.Args[1:])) }
