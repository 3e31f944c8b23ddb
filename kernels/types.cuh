// types.cuh: the element type T and reduction op of this module, chosen at compile time with -DRX_DTYPE and
// -DRX_OP (numbered as collectives.DType and collectives.Op). Every reduction step works as package hostengine
// documents: integers wrap, half/bf16/fp8 decode to float, apply the op and re-encode (round to nearest even)
// wherever a partial result is stored; avg divides the sum by the rank count at the end; mulsum multiplies each
// rank's input by 1 + rank%2 in the element type first.

#define RX_INT8 0
#define RX_UINT8 1
#define RX_INT32 2
#define RX_UINT32 3
#define RX_INT64 4
#define RX_UINT64 5
#define RX_HALF 6
#define RX_FLOAT 7
#define RX_DOUBLE 8
#define RX_BFLOAT16 9
#define RX_F8E4M3 10
#define RX_F8E5M2 11

#define RX_SUM 0
#define RX_PROD 1
#define RX_MAX 2
#define RX_MIN 3
#define RX_AVG 4
#define RX_MULSUM 5

#if !defined(RX_DTYPE) || !defined(RX_OP)
#error "compile with -DRX_DTYPE=<collectives.DType> -DRX_OP=<collectives.Op>"
#endif

// T is the stored element (raw bits for half/bf16/fp8); A is what one reduction step computes in; U is the
// unsigned type integer steps wrap in.
#if RX_DTYPE == RX_INT8
typedef i8 T;
typedef i8 A;
typedef u8 U;
#elif RX_DTYPE == RX_UINT8
typedef u8 T;
typedef u8 A;
typedef u8 U;
#elif RX_DTYPE == RX_INT32
typedef i32 T;
typedef i32 A;
typedef u32 U;
#elif RX_DTYPE == RX_UINT32
typedef u32 T;
typedef u32 A;
typedef u32 U;
#elif RX_DTYPE == RX_INT64
typedef i64 T;
typedef i64 A;
typedef u64 U;
#elif RX_DTYPE == RX_UINT64
typedef u64 T;
typedef u64 A;
typedef u64 U;
#elif RX_DTYPE == RX_DOUBLE
typedef double T;
typedef double A;
#elif RX_DTYPE == RX_FLOAT
typedef float T;
typedef float A;
#elif RX_DTYPE == RX_HALF || RX_DTYPE == RX_BFLOAT16
typedef u16 T;
typedef float A;
#else
typedef u8 T;
typedef float A;
#endif

#define RX_INTEGER (RX_DTYPE <= RX_UINT64)
#define RX_VE (16 / (int)sizeof(T))  // elements per 16-byte vector

RX_DEV A to_acc(T x) {
#if RX_DTYPE == RX_HALF
  return f16_to_f32(x);
#elif RX_DTYPE == RX_BFLOAT16
  return bf16_to_f32(x);
#elif RX_DTYPE == RX_F8E4M3
  return e4m3_to_f32(x);
#elif RX_DTYPE == RX_F8E5M2
  return e5m2_to_f32(x);
#else
  return x;
#endif
}

RX_DEV T from_acc(A a) {
#if RX_DTYPE == RX_HALF
  return f32_to_f16(a);
#elif RX_DTYPE == RX_BFLOAT16
  return f32_to_bf16(a);
#elif RX_DTYPE == RX_F8E4M3
  return f32_to_e4m3(a);
#elif RX_DTYPE == RX_F8E5M2
  return f32_to_e5m2(a);
#else
  return a;
#endif
}

// Go's max and min (package hostengine uses the builtins): NaN wins, max(-0, +0) = +0, min(-0, +0) = -0.
template <class X>
RX_DEV X go_max(X a, X b) {
  if (a != a || b != b) return a != a ? a : b;
  if (a == b) return a < X(0) || a > X(0) || (f32_bits((float)a) >> 31) ? b : a;
  return a > b ? a : b;
}
template <class X>
RX_DEV X go_min(X a, X b) {
  if (a != a || b != b) return a != a ? a : b;
  if (a == b) return a < X(0) || a > X(0) || (f32_bits((float)a) >> 31) ? a : b;
  return a < b ? a : b;
}

// One reduction step of two stored elements.
RX_DEV T combine(T x, T y) {
  A a = to_acc(x), b = to_acc(y);
#if RX_OP == RX_PROD
#if RX_INTEGER
  return (T)((U)a * (U)b);
#else
  return from_acc(a * b);
#endif
#elif RX_OP == RX_MAX
  return from_acc(go_max(a, b));
#elif RX_OP == RX_MIN
  return from_acc(go_min(a, b));
#elif RX_INTEGER
  return (T)((U)a + (U)b);
#else
  return from_acc(a + b);
#endif
}

// A rank's own input as it enters the reduction (mulsum's pre-multiplication).
RX_DEV T premul(T x, int rank) {
#if RX_OP == RX_MULSUM
  if (rank % 2 == 0) return x;
#if RX_INTEGER
  return (T)((U)x * (U)2);
#else
  return from_acc(to_acc(x) * (A)2);
#endif
#else
  return x;
#endif
}

// The fully reduced value (avg's division by the rank count).
RX_DEV T finish(T x, int nranks) {
#if RX_OP == RX_AVG
#if RX_INTEGER
  return (T)(x / (T)nranks);
#else
  return from_acc(to_acc(x) / (A)nranks);
#endif
#else
  return x;
#endif
}
