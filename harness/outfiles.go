package harness

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/results"
)

// outputs are the result files a run writes when it ends (-J, -X), each written beside its final name. A
// second signal ends the process at once, but first waits for a write in progress (finish holds mu while it
// writes) and gives the unwritten files up: nothing half-written appears under a final name, and a file
// complete there stays.
type outputs struct {
	mu     sync.Mutex
	asides []*results.Aside
}

func (o *outputs) claim(a *results.Aside) {
	if a == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.asides = append(o.asides, a)
}

// abandon gives up every file not yet written, once a write in progress has ended.
func (o *outputs) abandon() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, a := range o.asides {
		a.Discard()
	}
}

// fifoPoll is how often openWriter tries a named pipe for a reader.
const fifoPoll = 20 * time.Millisecond

// openWriter opens an existing file that is not replaced but written directly (a named pipe, a terminal,
// this process's standard output), appending. Opening a named pipe for writing waits for a reader: here
// that wait is bounded by timeout (-T; 0 waits as long as it takes) and ends on a signal, with an error saying
// the pipe has no reader.
func (a *app) openWriter(path string, st os.FileInfo, timeout time.Duration) (*os.File, error) {
	if st.Mode()&os.ModeNamedPipe == 0 {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		return f, pathError(err)
	}
	start := time.Now()
	for {
		fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err == nil {
			if err := syscall.SetNonblock(fd, false); err != nil {
				_ = syscall.Close(fd)
				return nil, err
			}
			return os.NewFile(uintptr(fd), path), nil
		}
		switch {
		case err != syscall.ENXIO:
			return nil, err
		case timeout > 0 && time.Since(start) >= timeout:
			return nil, fmt.Errorf("the named pipe has no reader (waited %v, -T)", timeout)
		case a.interrupted != nil && a.interrupted():
			return nil, fmt.Errorf("the named pipe has no reader (stopped waiting for one: %w)", exit.ErrInterrupted)
		}
		time.Sleep(fifoPoll)
	}
}

// pathError is err without the path, which the callers name as the user gave it.
func pathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// stdoutClosed reports whether this process's standard output is a pipe or socket whose reader has gone:
// what a SIGPIPE means when it concerns the output and not a connection of the run.
func stdoutClosed() bool {
	fds := []unix.PollFd{{Fd: int32(os.Stdout.Fd())}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n == 1 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0
}
