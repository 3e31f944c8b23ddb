package bootstrap

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"
)

// Split groups the processes by colour, in rank order; each colour's World gathers among its own processes.
// Where the run's rendezvous is named by a host name (not a loopback address), each colour's first process
// listens on every interface and the others reach it at the address rank 0 sees it connect from.
func TestSplit(t *testing.T) {
	for _, c := range []struct {
		colors []int64
		named  bool
		want   string // per process: rank/size in its colour, then what its colour's AllGather returned
	}{
		{[]int64{0, 1, 0, 1}, false, "[0/2 [p0 p2] 0/2 [p1 p3] 1/2 [p0 p2] 1/2 [p1 p3]]"},
		{[]int64{5, 5, 7}, false, "[0/2 [p0 p1] 1/2 [p0 p1] 0/1 [p2]]"},
		{[]int64{1, 0, 1, 0}, true, "[0/2 [p0 p2] 0/2 [p1 p3] 1/2 [p0 p2] 1/2 [p1 p3]]"},
	} {
		n := len(c.colors)
		ms := make([]member, n)
		for r := range ms {
			ms[r] = member{rank: r}
		}
		addr := localAddr(t)
		ws, errs := meetAt(addr, n, ms, 5*time.Second)
		for _, err := range errs {
			if err != nil {
				t.Fatal(errs)
			}
		}
		if c.named {
			_, port, _ := net.SplitHostPort(addr)
			for _, w := range ws {
				w.addr = net.JoinHostPort("localhost", port)
			}
		}
		got := make([]string, n)
		var wg sync.WaitGroup
		for r, w := range ws {
			wg.Go(func() {
				sub, err := w.Split(c.colors[r])
				if err != nil {
					got[r] = err.Error()
					return
				}
				defer sub.Close()
				parts, err := sub.AllGather(fmt.Appendf(nil, "p%d", r))
				got[r] = fmt.Sprintf("%d/%d %s", sub.Rank(), sub.Size(), parts)
				if err != nil {
					got[r] = err.Error()
				}
			})
		}
		wg.Wait()
		closeAll(ws)
		if fmt.Sprint(got) != c.want {
			t.Errorf("colours %v: %v, want %v", c.colors, got, c.want)
		}
	}
}
