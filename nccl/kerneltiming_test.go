package nccl

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ebitengine/purego"
)

// drainSource is a stand-in ncclKernelTimingDrain with RCCL's record layout: every field of record i holds a
// value of its own, so a Go struct that is off by one field or one width reads a wrong one.
const drainSource = `#include <stdint.h>
typedef struct { uint64_t startNs, endNs, seq, commHash, count; uint32_t func, datatype, nChannels, nThreads;
  int32_t rank; uint32_t nColls; } rec;
static int left = 3;
int ncclKernelTimingDrain(void *comm, rec *out, int max, int *got, uint64_t *dropped) {
  if (comm == 0) return 5;
  int n = 0;
  for (; n < max && left > 0; n++, left--) {
    rec r = {1000 + n, 2000 + n, 10 + n, (uint64_t)(uintptr_t)comm, 1ull << 40, 4, 9, 16 + n, 256, -1 - n, 1 + n};
    out[n] = r;
  }
  *got = n;
  *dropped = 7;
  return 0;
}
`

func TestKernelTimingDrainLayout(t *testing.T) {
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc: the test links its stand-in library with it")
	}
	dir := t.TempDir()
	src, so := filepath.Join(dir, "drain.c"), filepath.Join(dir, "libdrain.so")
	os.WriteFile(src, []byte(drainSource), 0o644)
	if b, err := exec.Command(cc, "-shared", "-fPIC", "-o", so, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	h, err := purego.Dlopen(so, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	l := &Library{Path: so}
	if l.HasKernelTiming() {
		t.Fatal("HasKernelTiming before the symbol is bound")
	}
	if l.kernelTimingDrain.addr, err = purego.Dlsym(h, "ncclKernelTimingDrain"); err != nil {
		t.Fatal(err)
	}
	if _, _, r := l.KernelTimingDrain(0, make([]KernelTimingRecord, 4)); r != InvalidUsage {
		t.Errorf("a communicator without timing: result %v, want ncclInvalidUsage", r)
	}
	out := make([]KernelTimingRecord, 2)
	got, dropped, r := l.KernelTimingDrain(0xabc, out)
	if r != Success || got != 2 || dropped != 7 {
		t.Fatalf("drain: got %d dropped %d result %v, want 2, 7, success", got, dropped, r)
	}
	for i, rec := range out {
		want := KernelTimingRecord{StartNs: 1000 + uint64(i), EndNs: 2000 + uint64(i), Seq: 10 + uint64(i), CommHash: 0xabc,
			Count: 1 << 40, Func: 4, Datatype: 9, NChannels: 16 + uint32(i), NThreads: 256, Rank: -1 - int32(i),
			NColls: 1 + uint32(i)}
		if rec != want {
			t.Errorf("record %d = %+v, want %+v", i, rec, want)
		}
	}
	if got, _, _ := l.KernelTimingDrain(0xabc, out); got != 1 {
		t.Errorf("second drain: %d records, want the 1 left", got)
	}
}
