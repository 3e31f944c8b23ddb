package bootstrap

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
)

// Split makes the World of this process's colour: the processes that called Split with the same colour, in
// the order of their ranks here, as MPI_Comm_split with the rank as key. Every process must call it. The
// colour's first process listens at a port of its own (on the host it reaches the others from) and the others
// of the colour meet it there, as at the run's rendezvous; the new World fails once this one is lost.
func (w *World) Split(color int64) (*World, error) {
	host, _ := os.Hostname()
	type member struct {
		Color int64
		Host  string
		Port  int
	}
	all, err := gatherAll[member](w, member{Color: color, Host: host})
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
	me := member{Color: color}
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
	if all, err = gatherAll[member](w, me); err != nil {
		sub.Close()
		return nil, err
	}
	if l.Size == 1 {
		return sub, nil
	}
	leader := all[group[0]]
	leaderHost := "127.0.0.1"
	if !loopback {
		leaderHost = leader.Host
	}
	sub.addr = net.JoinHostPort(leaderHost, strconv.Itoa(leader.Port))
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

// gatherAll is AllGather of a value of every process.
func gatherAll[T any](w *World, v T) ([]T, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	parts, err := w.AllGather(data)
	if err != nil {
		return nil, err
	}
	out := make([]T, len(parts))
	for r, p := range parts {
		if err := json.Unmarshal(p, &out[r]); err != nil {
			return nil, fmt.Errorf("bootstrap: rank %d sent %q, want its colour", r, Printable(string(p)))
		}
	}
	return out, nil
}
