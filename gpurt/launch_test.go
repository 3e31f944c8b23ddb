package gpurt

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"
)

// argBytes reads n bytes that param i points at.
func argBytes(k *kernelParams, i, n int) []byte {
	return unsafe.Slice((*byte)(k.ptrs[i]), n)
}

type triple struct {
	A uint64
	B float32
	C int32
	D [3]uint32
}

func TestKernelParamsMarshal(t *testing.T) {
	p := DevicePtr(rand.Uint64())
	u := uintptr(rand.Uint64())
	i32 := -int32(rand.Uint32() >> 1)
	u32 := rand.Uint32()
	i64 := -int64(rand.Uint64() >> 1)
	u64 := rand.Uint64()
	f32 := rand.Float32() - 0.5
	f64 := rand.NormFloat64()
	st := &triple{A: rand.Uint64(), B: rand.Float32(), C: -int32(rand.Uint32() >> 1), D: [3]uint32{rand.Uint32(), rand.Uint32(), rand.Uint32()}}
	k := new(kernelParams)
	for i := range k.ptrs {
		k.ptrs[i] = unsafe.Pointer(k) // poison
	}
	for i := range k.data {
		k.data[i] = math.MaxUint64
	}
	if err := k.set([]any{p, u, i32, u32, i64, u64, f32, f64, st, u32}); err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	checks := []struct {
		name string
		got  uint64
		want uint64
	}{
		{"DevicePtr", le.Uint64(argBytes(k, 0, 8)), uint64(p)},
		{"uintptr", le.Uint64(argBytes(k, 1, 8)), uint64(u)},
		{"int32", uint64(le.Uint32(argBytes(k, 2, 4))), uint64(uint32(i32))},
		{"uint32", uint64(le.Uint32(argBytes(k, 3, 4))), uint64(u32)},
		{"int64", le.Uint64(argBytes(k, 4, 8)), uint64(i64)},
		{"uint64", le.Uint64(argBytes(k, 5, 8)), u64},
		{"float32", uint64(le.Uint32(argBytes(k, 6, 4))), uint64(math.Float32bits(f32))},
		{"float64", le.Uint64(argBytes(k, 7, 8)), math.Float64bits(f64)},
		{"uint32 after struct", uint64(le.Uint32(argBytes(k, 9, 4))), uint64(u32)},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %#x want %#x", c.name, c.got, c.want)
		}
	}
	if got := *(*triple)(k.ptrs[8]); got != *st {
		t.Errorf("struct: got %+v want %+v", got, *st)
	}
	st.A++ // the launch must have copied the value
	if got := *(*triple)(k.ptrs[8]); got.A == st.A {
		t.Error("struct argument aliases the caller's memory")
	}
	if k.n != 10 {
		t.Errorf("n = %d", k.n)
	}
}

func TestKernelParamsRejects(t *testing.T) {
	var nilStruct *triple
	cases := []struct {
		args []any
		want string
	}{
		{[]any{DevicePtr(1), 7}, "argument 1 has type int"},
		{[]any{nil}, "argument 0 has type nil"},
		{[]any{nilStruct}, "argument 0 has type *gpurt.triple"},
		{[]any{triple{}}, "has type gpurt.triple"},
		{[]any{&struct{ B [maxKernelBytes + 1]byte }{}}, "exceed"},
		{[]any{&struct{ B [maxKernelBytes]byte }{}, uint32(1)}, "exceed"},
		{make([]any, maxKernelArgs+1), "at most"},
	}
	for _, c := range cases {
		err := new(kernelParams).set(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("set(%T...) = %v, want error containing %q", c.args[0], err, c.want)
		}
	}
	many := make([]any, maxKernelArgs)
	for i := range many {
		many[i] = &struct {
			B [maxKernelBytes / maxKernelArgs]byte
		}{}
	}
	if err := new(kernelParams).set(many); err != nil {
		t.Errorf("exactly %d bytes of struct arguments refused: %v", maxKernelBytes, err)
	}
}

func TestLaunchBeforeLoad(t *testing.T) {
	if cuLaunchKernel.addr != 0 {
		t.Skip("driver loaded; this checks the unloaded path")
	}
	if err := Launch(0, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, 0, DevicePtr(0)); err != errNotLoaded {
		t.Errorf("Launch before Load = %v", err)
	}
}

// marshalOnly is Launch without the C call: pool, copy, pin, unpin.
func marshalOnly(args ...any) {
	k := paramPool.Get().(*kernelParams)
	if err := k.set(args); err != nil {
		panic(err)
	}
	k.pinner.Pin(k)
	k.pinner.Unpin()
	paramPool.Put(k)
}

func TestMarshalAllocationFree(t *testing.T) {
	st := &triple{A: 1}
	p := DevicePtr(rand.Uint64())
	n := rand.Uint32()
	allocs := testing.AllocsPerRun(1000, func() { marshalOnly(p, p, n, int64(n), st) })
	if allocs != 0 {
		t.Errorf("marshalling allocates %.1f times per launch", allocs)
	}
}

func BenchmarkMarshal5Args(b *testing.B) {
	st := &triple{A: 1}
	p := DevicePtr(rand.Uint64())
	for i := 0; i < b.N; i++ {
		marshalOnly(p, p, uint32(i), int64(i), st)
	}
}

// An argument block's first word points at an exact copy of the struct; a struct too large is refused.
func TestArgBlockPut(t *testing.T) {
	b, err := NewArgBlock()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	for i := 8; i < len(b.mem); i++ {
		b.mem[i] = 0xA5 // poison all but the parameter array's one pointer
	}
	a := &triple{A: rand.Uint64(), B: rand.Float32(), C: -int32(rand.Uint32() >> 1), D: [3]uint32{rand.Uint32(), rand.Uint32(), rand.Uint32()}}
	params, err := put(b, a)
	if err != nil {
		t.Fatal(err)
	}
	arg := uintptr(binary.LittleEndian.Uint64(b.mem))
	if params != uintptr(unsafe.Pointer(&b.mem[0])) || arg%16 != 0 || arg != params+argBlockStruct {
		t.Fatalf("parameter 0 at %#x, block at %#x", arg, params)
	}
	if got := *(*triple)(unsafe.Pointer(&b.mem[argBlockStruct])); got != *a {
		t.Errorf("copied %+v, want %+v", got, *a)
	}
	if _, err := put(b, &[argBlockBytes]byte{}); err == nil {
		t.Error("a struct larger than the block was accepted")
	}
}

// LaunchStructEarly hands the driver CUlaunchConfig and CUlaunchAttribute as cuda.h lays them out.
func TestLaunchConfigLayout(t *testing.T) {
	if got := unsafe.Sizeof(launchConfig{}); got != 56 {
		t.Errorf("launchConfig is %d bytes, CUlaunchConfig 56", got)
	}
	if got := unsafe.Offsetof(launchConfig{}.stream); got != 32 {
		t.Errorf("launchConfig.stream at %d, CUlaunchConfig.hStream at 32", got)
	}
	if got := unsafe.Sizeof(launchAttribute{}); got != 72 {
		t.Errorf("launchAttribute is %d bytes, CUlaunchAttribute 72", got)
	}
}
