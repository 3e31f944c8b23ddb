// Package memkind maps rccl-tests' memory types (-Y) to the GPU runtime's allocations for the GPU and vendor
// engines, and words the header line about them.
package memkind

import (
	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

// Of is where rank buffers of kind k go, as rccl-tests allocates them on HIP: coarse-grained device memory
// (hipMalloc, the default), fine-grained device memory (hipExtMallocWithFlags: uncached from HIP 5.7 on,
// fine-grained before), pinned host memory mapped for the device (hipHostMalloc) or managed memory
// (hipMallocManaged). NVIDIA GPUs have one kind of device memory, which coarse and fine both get.
func Of(k collectives.MemoryKind) gpurt.MemKind {
	switch k {
	case collectives.MemoryFine:
		return gpurt.MemFine
	case collectives.MemoryHost:
		return gpurt.MemHostMapped
	case collectives.MemoryManaged:
		return gpurt.MemManaged
	}
	return gpurt.MemDevice
}

// Note is the header line about k under the bound runtime ("" for the default).
func Note(k collectives.MemoryKind) string { return note(k, gpurt.Loaded()) }

func note(k collectives.MemoryKind, rt gpurt.Runtime) string {
	switch {
	case k == collectives.MemoryCoarse && rt == gpurt.HIP:
		return "Memory: rank buffers in coarse-grained device memory (-Y coarse, hipMalloc)"
	case k == collectives.MemoryFine && rt == gpurt.HIP:
		return "Memory: rank buffers in fine-grained device memory (-Y fine, hipExtMallocWithFlags: uncached from HIP 5.7)"
	case k == collectives.MemoryCoarse:
		return "-Y coarse means nothing on this GPU (AMD's coarse-grained device memory): plain device memory is used"
	case k == collectives.MemoryFine:
		return "-Y fine means nothing on this GPU (AMD's fine-grained device memory): plain device memory is used"
	case k == collectives.MemoryHost:
		return "Memory: rank buffers in pinned host memory mapped for the device (-Y host)"
	case k == collectives.MemoryManaged:
		return "Memory: rank buffers in managed memory (-Y managed)"
	}
	return ""
}
