package bench

import (
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
)

// hostBuffer is a buffer the calls only name.
type hostBuffer struct{}

func (hostBuffer) Len() int64 { return 0 }

// TestRotatingTensor: the timed iterations alternate between the buffer start and 192 MiB further, and the
// buffers grow by that much.
func TestRotatingTensor(t *testing.T) {
	o := &plan.Options{}
	o.RCCL.RotatingTensor = 1
	th := &thread{coll: collectives.AllReduce, nranks: 1, ranks: []int{0}, opts: o,
		send: []collectives.Buffer{hostBuffer{}}, recv: []collectives.Buffer{hostBuffer{}}}
	calls := th.timedCalls(plan.Point{DType: collectives.Float, Size: 1024}, false, 20)
	if len(calls) != 2 || calls[0].Send[0].Off != 0 || calls[1].Send[0].Off != plan.RotatingBytes || calls[1].Recv[0].Off != plan.RotatingBytes {
		t.Errorf("calls %+v", calls)
	}
}
