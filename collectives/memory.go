package collectives

// MemoryKind is where an engine allocates rank buffers: rccl-tests' -Y/--memory_type.
type MemoryKind int

const (
	MemoryDefault MemoryKind = iota // the engine's own choice (device memory on a GPU)
	MemoryCoarse                    // coarse-grained device memory (AMD); plain device memory elsewhere
	MemoryFine                      // fine-grained (uncached) device memory (AMD)
	MemoryHost                      // pinned host memory mapped for the device
	MemoryManaged                   // managed (unified) memory
)

// MemoryNoter is a Comm that says, in one header line, what it made of Config.Memory ("" to say nothing).
// A Comm that is no MemoryNoter has one kind of memory, and the harness says -Y was ignored.
type MemoryNoter interface {
	MemoryNote() string
}

// CTAPolicyNoter is a Comm that says, in one header line, what it made of Config.CTAPolicy ("" to say
// nothing). A Comm that is no CTAPolicyNoter has no ncclConfig, and the harness says -x was ignored.
type CTAPolicyNoter interface {
	CTAPolicyNote() string
}

// ScratchReporter is a Comm whose calls take host memory beyond the rank buffers the harness allocates
// (staging copies, partial sums, low-precision pools, peer-visible copies), kept from call to call: HostScratch
// is the most one rank of it holds for calls of c on buffers of bufBytes bytes. The harness's memory plan
// counts it; a Comm that is no ScratchReporter takes no such host memory.
type ScratchReporter interface {
	HostScratch(c *Collective, bufBytes int64) int64
}
