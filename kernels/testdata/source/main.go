// Command source prints kernels.Source(), the translation unit NVRTC compiles, for scripts/hip-check.sh.
// It lives under testdata so that ./... builds skip it: go run ./kernels/testdata/source
package main

import (
	"os"

	"github.com/rcclx-tests/rcclx-tests/kernels"
)

func main() {
	if _, err := os.Stdout.WriteString(kernels.Source()); err != nil {
		os.Exit(1)
	}
}
