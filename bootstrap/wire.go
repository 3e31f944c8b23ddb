package bootstrap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Frames on a connection: one kind byte, a 4-byte little-endian length, the payload.
const (
	kindHello   byte = iota + 1 // peer -> rank 0: magic, rank, world size, pid, run identity
	kindWelcome                 // rank 0 -> peer: every process has arrived; every process's pid
	kindData                    // peer -> rank 0: this process's part of an AllGather
	kindResult                  // rank 0 -> peer: every part, in rank order
	kindFail                    // the run is broken; the payload says why (rank 0 -> peer, or a peer that aborts -> rank 0)
	kindTimeout                 // as kindFail, for a timeout: rank, duration and phase
	kindAck                     // rank 0 -> peer, at once after a valid hello: magic, rank 0's pid
	kindBye                     // a process that ended its run, before it closes its connection (World.Leave)
)

// magic opens every hello and ack, so that a process that reached some other program at the rendezvous port
// says so at once instead of waiting for a welcome. Its last byte is the protocol version (2: kindBye; 3: the
// run identity in the hello, rank 0's pid in the ack).
var magic = []byte("RCCLXTB\x03")

// ackTimeout bounds the wait for rank 0's ack after connecting: rank 0 acks every valid hello at once.
const ackTimeout = 5 * time.Second

// helloTimeout bounds how long rank 0 reads a connection's hello: a process of the run sends it as soon as it
// has connected, so a connection still silent then is a stranger's, and is dropped.
var helloTimeout = 2 * time.Second

// maxRunID bounds the run identity in a hello (a launcher's job id, or RCCLX_TESTS_RUN_ID), and with it the
// largest frame rank 0 reads from a connection before it knows the connection is one of its run's.
const (
	maxRunID = 200
	maxHello = 8 + 12 + 2 + maxRunID
)

// verdictGrace is how much longer than rank 0 a connected rank waits for everyone to arrive, to hear rank 0 name
// the ranks that never came.
const verdictGrace = 2 * time.Second

const maxFrame = 1 << 30

type frame struct {
	kind    byte
	payload []byte
	err     error // the connection failed; no frame follows
}

func writeFrame(c net.Conn, kind byte, payload []byte, timeout time.Duration) error {
	hdr := make([]byte, 5, 5+len(payload))
	hdr[0] = kind
	binary.LittleEndian.PutUint32(hdr[1:], uint32(len(payload)))
	c.SetWriteDeadline(deadline(timeout))
	_, err := c.Write(append(hdr, payload...))
	return err
}

func readFrame(r io.Reader) (frame, error) { return readFrameMax(r, maxFrame) }

// readFrameMax reads a frame of at most limit bytes: nothing of a longer one is allocated.
func readFrameMax(r io.Reader, limit uint32) (frame, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return frame{}, err
	}
	n := binary.LittleEndian.Uint32(hdr[1:])
	if n > limit {
		return frame{}, fmt.Errorf("a frame of %d bytes, over the %d-byte limit", n, limit)
	}
	f := frame{kind: hdr[0], payload: make([]byte, n)}
	_, err := io.ReadFull(r, f.payload)
	return f, err
}

// reader delivers a connection's frames on a channel until the connection fails or done is closed, so that a
// wait can also watch a timer. It reads for the whole run: a failed read (the peer died or left), a failure
// frame or a goodbye calls lost at once, whether or not anyone waits on the channel; a goodbye is not delivered.
func reader(c net.Conn, done <-chan struct{}, lost func(f frame)) <-chan frame {
	ch := make(chan frame, 8)
	go func() {
		for {
			f, err := readFrame(c)
			if err != nil {
				f = frame{err: err}
			}
			select {
			case <-done:
				return
			default:
			}
			if err != nil || f.kind == kindFail || f.kind == kindTimeout || f.kind == kindBye {
				lost(f)
			}
			if err == nil && f.kind == kindBye {
				continue
			}
			select {
			case ch <- f:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// deadline is the absolute deadline of a timeout; no timeout means none.
func deadline(timeout time.Duration) time.Time {
	if timeout <= 0 {
		return time.Time{}
	}
	return time.Now().Add(timeout)
}

// Printable is text another process sent, made safe to show and record: control characters (an escape
// sequence would drive the terminal), invalid UTF-8 and other unprintable runes are escaped as Go quotes them.
func Printable(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r == utf8.RuneError || !unicode.IsPrint(r) && r != ' ' }) {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case r == ' ' || unicode.IsPrint(r):
			b.WriteString(s[:n])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		s = s[n:]
	}
	return b.String()
}

// errTimeout marks a wait that ran out of time (as opposed to a connection that failed).
var errTimeout = errors.New("timed out")

func encodeParts(parts [][]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(p)))
		out = append(out, p...)
	}
	return out
}

func decodeParts(b []byte, n int) ([][]byte, error) {
	parts := make([][]byte, n)
	for i := range parts {
		if len(b) < 4 {
			return nil, fmt.Errorf("result truncated at part %d of %d", i, n)
		}
		l := binary.LittleEndian.Uint32(b)
		b = b[4:]
		if uint64(l) > uint64(len(b)) {
			return nil, fmt.Errorf("result part %d says %d bytes, %d left", i, l, len(b))
		}
		parts[i], b = b[:l:l], b[l:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("result has %d bytes past its %d parts", len(b), n)
	}
	return parts, nil
}
