package gpuengine

import "github.com/rcclx-tests/rcclx-tests/internal/memkind"

// MemoryNote says what -Y made of the rank buffers.
func (c *comm) MemoryNote() string { return memkind.Note(c.memory) }
