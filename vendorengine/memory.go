package vendorengine

import (
	"fmt"

	"github.com/rcclx-tests/rcclx-tests/internal/memkind"
	"github.com/rcclx-tests/rcclx-tests/nccl"
)

// MemoryNote says what -Y made of the rank buffers.
func (c *comm) MemoryNote() string { return memkind.Note(c.memory) }

// CTAPolicyNote says whether -x reached the communicators.
func (c *comm) CTAPolicyNote() string { return c.ctaNote }

// ctaPolicy is the CTA policy the communicators get (-1: none) and the header line about it: nccl-tests sets
// ncclConfig's CTAPolicy from NCCL 2.27 on (policy 2 from 2.28) and ignores -x before.
func ctaPolicy(lib *nccl.Library, policy int) (int, string) {
	if policy < 0 {
		return -1, ""
	}
	need := nccl.CTAPolicyVersion
	if policy > 1 {
		need = nccl.CTAPolicyZeroVersion
	}
	if !lib.Has("ncclCommInitRankConfig") || lib.Version() < need {
		return -1, fmt.Sprintf("-x %d ignored: %s (version %d) has no CTA policy %d (NCCL %d.%d)", policy, lib.File,
			lib.Version(), policy, need/10000, need/100%100)
	}
	return policy, fmt.Sprintf("CTA policy: %d (ncclConfig)", policy)
}
