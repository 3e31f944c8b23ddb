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
// As PTX text: clang's builtins for these need a PTX version that -nocudainc leaves unset.
__device__ inline float __shfl_xor_sync(unsigned mask, float v, int m) {
  float r;
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, %3;" : "=f"(r) : "f"(v), "r"(m), "r"(mask));
  return r;
}
__device__ inline void __syncwarp(unsigned mask = 0xffffffffu) { asm volatile("bar.warp.sync %0;" ::"r"(mask)); }
