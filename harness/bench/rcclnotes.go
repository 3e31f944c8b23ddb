package bench

import (
	"time"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// rcclNotes are the header's lines about the rccl-tests flags that do not apply to this engine.
func (s *Session) rcclNotes() {
	r, name := &s.o.RCCL, s.eng.Name()
	if r.MemoryType != "" {
		if mn, ok := s.comm.(collectives.MemoryNoter); ok {
			if n := mn.MemoryNote(); n != "" {
				s.note("%s", n)
			}
		} else {
			s.note("-Y %s ignored: engine %s has one kind of memory", r.MemoryType, name)
		}
	}
	if r.Cumask != "" {
		s.note("--cumask %s ignored: compute-unit masks are AMD's; engine %s has none", r.Cumask, name)
	}
	if cf, ok := s.comm.(collectives.CacheFlusher); r.CacheFlush > 0 && !ok {
		s.note("-F %d ignored: engine %s cannot flush the instruction cache", r.CacheFlush, name)
	} else if r.CacheFlush > 0 {
		if err := cf.FlushICache(r.CacheFlush); err != nil {
			s.note("-F %d ignored: engine %s: %v", r.CacheFlush, name, err)
		}
	}
	if r.AlgoColumns == 1 && s.o.AlgoColumn {
		s.note("--algo-column ignored: -A 1 prints the algorithm")
	}
	if r.CTAPolicy >= 0 {
		if cn, ok := s.comm.(collectives.CTAPolicyNoter); ok {
			if n := cn.CTAPolicyNote(); n != "" {
				s.note("%s", n)
			}
		} else {
			s.note("-x %d ignored: engine %s has no ncclConfig", r.CTAPolicy, name)
		}
	}
	if r.DeviceImpl > 0 {
		s.note("-D %d ignored: engine %s runs the host API (NCCL's device-API kernels are not built here)", r.DeviceImpl, name)
	}
}

// delayHalves waits -q microseconds after an out-of-place half. rccl-tests sleeps there whenever the
// out-of-place half ran, with -O 1 (no in-place half follows) too; with -O 0 nothing sleeps.
func (s *Session) delayHalves() {
	if d := s.o.RCCL.DelayUs; d > 0 {
		time.Sleep(time.Duration(d) * time.Microsecond)
	}
}
