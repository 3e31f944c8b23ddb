package nccl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"unsafe"
)

// TestConfigBytes checks the bytes ncclCommInitRankConfig reads: NCCL 2.14's ncclConfig_t on LP64 (size_t
// size; unsigned magic, version; int blocking; padding to 8), with the values NCCL_CONFIG_INITIALIZER would
// write and blocking 0.
func TestConfigBytes(t *testing.T) {
	cfg := NonBlockingConfig()
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&cfg)), unsafe.Sizeof(cfg))
	want := make([]byte, 24)
	binary.LittleEndian.PutUint64(want[0:], 24)          // size = sizeof
	binary.LittleEndian.PutUint32(want[8:], 0xcafebeef)  // magic
	binary.LittleEndian.PutUint32(want[12:], 21400)      // version NCCL_VERSION(2,14,0)
	binary.LittleEndian.PutUint32(want[16:], 0)          // blocking
	binary.LittleEndian.PutUint32(want[20:], 0x80000000) // tail: NCCL_CONFIG_UNDEF_INT
	if !bytes.Equal(raw, want) {
		t.Errorf("config bytes\n  % x\nwant\n  % x", raw, want)
	}
	if uint64(len(raw)) != cfg.Size {
		t.Errorf("Size = %d, but the struct is %d bytes", cfg.Size, len(raw))
	}
	offsets := map[string][2]uintptr{
		"size":     {unsafe.Offsetof(cfg.Size), 0},
		"magic":    {unsafe.Offsetof(cfg.Magic), 8},
		"version":  {unsafe.Offsetof(cfg.Version), 12},
		"blocking": {unsafe.Offsetof(cfg.Blocking), 16},
		"tail":     {unsafe.Offsetof(cfg.Tail), 20}, // cgaClusterSize from 2.17 on
	}
	for name, o := range offsets {
		if o[0] != o[1] {
			t.Errorf("%s at offset %d, C has it at %d", name, o[0], o[1])
		}
	}
	if VersionString(int(cfg.Version)) != "2.14.0" {
		t.Errorf("version %d is %s, want 2.14.0", cfg.Version, VersionString(int(cfg.Version)))
	}
}

func TestIsInProgress(t *testing.T) {
	inProgress := &Error{Call: "ncclGroupEnd", Code: InProgress}
	cases := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{inProgress, true},
		{errors.Join(errors.New("vendor"), inProgress), true},
		{&Error{Call: "ncclGroupEnd", Code: RemoteError}, false},
		{errors.New("ncclInProgress"), false},
	}
	for _, c := range cases {
		if got := IsInProgress(c.err); got != c.want {
			t.Errorf("IsInProgress(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestCTAConfigBytes checks NCCL 2.27's ncclConfig_t on LP64: CTAPolicy at offset 60, 72 bytes in all,
// every other option NCCL_CONFIG_UNDEF_INT (pointers NULL).
func TestCTAConfigBytes(t *testing.T) {
	cfg := NewCTAConfig(1, false)
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&cfg)), unsafe.Sizeof(cfg))
	want := make([]byte, 72)
	binary.LittleEndian.PutUint64(want[0:], 72)
	binary.LittleEndian.PutUint32(want[8:], 0xcafebeef)
	binary.LittleEndian.PutUint32(want[12:], 22700)
	for _, off := range []int{16, 20, 24, 28, 40, 44, 56, 64, 68} { // blocking .. nvlsCTAs, undefined
		binary.LittleEndian.PutUint32(want[off:], 0x80000000)
	}
	binary.LittleEndian.PutUint32(want[60:], 1) // CTAPolicy
	if !bytes.Equal(raw, want) {
		t.Errorf("config bytes\n  % x\nwant\n  % x", raw, want)
	}
	if nb := NewCTAConfig(2, true); nb.Blocking != 0 || nb.CTAPolicy != 2 || nb.Base().Size != 72 {
		t.Errorf("non-blocking %+v", nb)
	}
}
