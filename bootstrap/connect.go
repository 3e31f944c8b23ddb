package bootstrap

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"
)

// hello is what a connecting process says: who it is, and of which run.
type hello struct {
	rank, size, pid int
	runID           string
}

func (h hello) encode() []byte {
	b := append([]byte(nil), magic...)
	b = binary.LittleEndian.AppendUint32(b, uint32(h.rank))
	b = binary.LittleEndian.AppendUint32(b, uint32(h.size))
	b = binary.LittleEndian.AppendUint32(b, uint32(h.pid))
	b = binary.LittleEndian.AppendUint16(b, uint16(len(h.runID)))
	return append(b, h.runID...)
}

// readHello reads a connecting process's hello within helloTimeout, allocating no more than a hello can hold.
// The error says what arrived instead.
func readHello(c net.Conn) (hello, error) {
	c.SetReadDeadline(time.Now().Add(helloTimeout))
	f, err := readFrameMax(c, maxHello)
	c.SetReadDeadline(time.Time{})
	n := len(magic)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return hello{}, fmt.Errorf("no hello within %v", helloTimeout)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return hello{}, errors.New("it closed the connection before a whole hello")
	case err != nil:
		return hello{}, err
	case f.kind != kindHello || len(f.payload) < n+14 || !bytes.Equal(f.payload[:n], magic):
		return hello{}, fmt.Errorf("it sent something else than a hello of this suite's version (frame kind %d, %d bytes)",
			f.kind, len(f.payload))
	}
	p := f.payload[n:]
	h := hello{rank: int(binary.LittleEndian.Uint32(p)), size: int(binary.LittleEndian.Uint32(p[4:])),
		pid: int(binary.LittleEndian.Uint32(p[8:]))}
	if idLen := int(binary.LittleEndian.Uint16(p[12:])); idLen != len(p)-14 {
		return hello{}, fmt.Errorf("its hello is malformed (run identity of %d bytes in %d)", idLen, len(p)-14)
	}
	h.runID = string(p[14:])
	return h, nil
}

// arrival is a connection and its hello (or why it has none); a nil conn is the listener's failure.
type arrival struct {
	c   net.Conn
	h   hello
	err error
}

// maxGreeting bounds the connections whose hello rank 0 reads at once; more are closed unread.
const maxGreeting = 64

// accept reads every connection's hello in a goroutine of its own, so that a stranger's silence holds up no
// one, and delivers the arrivals until the world is closed.
func (w *World) accept(ln net.Listener, arrivals chan<- arrival) {
	sem := make(chan struct{}, maxGreeting)
	for {
		c, err := ln.Accept()
		if err != nil {
			select {
			case arrivals <- arrival{err: err}:
			case <-w.done:
			}
			return
		}
		select {
		case sem <- struct{}{}:
		default:
			c.Close()
			continue
		}
		go func() {
			h, err := readHello(c)
			<-sem
			select {
			case arrivals <- arrival{c: c, h: h, err: err}:
			case <-w.done:
				c.Close()
			}
		}()
	}
}

// serve is rank 0's side of connecting: listen at the rendezvous port, ack every other rank's hello at once,
// then welcome them all. A rank that connected and then died fails the run as soon as its connection closes.
// Connections that are not of this run are dropped (and told why, where they speak this protocol); the port
// stays held for the whole run, so that a process of another run sharing it is turned away, not admitted.
func (w *World) serve(timeout time.Duration) error {
	ln, listen, err := w.listen()
	if err != nil {
		return err
	}
	end := time.Now().Add(timeout)
	arrivals := make(chan arrival)
	go w.accept(ln, arrivals)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	w.pmu.Lock()
	w.peers = make([]*peer, w.Size())
	w.pids = make([]int, w.Size())
	w.pids[0] = os.Getpid()
	w.pmu.Unlock()
	for arrived := 1; arrived < w.Size(); {
		select {
		case a := <-arrivals:
			if a.c == nil {
				return w.refuse(fmt.Errorf("bootstrap: rank 0 accepting on %s: %v", listen, a.err))
			}
			ok, err := w.admit(a, end)
			if err != nil {
				return w.refuse(err)
			}
			if ok {
				arrived++
			}
		case <-w.failed:
			return w.Err()
		case <-timer.C:
			return w.refuse(fmt.Errorf("bootstrap: rank 0 waited %v on %s for ranks %v to connect%s", timeout, listen,
				w.missing(), w.strayNote()))
		}
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
	go w.turnAway(arrivals)
	return w.Err()
}

// listen is rank 0's listener at the rendezvous address (one Split made already, or a new one), and the
// address as its messages name it.
func (w *World) listen() (net.Listener, string, error) {
	if w.ln != nil {
		return w.ln, w.ln.Addr().String(), nil
	}
	host, port, _ := net.SplitHostPort(w.addr)
	listen := net.JoinHostPort(host, port)
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		listen = ":" + port // MASTER_ADDR names this host as the others reach it; accept on every interface
	}
	ln, err := net.Listen("tcp", listen)
	if errors.Is(err, syscall.EADDRINUSE) {
		if holder := w.askHolder(); holder != "" {
			return nil, "", fmt.Errorf("bootstrap: rank 0 cannot listen on %s: %s", listen, holder)
		}
		return nil, "", fmt.Errorf("bootstrap: rank 0 cannot listen on %s: another program, or another process that says it is rank 0, holds the port (choose another MASTER_PORT, or check the ranks)", listen)
	}
	if err != nil {
		return nil, "", fmt.Errorf("bootstrap: rank 0 could not listen on %s: %v", listen, err)
	}
	w.ln = ln
	return ln, listen, nil
}

// admit takes a process into the run (ok), or drops a connection that is not of this run, telling it why
// where it speaks this protocol. An error ends the run: two processes claim one rank, and which one belongs to
// this run cannot be told.
func (w *World) admit(a arrival, end time.Time) (ok bool, err error) {
	if w.screen(a) {
		return false, nil
	}
	h := a.h
	if h.rank == 0 || w.peers[h.rank] != nil {
		err := w.claimant(a)
		a.c.Close()
		return false, err
	}
	p := &peer{rank: h.rank, conn: a.c}
	w.pmu.Lock()
	w.peers[h.rank], w.pids[h.rank] = p, h.pid
	w.pmu.Unlock()
	ack := binary.LittleEndian.AppendUint32(append([]byte(nil), magic...), uint32(os.Getpid()))
	if err := p.write(kindAck, ack, time.Until(end)); err != nil {
		return false, fmt.Errorf("bootstrap: rank 0 could not answer rank %d: %v", h.rank, err)
	}
	w.pmu.Lock()
	p.in = reader(a.c, w.done, func(f frame) { w.lostPeer(p, f) })
	w.pmu.Unlock()
	return true, nil
}

// screen drops an arrival whose hello failed or is not of this run, and reports whether it did.
func (w *World) screen(a arrival) bool {
	if a.err != nil {
		w.drop(a, a.err.Error(), "")
		return true
	}
	if why := w.stranger(a.h); why != "" {
		w.drop(a, why, fmt.Sprintf("bootstrap: %s is the rendezvous of another run (%s), not of this process's (%s)",
			w.addr, w.describe(), describe(a.h)))
		return true
	}
	return false
}

// stranger says why a hello is not of this run ("" when it is).
func (w *World) stranger(h hello) string {
	switch {
	case h.runID != w.launch.RunID:
		return fmt.Sprintf("run %q, not %q", h.runID, w.launch.RunID)
	case h.size != w.Size():
		return fmt.Sprintf("a world of %d processes, not %d", h.size, w.Size())
	case h.rank < 0 || h.rank >= h.size:
		return fmt.Sprintf("rank %d of %d", h.rank, h.size)
	}
	return ""
}

// describe is this run as a refused process is told of it.
func (w *World) describe() string {
	return fmt.Sprintf("%d processes, run id %q, rank 0 pid %d", w.Size(), w.launch.RunID, os.Getpid())
}

func describe(h hello) string {
	return fmt.Sprintf("rank %d of %d, run id %q, pid %d", h.rank, h.size, h.runID, h.pid)
}

// claimant is a process of this run (same run id and size) that claims a rank already taken, rank 0's
// included: two launches share the rendezvous address, or a launcher started a rank twice. Its processes and
// this run's cannot be told apart, so the run ends rather than mixing them; both sides are told.
func (w *World) claimant(a arrival) error {
	h := a.h
	w.pmu.Lock()
	held := w.pids[h.rank]
	w.pmu.Unlock()
	err := fmt.Errorf("bootstrap: two processes say they are rank %d of the run at %s (pids %d and %d, the "+
		"second from %v): two runs share the address, or a rank was started twice; give each run its own "+
		"MASTER_PORT (or %s)", h.rank, w.addr, held, h.pid, a.c.RemoteAddr(), EnvRunID)
	_ = writeFrame(a.c, kindFail, []byte(err.Error()), time.Second)
	return err
}

// drop closes a connection that is not of this run, tells it why (tell, where it spoke this protocol), and
// keeps why for the timeout's message.
func (w *World) drop(a arrival, why, tell string) {
	if tell != "" {
		_ = writeFrame(a.c, kindFail, []byte(tell), time.Second)
	}
	a.c.Close()
	w.pmu.Lock()
	w.strays++
	w.lastStray = fmt.Sprintf("%v: %s", a.c.RemoteAddr(), Printable(why))
	w.pmu.Unlock()
}

// strayNote is the timeout's word on the connections dropped meanwhile ("" when none was).
func (w *World) strayNote() string {
	w.pmu.Lock()
	defer w.pmu.Unlock()
	if w.strays == 0 {
		return ""
	}
	return fmt.Sprintf("; it turned away %d connection(s) not of this run (the last from %s)", w.strays, w.lastStray)
}

// turnAway handles the connections that arrive once every process has: another run's are refused, a claim to
// one of this run's ranks ends the run (see claimant).
func (w *World) turnAway(arrivals <-chan arrival) {
	for {
		var a arrival
		select {
		case a = <-arrivals:
		case <-w.done:
			return
		}
		switch {
		case a.c == nil:
			return
		case !w.screen(a):
			err := w.claimant(a)
			a.c.Close()
			w.setFailed(err, -1, true)
		}
	}
}

// askHolder asks what holds the rendezvous port that rank 0 cannot listen on: rank 0 of another run answers
// with its description (and ends its own run if it cannot tell this one from its own); "" when what holds it
// does not answer so.
func (w *World) askHolder() string {
	c, err := net.DialTimeout("tcp", w.addr, time.Second)
	if err != nil {
		return ""
	}
	defer c.Close()
	h := hello{rank: 0, size: w.Size(), pid: os.Getpid(), runID: w.launch.RunID}
	if writeFrame(c, kindHello, h.encode(), time.Second) != nil {
		return ""
	}
	c.SetReadDeadline(time.Now().Add(time.Second))
	f, err := readFrameMax(c, 64<<10)
	if err != nil || f.kind != kindFail {
		return ""
	}
	return Printable(strings.TrimPrefix(string(f.payload), "bootstrap: "))
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
	ctx, cancel := context.WithDeadline(context.Background(), end)
	defer cancel()
	go func() {
		select {
		case <-w.failed: // interrupted
			cancel()
		case <-ctx.Done():
		}
	}()
	backoff := 20 * time.Millisecond
	var c net.Conn
	for {
		var err error
		d := net.Dialer{Timeout: 5 * time.Second}
		c, err = d.DialContext(ctx, "tcp", w.addr)
		if err == nil {
			break
		}
		if e := w.Err(); e != nil {
			return e
		}
		left := time.Until(end)
		if left <= 0 {
			return fmt.Errorf("bootstrap: rank %d could not reach %s within %v: %v", w.Rank(), w.addr, timeout, err)
		}
		select {
		case <-time.After(min(backoff, left)):
		case <-w.failed:
			return w.Err()
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
	p := &peer{rank: 0, conn: c}
	w.pmu.Lock()
	w.peers = []*peer{p}
	w.pmu.Unlock()
	h := hello{rank: w.Rank(), size: w.Size(), pid: os.Getpid(), runID: w.launch.RunID}
	if err := p.write(kindHello, h.encode(), time.Until(end)); err != nil {
		return fmt.Errorf("bootstrap: rank %d could not greet rank 0 at %s: %v", w.Rank(), w.addr, err)
	}
	notUs := fmt.Sprintf("bootstrap: rank %d: the program at %s is not rank 0 of this run", w.Rank(), w.addr)
	c.SetReadDeadline(earliest(end, time.Now().Add(ackTimeout)))
	f, err := readFrameMax(c, 64<<10)
	c.SetReadDeadline(time.Time{})
	n := len(magic)
	switch {
	case w.Err() != nil:
		return w.Err()
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("%s (no answer within %v): another program may hold the port", notUs, ackTimeout)
	case err != nil:
		return fmt.Errorf("%s (%v): another program may hold the port", notUs, err)
	case f.kind == kindFail:
		return errors.New(Printable(string(f.payload)))
	case f.kind != kindAck || len(f.payload) != n+4 || !bytes.Equal(f.payload[:n], magic):
		return fmt.Errorf("%s (it answered something else): another program holds the port", notUs)
	}
	w.pmu.Lock()
	w.pids = make([]int, w.Size())
	w.pids[0] = int(binary.LittleEndian.Uint32(f.payload[n:]))
	p.in = reader(c, w.done, func(f frame) { w.lostPeer(p, f) })
	w.pmu.Unlock()
	// Rank 0 names the ranks that never came when its own wait ends: wait a little longer for that verdict, so
	// that this rank neither leaves first (rank 0 would take it for dead) nor reports less than rank 0 knows.
	f, err = w.await(p.in, time.Until(end)+verdictGrace)
	switch {
	case errors.Is(err, errTimeout):
		return fmt.Errorf("bootstrap: rank %d reached rank 0 at %s, but not every process arrived within %v", w.Rank(), w.addr, timeout)
	case err != nil && w.Err() != nil: // rank 0 died (named), or said why the run cannot start, or an interrupt
		return w.Err()
	case err != nil:
		return fmt.Errorf("bootstrap: rank %d lost rank 0 at %s before every process arrived: %v", w.Rank(), w.addr, err)
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
