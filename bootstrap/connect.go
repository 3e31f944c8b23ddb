package bootstrap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// serve is rank 0's side of connecting: listen at the rendezvous port, accept every other rank's hello, then
// welcome them all.
func (w *World) serve(timeout time.Duration) error {
	host, port, _ := net.SplitHostPort(w.addr)
	listen := net.JoinHostPort(host, port)
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		listen = ":" + port // MASTER_ADDR names this host as the others reach it; accept on every interface
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("bootstrap: rank 0 could not listen on %s: %v", listen, err)
	}
	w.ln = ln
	end := time.Now().Add(timeout)
	ln.(*net.TCPListener).SetDeadline(end)
	w.peers = make([]*peer, w.Size())
	for arrived := 1; arrived < w.Size(); arrived++ {
		c, err := ln.Accept()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return fmt.Errorf("bootstrap: rank 0 waited %v on %s for ranks %v to connect", timeout, listen, w.missing())
		}
		if err != nil {
			return fmt.Errorf("bootstrap: rank 0 accepting on %s: %v", listen, err)
		}
		rank, err := w.hello(c, end)
		if err != nil {
			_ = writeFrame(c, kindFail, []byte(err.Error()), time.Second)
			c.Close()
			return err
		}
		w.peers[rank] = &peer{rank: rank, conn: c}
	}
	for _, p := range w.peers[1:] {
		if err := writeFrame(p.conn, kindWelcome, nil, time.Until(end)); err != nil {
			return fmt.Errorf("bootstrap: rank 0 could not welcome rank %d: %v", p.rank, err)
		}
		p.in = reader(p.conn, w.done)
	}
	return nil
}

// hello reads and checks a connecting process's rank and world size.
func (w *World) hello(c net.Conn, end time.Time) (int, error) {
	c.SetReadDeadline(end)
	f, err := readFrame(c)
	c.SetReadDeadline(time.Time{})
	if err != nil || f.kind != kindHello || len(f.payload) != 8 {
		return 0, fmt.Errorf("bootstrap: rank 0 got no valid hello from %v (%v): is another program using %s?",
			c.RemoteAddr(), err, w.addr)
	}
	rank := int(binary.LittleEndian.Uint32(f.payload))
	size := int(binary.LittleEndian.Uint32(f.payload[4:]))
	switch {
	case size != w.Size():
		return 0, fmt.Errorf("bootstrap: rank %d says the world has %d processes, rank 0 says %d", rank, size, w.Size())
	case rank < 1 || rank >= w.Size():
		return 0, fmt.Errorf("bootstrap: a process says it is rank %d of %d", rank, size)
	case w.peers[rank] != nil:
		return 0, fmt.Errorf("bootstrap: two processes say they are rank %d", rank)
	}
	return rank, nil
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
// wait for the welcome.
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
	w.peers = []*peer{{rank: 0, conn: c}}
	hello := binary.LittleEndian.AppendUint32(nil, uint32(w.Rank()))
	hello = binary.LittleEndian.AppendUint32(hello, uint32(w.Size()))
	if err := writeFrame(c, kindHello, hello, time.Until(end)); err != nil {
		return fmt.Errorf("bootstrap: rank %d could not greet rank 0 at %s: %v", w.Rank(), w.addr, err)
	}
	c.SetReadDeadline(end)
	f, err := readFrame(c)
	c.SetReadDeadline(time.Time{})
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("bootstrap: rank %d reached rank 0 at %s, but not every process arrived within %v", w.Rank(), w.addr, timeout)
	case err != nil:
		return fmt.Errorf("bootstrap: rank %d lost rank 0 (%s) before every process arrived: %v", w.Rank(), w.addr, err)
	case f.kind == kindFail:
		return errors.New(string(f.payload))
	case f.kind != kindWelcome:
		return fmt.Errorf("bootstrap: rank %d got frame kind %d from %s, want a welcome", w.Rank(), f.kind, w.addr)
	}
	w.peers[0].in = reader(c, w.done)
	return nil
}
