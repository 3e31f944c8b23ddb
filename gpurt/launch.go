package gpurt

import (
	"fmt"
	"math"
	"reflect"
	"runtime"
	"sync"
	"unsafe"

	"github.com/rcclx-tests/rcclx-tests/internal/ccall"
)

const (
	maxKernelArgs  = 64
	maxKernelBytes = 4096
)

// kernelParams is the argument block handed to cuLaunchKernel: ptrs[i] points
// at argument i's bytes inside data. Pooled, so steady-state launches reuse it.
type kernelParams struct {
	ptrs   [maxKernelArgs]unsafe.Pointer
	data   [maxKernelBytes / 8]uint64
	n      int
	pinner runtime.Pinner
}

var paramPool = sync.Pool{New: func() any { return new(kernelParams) }}

// set copies the arguments into the block.
func (k *kernelParams) set(args []any) error {
	if len(args) > maxKernelArgs {
		return fmt.Errorf("gpu runtime: %d kernel arguments, at most %d", len(args), maxKernelArgs)
	}
	k.n = len(args)
	off := 0 // in 8-byte words
	for i, a := range args {
		var v uint64
		switch x := a.(type) {
		case DevicePtr:
			v = uint64(x)
		case uintptr:
			v = uint64(x)
		case int32:
			v = uint64(uint32(x))
		case uint32:
			v = uint64(x)
		case int64:
			v = uint64(x)
		case uint64:
			v = x
		case float32:
			v = uint64(math.Float32bits(x))
		case float64:
			v = math.Float64bits(x)
		default:
			words, err := k.putStruct(i, a, off)
			if err != nil {
				return err
			}
			k.ptrs[i] = unsafe.Pointer(&k.data[off])
			off += words
			continue
		}
		if off >= len(k.data) {
			return fmt.Errorf("gpu runtime: kernel arguments exceed %d bytes", maxKernelBytes)
		}
		k.data[off] = v
		k.ptrs[i] = unsafe.Pointer(&k.data[off])
		off++
	}
	return nil
}

// putStruct copies the struct that a points to into data at word off and
// returns how many 8-byte words it used.
func (k *kernelParams) putStruct(i int, a any, off int) (int, error) {
	v := reflect.ValueOf(a)
	if !v.IsValid() || v.Kind() != reflect.Pointer || v.Type().Elem().Kind() != reflect.Struct || v.IsNil() {
		return 0, fmt.Errorf("gpu runtime: kernel argument %d has type %s; want DevicePtr, uintptr, int32, uint32, int64, uint64, float32, float64 or a non-nil pointer to a struct", i, typeName(v))
	}
	size := int(v.Type().Elem().Size())
	words := (size + 7) / 8
	if off+words > len(k.data) {
		return 0, fmt.Errorf("gpu runtime: kernel arguments exceed %d bytes", maxKernelBytes)
	}
	dst := unsafe.Slice((*byte)(unsafe.Pointer(&k.data[off])), size)
	copy(dst, unsafe.Slice((*byte)(v.UnsafePointer()), size))
	return words, nil
}

// Launch enqueues kernel f on s. Each argument is a fixed-size value
// (DevicePtr, uintptr, int32, uint32, int64, uint64, float32, float64) or a
// pointer to a struct the kernel takes by value; Go int is refused because C
// int is 32 bits. The values are copied, so the caller may reuse them at once.
func Launch(f Function, grid, block [3]uint32, sharedMem uint32, s Stream, args ...any) error {
	if cuLaunchKernel.addr == 0 {
		return errNotLoaded
	}
	k := paramPool.Get().(*kernelParams)
	defer paramPool.Put(k)
	if err := k.set(args); err != nil {
		return err
	}
	var params uintptr
	if k.n > 0 {
		k.pinner.Pin(k) // the block holds pointers into itself while C reads it
		defer k.pinner.Unpin()
		params = uintptr(unsafe.Pointer(&k.ptrs[0]))
	}
	return launchKernel(f, grid, block, sharedMem, s, params)
}

// launchKernel is cuLaunchKernel with the parameter array at params (0: none).
func launchKernel(f Function, grid, block [3]uint32, sharedMem uint32, s Stream, params uintptr) error {
	fn, args := LaunchCall(f, grid, block, sharedMem, s, params)
	if r := uint32(ccall.Call(fn, args...)); r != 0 {
		return LaunchError(int(r))
	}
	return nil
}

func typeName(v reflect.Value) string {
	if !v.IsValid() {
		return "nil"
	}
	return v.Type().String()
}
