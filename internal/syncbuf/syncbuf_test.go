package syncbuf

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// Writers and readers at once (run with -race): every write lands whole.
func TestConcurrentWriteAndRead(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for range 100 {
				fmt.Fprintf(&b, "w%d\n", i)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if n := strings.Count(b.String(), "\n"); n != 400 {
		t.Errorf("%d lines, want 400", n)
	}
}
