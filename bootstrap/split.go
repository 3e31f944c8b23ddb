package bootstrap

import (
	"fmt"
	"github.com/rcclx-tests/rcclx-tests/collectives"
	"net"
	"os"
	"strconv"
)

// splitMember is what each process says of itself when the World is split.
type splitMember struct {
	Color int64
	Host  string
	Port  int            // a colour's first process: where it listens
	Addrs map[int]string // rank 0: each colour's first process's address, as rank 0 reaches it
}

// Split makes the World of this process's colour: the processes that called Split with the same colour, in
// the order of their ranks here, as MPI_Comm_split with the rank as key. Every process must call it. The
// colour's first process listens at a port of its own (on the host it reaches the others from) and the others
// of the colour meet it there, as at the run's rendezvous; the new World fails once this one is lost.
func (w *World) Split(color int64) (*World, error) {
	host, _ := os.Hostname()
	all, err := collectives.Exchange[splitMember](w, "the colours", splitMember{Color: color, Host: host})
	if err != nil {
		return nil, err
	}
	var group []int // ranks here of this colour's processes
	l := Launch{Launcher: w.launch.Launcher, RunID: w.launch.RunID + "/split " + strconv.FormatInt(color, 10)}
	for r, m := range all {
		if m.Color != color {
			continue
		}
		if r == w.Rank() {
			l.Rank = len(group)
		}
		if m.Host == host {
			if r < w.Rank() {
				l.LocalRank++
			}
			l.LocalSize++
		}
		group = append(group, r)
	}
	l.Size = len(group)
	sub := newWorld(l)
	sub.timeout = w.timeout
	if l.Size == 1 {
		sub.pids = []int{os.Getpid()}
	}
	loopback := true
	if h, _, err := net.SplitHostPort(w.addr); err == nil {
		ip := net.ParseIP(h)
		loopback = ip != nil && ip.IsLoopback()
	}
	me := splitMember{Color: color}
	if w.Rank() == 0 && !loopback {
		me.Addrs = w.leaderAddrs(all)
	}
	if l.Rank == 0 && l.Size > 1 {
		listen := ":0"
		if loopback {
			listen = "127.0.0.1:0"
		}
		if sub.ln, err = net.Listen("tcp", listen); err != nil {
			return nil, fmt.Errorf("bootstrap: rank %d found no port for the communicator of colour %d: %v", w.Rank(), color, err)
		}
		me.Port = sub.ln.Addr().(*net.TCPAddr).Port
	}
	if all, err = collectives.Exchange(w, "the sub-worlds' addresses", me); err != nil {
		sub.Close()
		return nil, err
	}
	if l.Size == 1 {
		return sub, nil
	}
	leaderHost := "127.0.0.1"
	if !loopback {
		leaderHost = all[0].Addrs[group[0]]
	}
	sub.addr = net.JoinHostPort(leaderHost, strconv.Itoa(all[group[0]].Port))
	go func() {
		select {
		case <-w.lost:
			sub.Abort(w.Err())
		case <-sub.done:
		}
	}()
	connect := w.timeout
	if connect <= 0 {
		connect = ConnectTimeout
	}
	if l.Rank == 0 {
		err = sub.serve(connect)
	} else {
		err = sub.dial(connect)
	}
	if err != nil {
		sub.Close()
		return nil, err
	}
	return sub, nil
}

// leaderAddrs is, at rank 0, the address of each colour's first process: rank 0's own as the others reach
// it, the others' as their connections come from (a name of the host may resolve elsewhere, or nowhere).
func (w *World) leaderAddrs(all []splitMember) map[int]string {
	out := map[int]string{}
	seen := map[int64]bool{}
	for r, m := range all {
		if seen[m.Color] {
			continue
		}
		seen[m.Color] = true
		if r == 0 {
			out[r], _, _ = net.SplitHostPort(w.addr)
		} else if a, ok := w.peers[r].conn.RemoteAddr().(*net.TCPAddr); ok {
			out[r] = a.IP.String()
		}
	}
	return out
}
