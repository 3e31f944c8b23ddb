// Package kernels holds the GPU engine's CUDA C++ sources, embedded. They need no toolkit header: prelude.cuh
// is the one place with vendor intrinsics, so a HIP build replaces only that file. Source returns them as one
// translation unit; each module is compiled with -DRX_DTYPE=<collectives.DType> -DRX_OP=<collectives.Op>.
package kernels

import (
	"embed"
	"strings"
)

//go:embed *.cuh *.cu
var files embed.FS

// Files lists the sources in the order they are concatenated.
var Files = []string{
	"prelude.cuh", "convert.cuh", "types.cuh", "comm.cuh", "vec.cuh",
	"barrier.cu", "ring.cu", "dda.cu", "ll.cu", "ll128.cu", "direct.cu", "hypercube.cu", "lowprec.cu", "copyengine.cu", "util.cu",
}

// Source returns every file of Files, in order, as one translation unit.
func Source() string {
	var b strings.Builder
	for _, name := range Files {
		data, err := files.ReadFile(name)
		if err != nil {
			panic("kernels: embedded file missing: " + name) // Files and the embed pattern disagree
		}
		b.WriteString("// ---- " + name + "\n")
		b.Write(data)
	}
	return b.String()
}
