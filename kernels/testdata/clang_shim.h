// clang_shim.h: what NVRTC provides built in, for a syntax check of the sources with clang's CUDA front end
// (clang -x cuda --cuda-device-only -nocudainc -nocudalib -include clang_shim.h). Test use only.
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __host__ __attribute__((host))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __launch_bounds__(n) __attribute__((launch_bounds(n)))
#include <__clang_cuda_builtin_vars.h>
__device__ inline int __syncthreads_or(int p) { return __nvvm_bar0_or(p); }
__device__ inline unsigned __float_as_uint(float f) { return __builtin_bit_cast(unsigned, f); }
__device__ inline float __uint_as_float(unsigned u) { return __builtin_bit_cast(float, u); }
__device__ inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) { return __nvvm_atom_add_gen_ll((long long*)p, (long long)v); }
