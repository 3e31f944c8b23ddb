package hostengine

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

func TestOpenDescribesRanks(t *testing.T) {
	e := New()
	if e.Name() != "host" {
		t.Errorf("Name %q", e.Name())
	}
	c, err := e.Open(collectives.Config{NThreads: 3, NGpus: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.NRanks() != 6 || c.Library() != fmt.Sprintf("rcclx-host=%d", Version) || c.Version() != 0 {
		t.Errorf("NRanks %d Library %q Version %d", c.NRanks(), c.Library(), c.Version())
	}
	for i, g := range c.Groups() {
		if want := []int{2 * i, 2*i + 1}; !slices.Equal(g.Ranks(), want) {
			t.Errorf("group %d ranks %v, want %v", i, g.Ranks(), want)
		}
	}
	for r, d := range c.Devices() {
		if d.Rank != r || d.Group != r/2 || d.Index != r || d.Name != "host" || d.BusID != "host" || d.Pid != os.Getpid() {
			t.Errorf("device %d: %+v", r, d)
		}
	}
}

type fakeWorld struct{ size int }

func (w fakeWorld) Rank() int                            { return 0 }
func (w fakeWorld) Size() int                            { return w.size }
func (w fakeWorld) AllGather(b []byte) ([][]byte, error) { return [][]byte{b}, nil }
func (w fakeWorld) Barrier() error                       { return nil }

func TestOpenRejects(t *testing.T) {
	for _, tc := range []struct {
		cfg  collectives.Config
		want string
	}{
		{collectives.Config{NThreads: 0, NGpus: 2}, "at least one"},
		{collectives.Config{NThreads: 1, NGpus: 2, Env: map[string]string{"RCCL_DDA_ENABLE": "maybe"}}, "RCCL_DDA_ENABLE"},
	} {
		if _, err := New().Open(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one mentioning %q", tc.cfg, err, tc.want)
		}
	}
	c, err := New().Open(collectives.Config{NThreads: 1, NGpus: 1, World: fakeWorld{1}})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

func TestBuffersAreAlignedAndBounded(t *testing.T) {
	c := openComm(t, 2, nil, 0, 0)
	g := c.Groups()[0]
	for _, n := range []int64{0, 1, 63, 4096} {
		b, err := g.Alloc(0, n)
		if err != nil || b.Len() != n {
			t.Fatalf("Alloc(%d): %v, len %d", n, err, b.Len())
		}
		if n > 0 && !(&collectives.Call{Send: []collectives.View{{Buf: b}}, Recv: []collectives.View{{Buf: b}}}).Aligned() {
			t.Errorf("Alloc(%d) not aligned", n)
		}
	}
	b, _ := g.Alloc(0, 16)
	if err := g.Write(collectives.View{Buf: b, Off: 8}, make([]byte, 9)); err == nil {
		t.Error("Write past the end succeeded")
	}
	if err := g.Read(make([]byte, 4), collectives.View{Buf: fakeBuffer{}}); err == nil {
		t.Error("Read of a foreign buffer succeeded")
	}
	k := collectives.AllReduce.Counts(64, 2, 0, collectives.Float)
	call := &collectives.Call{Coll: collectives.AllReduce, DType: collectives.Float, Counts: []collectives.Counts{k},
		Send: []collectives.View{{Buf: b}}, Recv: []collectives.View{{Buf: b}}}
	if err := g.Launch(call); err == nil {
		t.Error("Launch with views past the buffer's end succeeded")
	}
}

type fakeBuffer struct{}

func (fakeBuffer) Len() int64 { return 4 }

func TestCloseStopsRanks(t *testing.T) {
	c := openComm(t, 3, nil, 0, 0)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	out := runCase(t, c, testCase{coll: collectives.AllReduce, dt: collectives.Float, op: collectives.Sum, bytes: 64}, 1)
	if out.err == nil {
		t.Error("call after Close succeeded")
	}
}
