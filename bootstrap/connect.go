package bootstrap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
)

// serve is rank 0's side of connecting: listen at the rendezvous port, ack every other rank's hello at once,
// then welcome them all. A rank that connected and then died fails the run as soon as its connection closes.
func (w *World) serve(timeout time.Duration) error {
	host, port, _ := net.SplitHostPort(w.addr)
	listen := net.JoinHostPort(host, port)
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		listen = ":" + port // MASTER_ADDR names this host as the others reach it; accept on every interface
	}
	ln, err := w.ln, error(nil) // an MPI meeting already listens
	if ln == nil {
		ln, err = net.Listen("tcp", listen)
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("bootstrap: rank 0 cannot listen on %s: another program, or another process that says it is rank 0, holds the port (choose another MASTER_PORT, or check the ranks)", listen)
	}
	if err != nil {
		return fmt.Errorf("bootstrap: rank 0 could not listen on %s: %v", listen, err)
	}
	w.ln = ln
	end := time.Now().Add(timeout)
	conns := make(chan net.Conn)
	accepted := make(chan error, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				accepted <- err
				return
			}
			select {
			case conns <- c:
			case <-w.done:
				c.Close()
				return
			}
		}
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	w.peers = make([]*peer, w.Size())
	w.pids = make([]int, w.Size())
	w.pids[0] = os.Getpid()
	for arrived := 1; arrived < w.Size(); arrived++ {
		var c net.Conn
		select {
		case c = <-conns:
		case err := <-accepted:
			return fmt.Errorf("bootstrap: rank 0 accepting on %s: %v", listen, err)
		case <-w.failed:
			return w.Err()
		case <-timer.C:
			return w.refuse(fmt.Errorf("bootstrap: rank 0 waited %v on %s for ranks %v to connect", timeout, listen, w.missing()))
		}
		rank, pid, err := w.hello(c, earliest(end, time.Now().Add(ackTimeout)))
		if err != nil {
			_ = writeFrame(c, kindFail, []byte(err.Error()), time.Second)
			c.Close()
			return w.refuse(err)
		}
		p := &peer{rank: rank, conn: c}
		w.pmu.Lock()
		w.peers[rank], w.pids[rank] = p, pid
		w.pmu.Unlock()
		if err := p.write(kindAck, magic, time.Until(end)); err != nil {
			return fmt.Errorf("bootstrap: rank 0 could not answer rank %d: %v", rank, err)
		}
		w.pmu.Lock()
		p.in = reader(c, w.done, func(f frame) { w.lostPeer(p, f) })
		w.pmu.Unlock()
	}
	welcome := make([]byte, 0, 4*w.Size())
	for _, pid := range w.pids {
		welcome = binary.LittleEndian.AppendUint32(welcome, uint32(pid))
	}
	for _, p := range w.peers[1:] {
		if err := p.write(kindWelcome, welcome, time.Until(end)); err != nil {
			return fmt.Errorf("bootstrap: rank 0 could not welcome rank %d: %v", p.rank, err)
		}
	}
	ln.Close() // everyone is here: free the port
	return w.Err()
}

// refuse tells the ranks that connected why the run cannot start (they wait for rank 0's word, see dial),
// and returns err.
func (w *World) refuse(err error) error {
	for _, p := range w.peers {
		if p != nil {
			_ = p.write(kindFail, []byte(err.Error()), time.Second)
		}
	}
	return err
}

// hello reads and checks a connecting process's magic, rank, world size and pid.
func (w *World) hello(c net.Conn, end time.Time) (rank, pid int, err error) {
	c.SetReadDeadline(end)
	f, err := readFrame(c)
	c.SetReadDeadline(time.Time{})
	n := len(magic)
	if err != nil || f.kind != kindHello || len(f.payload) != n+12 || !bytes.Equal(f.payload[:n], magic) {
		return 0, 0, fmt.Errorf("bootstrap: rank 0 got no valid hello from %v (%v): is another program using %s?",
			c.RemoteAddr(), err, w.addr)
	}
	rank = int(binary.LittleEndian.Uint32(f.payload[n:]))
	size := int(binary.LittleEndian.Uint32(f.payload[n+4:]))
	pid = int(binary.LittleEndian.Uint32(f.payload[n+8:]))
	switch {
	case size != w.Size():
		return 0, 0, fmt.Errorf("bootstrap: rank %d says the world has %d processes, rank 0 says %d", rank, size, w.Size())
	case rank < 1 || rank >= w.Size():
		return 0, 0, fmt.Errorf("bootstrap: a process says it is rank %d of %d", rank, size)
	case w.peers[rank] != nil:
		return 0, 0, fmt.Errorf("bootstrap: two processes say they are rank %d", rank)
	}
	return rank, pid, nil
}

// missing lists the ranks that have not connected yet.
func (w *World) missing() []int {
	var out []int
	for r := 1; r < w.Size(); r++ {
		if w.peers[r] == nil {
			out = append(out, r)
		}
	}
	return out
}

// dial is the other ranks' side: connect to rank 0 with bounded retries (it may not listen yet), say hello,
// check that what answered is rank 0 of this suite, wait for the welcome.
func (w *World) dial(timeout time.Duration) error {
	end := time.Now().Add(timeout)
	backoff := 20 * time.Millisecond
	var c net.Conn
	for {
		var err error
		c, err = net.DialTimeout("tcp", w.addr, min(time.Until(end), 5*time.Second))
		if err == nil {
			break
		}
		left := time.Until(end)
		if left <= 0 {
			return fmt.Errorf("bootstrap: rank %d could not reach %s within %v: %v", w.Rank(), w.addr, timeout, err)
		}
		time.Sleep(min(backoff, left))
		backoff = min(2*backoff, 500*time.Millisecond)
	}
	p := &peer{rank: 0, conn: c}
	w.peers = []*peer{p}
	hello := append([]byte(nil), magic...)
	hello = binary.LittleEndian.AppendUint32(hello, uint32(w.Rank()))
	hello = binary.LittleEndian.AppendUint32(hello, uint32(w.Size()))
	hello = binary.LittleEndian.AppendUint32(hello, uint32(os.Getpid()))
	if err := p.write(kindHello, hello, time.Until(end)); err != nil {
		return fmt.Errorf("bootstrap: rank %d could not greet rank 0 at %s: %v", w.Rank(), w.addr, err)
	}
	notUs := fmt.Sprintf("bootstrap: rank %d: the program at %s is not rank 0 of this run", w.Rank(), w.addr)
	c.SetReadDeadline(earliest(end, time.Now().Add(ackTimeout)))
	f, err := readFrame(c)
	c.SetReadDeadline(time.Time{})
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("%s (no answer within %v): another program may hold the port", notUs, ackTimeout)
	case err != nil:
		return fmt.Errorf("%s (%v): another program may hold the port", notUs, err)
	case f.kind == kindFail:
		return errors.New(string(f.payload))
	case f.kind != kindAck || !bytes.Equal(f.payload, magic):
		return fmt.Errorf("%s (it answered something else): another program holds the port", notUs)
	}
	p.in = reader(c, w.done, func(f frame) { w.lostPeer(p, f) })
	// Rank 0 names the ranks that never came when its own wait ends: wait a little longer for that verdict, so
	// that this rank neither leaves first (rank 0 would take it for dead) nor reports less than rank 0 knows.
	f, err = w.await(p.in, time.Until(end)+verdictGrace)
	switch {
	case errors.Is(err, errTimeout):
		return fmt.Errorf("bootstrap: rank %d reached rank 0 at %s, but not every process arrived within %v", w.Rank(), w.addr, timeout)
	case err != nil:
		return err
	case f.kind == kindFail || f.kind == kindTimeout:
		return frameError(f.kind, f.payload)
	case f.kind != kindWelcome || len(f.payload) != 4*w.Size():
		return fmt.Errorf("bootstrap: rank %d got frame kind %d from %s, want a welcome", w.Rank(), f.kind, w.addr)
	}
	pids := make([]int, w.Size())
	for r := range pids {
		pids[r] = int(binary.LittleEndian.Uint32(f.payload[4*r:]))
	}
	w.pmu.Lock()
	w.pids = pids
	w.pmu.Unlock()
	return nil
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
