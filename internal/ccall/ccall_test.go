package ccall

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
)

func libc(t testing.TB, name string) uintptr {
	t.Helper()
	h, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		t.Skipf("no libc.so.6 to call into: %v", err)
	}
	f, err := purego.Dlsym(h, name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestCallReturnsWholeResult(t *testing.T) {
	labs := libc(t, "labs")
	x := -int64(rand.Uint32()) << 20 // needs more than 32 bits
	if got := int64(Call(labs, uintptr(x))); got != -x {
		t.Fatalf("labs(%d) = %d", x, got)
	}
}

// Every one of the twelve arguments, in registers and on the stack, reaches C: snprintf prints them.
func TestAllArgumentsReachC(t *testing.T) {
	snprintf := libc(t, "snprintf")
	buf := make([]byte, 128)
	format := []byte("%d %d %d %d %d %d %d %d %d\x00")
	var args []uintptr
	want := ""
	for i := range MaxArgs - 3 {
		v := rand.IntN(1000) + i
		args = append(args, uintptr(v))
		want += fmt.Sprint(v)
		if i < MaxArgs-4 {
			want += " "
		}
	}
	n := Call(snprintf, append([]uintptr{uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)),
		uintptr(unsafe.Pointer(&format[0]))}, args...)...)
	runtime.KeepAlive(buf)
	runtime.KeepAlive(format)
	if got := string(buf[:n]); got != want {
		t.Fatalf("snprintf printed %q, want %q", got, want)
	}
}

// A batch stops at the first non-zero status and resumes where told; only the low 32 bits are the status.
func TestBatchStopsAtFirstFailure(t *testing.T) {
	labs := libc(t, "labs")
	var b Batch
	if s, r := b.Run(0); s != 0 || r != 0 {
		t.Fatalf("empty batch: %d, %d", s, r)
	}
	fail := 3 + rand.IntN(30)
	for i := range 40 {
		v := int64(0)
		switch i {
		case fail:
			v = -7
		case fail + 1:
			v = 1 << 32 // status 0: low 32 bits clear
		}
		b.Add(labs, uintptr(v))
	}
	if s, r := b.Run(0); s != fail || r != 7 {
		t.Fatalf("Run(0) = %d, %d; want %d, 7", s, r, fail)
	}
	if s, r := b.Run(fail + 1); s != b.Len() || r != 0 {
		t.Fatalf("Run(%d) = %d, %#x; want %d, 0", fail+1, s, r, b.Len())
	}
	b.Reset()
	if b.Len() != 0 {
		t.Fatal("Reset left calls")
	}
}

func TestAddRefusesTooManyArguments(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	var b Batch
	b.Add(1, make([]uintptr, MaxArgs+1)...)
}

// The cost of crossing into C: one call per crossing (purego and Call) against calls made as one Batch.
func BenchmarkCrossing(b *testing.B) {
	labs := libc(b, "labs")
	b.Run("purego", func(b *testing.B) {
		for b.Loop() {
			purego.SyscallN(labs, 0)
		}
	})
	b.Run("Call", func(b *testing.B) {
		for b.Loop() {
			Call(labs, 0)
		}
	})
	b.Run("Batch64", func(b *testing.B) {
		var q Batch
		for range 64 {
			q.Add(labs, 0)
		}
		for b.Loop() {
			q.Run(0)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64), "ns/call")
	})
}
