package bench

import (
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/hostengine"
)

// runtimeEngine is an engine on a GPU runtime.
type runtimeEngine struct {
	collectives.Engine
	rt string
}

func (e runtimeEngine) Runtime() string { return e.rt }

// libComm is a communicator over a loaded library.
type libComm struct {
	collectives.Comm
	path string
}

func (c libComm) LibraryPath() string { return c.path }

// TestPlatformDialect: rccl-tests' dialect on the HIP runtime or over an RCCL library, nccl-tests' on CUDA,
// NCCL and the host engine.
func TestPlatformDialect(t *testing.T) {
	for _, c := range []struct {
		eng  collectives.Engine
		comm collectives.Comm
		want string
	}{
		{runtimeEngine{rt: collectives.RuntimeHIP}, nil, plan.DialectRCCL},
		{runtimeEngine{rt: collectives.RuntimeCUDA}, nil, plan.DialectNCCL},
		{hostengine.New(), libComm{path: "/opt/rocm/lib/librccl.so.1"}, plan.DialectRCCL},
		{hostengine.New(), libComm{path: "/usr/lib/x86_64-linux-gnu/libnccl.so.2"}, plan.DialectNCCL},
		{hostengine.New(), nil, plan.DialectNCCL},
	} {
		if got := platformDialect(c.eng, c.comm); got != c.want {
			t.Errorf("%T %v: %s, want %s", c.eng, c.comm, got, c.want)
		}
	}
}
