// Package memkind maps rccl-tests' memory types (-Y) to CUDA allocations for the GPU and vendor engines, and
// words the header line about them.
package memkind

import (
	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

// Of is where rank buffers of kind k go: pinned host memory mapped for the device, managed memory, or device
// memory (coarse and fine are AMD's two kinds of device memory; NVIDIA GPUs have one).
func Of(k collectives.MemoryKind) gpurt.MemKind {
	switch k {
	case collectives.MemoryHost:
		return gpurt.MemHostMapped
	case collectives.MemoryManaged:
		return gpurt.MemManaged
	}
	return gpurt.MemDevice
}

// Note is the header line about k ("" for the default).
func Note(k collectives.MemoryKind) string {
	switch k {
	case collectives.MemoryCoarse:
		return "-Y coarse means nothing on this GPU (AMD's coarse-grained device memory): plain device memory is used"
	case collectives.MemoryFine:
		return "-Y fine means nothing on this GPU (AMD's fine-grained device memory): plain device memory is used"
	case collectives.MemoryHost:
		return "Memory: rank buffers in pinned host memory mapped for the device (-Y host)"
	case collectives.MemoryManaged:
		return "Memory: rank buffers in managed memory (-Y managed)"
	}
	return ""
}
