package vendorengine

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

// simBuf is a rank's buffer in the simulation: host bytes at a made-up device address.
type simBuf struct {
	addr gpurt.DevicePtr
	b    []byte
}

func (s *simBuf) Len() int64 { return int64(len(s.b)) }

// simulation runs the sends and receives p2ps and hyperCubeStep list, for every rank, on host memory: in each
// group, a rank's k-th send to a peer meets the peer's k-th receive from it (NCCL's order), counts must agree,
// and every send reads before any receive writes.
type simulation struct {
	t    *testing.T
	bufs []*simBuf
}

func (s *simulation) at(p gpurt.DevicePtr, n int64) []byte {
	for _, b := range s.bufs {
		if p >= b.addr && p+gpurt.DevicePtr(n) <= b.addr+gpurt.DevicePtr(len(b.b)) {
			return b.b[p-b.addr : p-b.addr+gpurt.DevicePtr(n)]
		}
	}
	s.t.Fatalf("%d bytes at %#x are in no buffer", n, p)
	return nil
}

func (s *simulation) group(ops [][]p2p, es int64) {
	type pair struct{ from, to int }
	sends, recvs := map[pair][]p2p{}, map[pair][]p2p{}
	for me, list := range ops {
		for _, op := range list {
			if op.recv {
				recvs[pair{op.peer, me}] = append(recvs[pair{op.peer, me}], op)
			} else {
				sends[pair{me, op.peer}] = append(sends[pair{me, op.peer}], op)
			}
		}
	}
	type write struct {
		dst  gpurt.DevicePtr
		data []byte
	}
	var writes []write
	for k, ss := range sends {
		rs := recvs[k]
		if len(rs) != len(ss) {
			s.t.Fatalf("rank %d sends %d times to rank %d, which receives %d times", k.from, len(ss), k.to, len(rs))
		}
		for i, op := range ss {
			if rs[i].count != op.count {
				s.t.Fatalf("rank %d sends %d elements to rank %d, which receives %d", k.from, op.count, k.to, rs[i].count)
			}
			writes = append(writes, write{rs[i].ptr, append([]byte(nil), s.at(op.ptr, op.count*es)...)})
		}
		delete(recvs, k)
	}
	for k, rs := range recvs {
		s.t.Fatalf("rank %d receives %d times from rank %d, which sends nothing", k.to, len(rs), k.from)
	}
	for _, w := range writes {
		copy(s.at(w.dst, int64(len(w.data))), w.data)
	}
}

// TestP2PCallsGiveTheCollectives: the point-to-point calls the vendor engine makes for alltoall, gather,
// scatter, sendrecv, alltoallv and hypercube, run on simulated memory from nccl-tests' inputs, give the
// expected outputs (out of place, and in place where nccl-tests checks it), with every root.
func TestP2PCallsGiveTheCollectives(t *testing.T) {
	colls := []*collectives.Collective{collectives.AllToAll, collectives.Gather, collectives.Scatter,
		collectives.SendRecv, collectives.AllToAllV, collectives.HyperCube}
	for _, coll := range colls {
		for _, n := range []int{1, 2, 3, 4, 5, 8} {
			if coll == collectives.HyperCube && n&(n-1) != 0 {
				continue
			}
			roots := []int{-1}
			if coll.Rooted {
				roots = roots[:0]
				for r := range n {
					roots = append(roots, r)
				}
			}
			for _, dt := range []collectives.DType{collectives.Int8, collectives.Half, collectives.Double} {
				for _, size := range []int64{0, 37 * int64(dt.Size()), 4096 + 8} {
					for _, root := range roots {
						for _, inPlace := range []bool{false, true} {
							if inPlace && (!coll.InPlaceChecked() || coll == collectives.AllToAll) {
								continue
							}
							t.Run(fmt.Sprintf("%s/%d/%s/%d/root%d/inplace%v", coll.Name, n, dt, size, root, inPlace), func(t *testing.T) {
								simulate(t, coll, n, dt, size, root, inPlace)
							})
						}
					}
				}
			}
		}
	}
}

func simulate(t *testing.T, coll *collectives.Collective, n int, dt collectives.DType, size int64, root int, inPlace bool) {
	seed := rand.Uint64()
	es := int64(dt.Size())
	s := &simulation{t: t}
	c := &collectives.Call{Coll: coll, DType: dt, Op: collectives.Sum, Root: root}
	newBuf := func(elems int64) *simBuf {
		b := &simBuf{addr: gpurt.DevicePtr(len(s.bufs)+1) << 32, b: make([]byte, elems*es)}
		for i := range b.b {
			b.b[i] = 0xA5
		}
		s.bufs = append(s.bufs, b)
		return b
	}
	for r := range n {
		k := coll.Counts(size, n, r, dt)
		c.Counts = append(c.Counts, k)
		recv := newBuf(max(k.Send, k.Recv))
		send, sendOff, recvOff := newBuf(k.Send), int64(0), int64(0)
		if inPlace {
			send, sendOff, recvOff = recv, k.SendInPlace*es, k.RecvInPlace*es
		}
		c.Send = append(c.Send, collectives.View{Buf: send, Off: sendOff})
		c.Recv = append(c.Recv, collectives.View{Buf: recv, Off: recvOff})
		copy(send.b[sendOff:], coll.Input(dt, c.Op, r, n, k, seed))
	}
	ptr := func(v collectives.View) gpurt.DevicePtr { return v.Buf.(*simBuf).addr + gpurt.DevicePtr(v.Off) }
	steps := [][][]p2p{}
	if coll == collectives.HyperCube {
		for _, mask := range hyperCubeMasks(n) {
			var step [][]p2p
			for r := range n {
				step = append(step, hyperCubeStep(c, r, r, n, mask, ptr(c.Send[r]), ptr(c.Recv[r])))
			}
			steps = append(steps, step)
		}
	} else {
		var one [][]p2p
		for r := range n {
			one = append(one, p2ps(c, r, r, n, ptr(c.Send[r]), ptr(c.Recv[r])))
		}
		steps = append(steps, one)
	}
	for _, step := range steps {
		s.group(step, es)
	}
	for r := range n {
		e := coll.Expect(dt, c.Op, r, root, n, c.Counts[r], seed, collectives.Tolerance{})
		got := s.at(ptr(c.Recv[r]), int64(len(e.Want())))
		if wrong, _ := e.Check(got); wrong != 0 {
			t.Errorf("rank %d: %d wrong elements (seed %#x)", r, wrong, seed)
		}
	}
}
