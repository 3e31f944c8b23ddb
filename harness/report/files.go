package report

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/results"
)

// Outputs are the result files a run writes when it ends (-J, -X), each written beside its final name. A
// second signal ends the process at once, but first waits for a write in progress (JSON.Finish holds Mu while it
// writes) and gives the unwritten files up: nothing half-written appears under a final name, and a file
// complete there stays.
type Outputs struct {
	Mu     sync.Mutex
	asides []*results.Aside
}

// Claim adds a, a file the run will write when it ends, to those a second signal gives up.
func (o *Outputs) Claim(a *results.Aside) {
	if a == nil {
		return
	}
	o.Mu.Lock()
	defer o.Mu.Unlock()
	o.asides = append(o.asides, a)
}

// Abandon gives up every file not yet written, once a write in progress has ended.
func (o *Outputs) Abandon() {
	o.Mu.Lock()
	defer o.Mu.Unlock()
	for _, a := range o.asides {
		a.Discard()
	}
}

// fifoPoll is how often openWriter tries a named pipe for a reader.
const fifoPoll = 20 * time.Millisecond

// openWriter opens an existing file that is not replaced but written directly (a named pipe, a terminal,
// this process's standard output), appending. Opening a named pipe for writing waits for a reader: here
// that wait is bounded by timeout (-T; 0 waits as long as it takes) and ends on a signal, with an error saying
// the pipe has no reader. interrupted (nil: never) says a signal arrived.
func openWriter(path string, st os.FileInfo, timeout time.Duration, interrupted func() bool) (*os.File, error) {
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
		case interrupted != nil && interrupted():
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
