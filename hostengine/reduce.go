package hostengine

import (
	"unsafe"

	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/floats"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// Element-wise reduction of one (dtype, op), the single primitive every algorithm reduces with:
//
//	combine(dst, a, b, preA, preB):  dst[i] = pre(a[i], preA) ⊕ pre(b[i], preB)
//
// rounded to the element type once per call, as a GPU kernel that stores the element type does. pre(x, p) is
// x*p in the element type for mulsum (p = collectives.PreMulScalar of the rank the input came from; 1 for a
// partial result) and x for every other op. ⊕ is + for sum, avg and mulsum, * for prod, max and min for
// max and min (Go's builtins: NaN propagates, max(-0, +0) = +0). Integers wrap. half, bfloat16 and the FP8
// formats are decoded to float32 exactly, combined in float32 and encoded back with round-to-nearest-even
// (FP8 saturating); under mulsum the product pre(x, p) is itself rounded to the element type first.
// finish applies avg's division by the rank count to the final result: in the element type for float and
// double, in float32 then rounded for the narrow formats, and as truncating division of the wrapped sum
// for integers (unsigned division for unsigned types).
type reducer struct {
	combine func(dst, a, b []byte, preA, preB int)
	finish  func(buf []byte, nranks int) // nil unless op is avg
}

type integer interface {
	~int8 | ~uint8 | ~int32 | ~uint32 | ~int64 | ~uint64
}

type float interface{ ~float32 | ~float64 }

type number interface{ integer | float }

// newReducer returns the reduction of op over elements of dt, the FP8 types in flavour fp8.
func newReducer(dt collectives.DType, op collectives.Op, fp8 collectives.FP8Flavour) reducer {
	switch dt {
	case collectives.Int8:
		return nativeReducer(op, divideInt[int8])
	case collectives.Uint8:
		return nativeReducer(op, divideInt[uint8])
	case collectives.Int32:
		return nativeReducer(op, divideInt[int32])
	case collectives.Uint32:
		return nativeReducer(op, divideInt[uint32])
	case collectives.Int64:
		return nativeReducer(op, divideInt[int64])
	case collectives.Uint64:
		return nativeReducer(op, divideInt[uint64])
	case collectives.Float:
		return nativeReducer(op, divideFloat[float32])
	case collectives.Double:
		return nativeReducer(op, divideFloat[float64])
	case collectives.Half:
		return narrowReducer(op, halfCodec)
	case collectives.BFloat16:
		return narrowReducer(op, bf16Codec)
	case collectives.F8E4M3, collectives.F8E5M2:
		return narrowReducer(op, fp8Codec(fp8.Format(dt)))
	}
	panic("hostengine: no reduction for " + dt.String())
}

// as reinterprets b as a slice of T (b's address is T-aligned: buffers are 64-byte aligned and views sit at
// whole elements).
func as[T any](b []byte) []T {
	if len(b) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/int(unsafe.Sizeof(zero)))
}

// kernel is combine over native elements.
type kernel[T number] func(dst, a, b []T, preA, preB T)

func nativeReducer[T number](op collectives.Op, divide func([]T, int)) reducer {
	k := kernelFor[T](op)
	r := reducer{combine: func(dst, a, b []byte, preA, preB int) {
		k(as[T](dst), as[T](a), as[T](b), T(preA), T(preB))
	}}
	if op == collectives.Avg {
		r.finish = func(buf []byte, n int) { divide(as[T](buf), n) }
	}
	return r
}

// kernelFor returns op's loop for T. Each loop is instantiated per element type, so float32/float64/int32 sum
// (the benchmark cases) compile to plain typed loops over the reinterpreted buffers.
func kernelFor[T number](op collectives.Op) kernel[T] {
	switch op {
	case collectives.Sum, collectives.Avg:
		switch any(T(0)).(type) {
		case float32:
			return any(kernel[float32](sumFloat32)).(kernel[T])
		case float64:
			return any(kernel[float64](sumFloat64)).(kernel[T])
		}
		return sumKernel[T]
	case collectives.MulSum:
		return mulSumKernel[T]
	case collectives.Prod:
		return prodKernel[T]
	case collectives.Max:
		return maxKernel[T]
	case collectives.Min:
		return minKernel[T]
	}
	panic("hostengine: no reduction for op " + op.String())
}

func sumKernel[T number](dst, a, b []T, _, _ T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] + b[i]
	}
}

// sumFloat32 and sumFloat64 add with gonum's SIMD loops: the scalar loop is compute-bound well below memory
// bandwidth. Multiplying by alpha = 1 is exact, so the bits equal sumKernel's. dst is either disjoint from a
// and b or the same slice as one of them.
func sumFloat32(dst, a, b []float32, _, _ float32) {
	switch {
	case len(dst) == 0:
	case &dst[0] == &a[0]:
		blas32.Axpy(1, blas32.Vector{N: len(dst), Inc: 1, Data: b}, blas32.Vector{N: len(dst), Inc: 1, Data: dst})
	case &dst[0] == &b[0]:
		blas32.Axpy(1, blas32.Vector{N: len(dst), Inc: 1, Data: a}, blas32.Vector{N: len(dst), Inc: 1, Data: dst})
	default:
		copy(dst, a)
		blas32.Axpy(1, blas32.Vector{N: len(dst), Inc: 1, Data: b}, blas32.Vector{N: len(dst), Inc: 1, Data: dst})
	}
}

func sumFloat64(dst, a, b []float64, _, _ float64) { floats.AddTo(dst, a[:len(dst)], b[:len(dst)]) }

func mulSumKernel[T number](dst, a, b []T, preA, preB T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		// The conversions keep each product rounded on its own (no fused multiply-add).
		dst[i] = T(a[i]*preA) + T(b[i]*preB)
	}
}

func prodKernel[T number](dst, a, b []T, _, _ T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] * b[i]
	}
}

func maxKernel[T number](dst, a, b []T, _, _ T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = max(a[i], b[i])
	}
}

func minKernel[T number](dst, a, b []T, _, _ T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = min(a[i], b[i])
	}
}

func divideFloat[T float](buf []T, n int) {
	d := T(n)
	for i := range buf {
		buf[i] /= d
	}
}

// divideInt divides in 64 bits so that rank counts beyond the element type's range still divide correctly.
func divideInt[T integer](buf []T, n int) {
	if ^T(0) < 0 { // signed
		for i := range buf {
			buf[i] = T(int64(buf[i]) / int64(n))
		}
		return
	}
	for i := range buf {
		buf[i] = T(uint64(buf[i]) / uint64(n))
	}
}
