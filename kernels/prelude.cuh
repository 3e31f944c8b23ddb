// prelude.cuh: the only file with vendor-specific intrinsics or PTX. NVRTC has no default include path, so
// the CUDA build includes no header: integer types, a 16-byte vector, system-scope acquire/release, L2-coherent
// loads, block barriers with a vote, and float bit casts. A HIP build (hipcc, or hiprtc, which has the runtime
// built in) takes the __HIPCC__ branches; everything after this file is plain C++ over these names.

#if defined(__HIPCC__) && !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

typedef signed char i8;
typedef unsigned char u8;
typedef short i16;
typedef unsigned short u16;
typedef int i32;
typedef unsigned int u32;
typedef long long i64;
typedef unsigned long long u64;

#define RX_DEV __device__ __forceinline__
#define RX_KERNEL extern "C" __global__ void __launch_bounds__(512)

struct alignas(16) V16 {
  u32 w[4];
};

#if defined(__HIPCC__)
RX_DEV void grid_dep_sync() {}  // HIP has no programmatic dependent launch: every launch waits for the one ahead
RX_DEV u64 ld_acquire_sys(const u64* p) { return __hip_atomic_load(p, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_SYSTEM); }
RX_DEV void st_release_sys(u64* p, u64 v) { __hip_atomic_store(p, v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_SYSTEM); }
RX_DEV u64 ld_relaxed_sys(const u64* p) { return __hip_atomic_load(p, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM); }
RX_DEV void st_relaxed_sys(u64* p, u64 v) { __hip_atomic_store(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM); }
// A volatile load is a system-scope load on AMD GPUs: it bypasses the non-coherent vector L1 (glc), as
// ld.global.cg does, and stays one 16-byte load.
RX_DEV V16 ld_cg(const V16* p) {
  typedef u32 u32x4 __attribute__((ext_vector_type(4)));
  u32x4 x = *(const volatile u32x4*)p;
  return V16{{x[0], x[1], x[2], x[3]}};
}
RX_DEV V16 ld_stream(const V16* p) { return *p; }
RX_DEV void st_stream(V16* p, V16 v) { *p = v; }
#elif defined(__CUDA_ARCH__)
RX_DEV u64 ld_acquire_sys(const u64* p) {
  u64 v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
RX_DEV void st_release_sys(u64* p, u64 v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
RX_DEV u64 ld_relaxed_sys(const u64* p) {
  u64 v;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
// One single-copy-atomic 8-byte store with no ordering: the LL protocol's data word and flag travel together.
RX_DEV void st_relaxed_sys(u64* p, u64 v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
// A 16-byte load with the cache operator op.
#define RX_LD_V16(name, op)                                                      \
  RX_DEV V16 name(const V16* p) {                                                \
    V16 v;                                                                       \
    asm volatile("ld.global." op ".v4.u32 {%0,%1,%2,%3}, [%4];"                  \
                 : "=r"(v.w[0]), "=r"(v.w[1]), "=r"(v.w[2]), "=r"(v.w[3])        \
                 : "l"(p)                                                        \
                 : "memory");                                                    \
    return v;                                                                    \
  }
// Loads through L2 only: data another GPU wrote into this GPU's memory, or this GPU reads from a peer's.
RX_LD_V16(ld_cg, "cg")
// Data touched once (cache streaming: evict first in L2), so that what is read again soon, such as the codes a
// peer reads one step later, stays in L2. On AMD plain accesses.
RX_LD_V16(ld_stream, "cs")
RX_DEV void st_stream(V16* p, V16 v) {
  asm volatile("st.global.cs.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.w[0]), "r"(v.w[1]), "r"(v.w[2]), "r"(v.w[3])
               : "memory");
}
// Programmatic dependent launch (sm_90 and up): a kernel launched with it may start while the one ahead of it
// on the stream runs; this waits until that one has ended and its writes are visible, then lets the next kernel
// launch early in turn. A kernel launched early calls it before anything else; in an ordinary launch the wait
// returns at once.
RX_DEV void grid_dep_sync() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
#else
#error "prelude.cuh is device code: compile it with NVRTC (or clang --cuda-device-only), hipcc or hiprtc"
#endif
RX_DEV void atomic_add(u64* p, u64 v) { atomicAdd(p, v); }

// Lanes work in groups of 32 (a warp; on AMD half a wavefront): shfl_xor32 gives v of lane ^ m within the
// group, which every lane of the group calls together; warp_sync orders the group's memory accesses before it
// before those after it (AMD's wavefronts run in lockstep: the compiler must only not move them).
#if defined(__HIPCC__)
RX_DEV float shfl_xor32(float v, int m) { return __shfl_xor(v, m, 32); }
RX_DEV void warp_sync() { __builtin_amdgcn_wave_barrier(); }
RX_DEV bool warp_all(bool p) { return __all(p); }  // the whole wavefront: stricter than the group
typedef u64 rx_u64x2 __attribute__((ext_vector_type(2)));
RX_DEV void ld_line16(const u64* p, u64& a, u64& b) {
  rx_u64x2 x = *(const volatile rx_u64x2*)p;
  a = x[0];
  b = x[1];
}
RX_DEV void st_line16(u64* p, u64 a, u64 b) { *(volatile rx_u64x2*)p = rx_u64x2{a, b}; }
#else
RX_DEV float shfl_xor32(float v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
RX_DEV void warp_sync() { __syncwarp(); }
RX_DEV bool warp_all(bool p) {
  u32 r;
  asm volatile("{.reg .pred a, b; setp.ne.u32 a, %1, 0; vote.sync.all.pred b, a, 0xffffffff; selp.u32 %0, 1, 0, b;}"
               : "=r"(r)
               : "r"((u32)p));
  return r != 0;
}
// 16-byte volatile accesses for the LL128 protocol (ll128.cu): the 16-byte pieces of one 128-byte line that a
// warp stores (or loads) in one instruction arrive (are read) together.
RX_DEV void ld_line16(const u64* p, u64& a, u64& b) {
  asm volatile("ld.volatile.global.v2.u64 {%0,%1}, [%2];" : "=l"(a), "=l"(b) : "l"(p) : "memory");
}
RX_DEV void st_line16(u64* p, u64 a, u64 b) {
  asm volatile("st.volatile.global.v2.u64 [%0], {%1,%2};" ::"l"(p), "l"(a), "l"(b) : "memory");
}
#endif

// A hint that brings the line at p into L2 (CUDA) for a load soon after; no register waits on it. On AMD a
// no-op.
#if defined(__HIPCC__)
RX_DEV void prefetch_l2(const void*) {}
#else
RX_DEV void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }
#endif

// A scalar load that bypasses the non-coherent L1 (the scalar twin of ld_cg).
template <class X>
RX_DEV X ld_volatile(const X* p) {
  return *(const volatile X*)p;
}

RX_DEV void block_sync() { __syncthreads(); }
// Block barrier that also reports whether any thread passed pred true.
RX_DEV bool block_any(bool pred) { return __syncthreads_or(pred) != 0; }

RX_DEV u32 f32_bits(float f) { return __float_as_uint(f); }
RX_DEV float bits_f32(u32 u) { return __uint_as_float(u); }

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(__HIPCC__)
// Ampere and later round two floats to bfloat16 in one instruction, to nearest even as convert.cuh's
// f32_to_bf16; a NaN becomes convert.cuh's 0x7fff here whatever the hardware makes of it (the kernel
// rx_bf16_check verifies every float32 on the device). lo goes to the low half.
#define RX_HW_BF16 1
RX_DEV u32 bf16x2_hw(float lo, float hi) {
  u32 r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  if (lo != lo) r = (r & 0xffff0000u) | 0x7fffu;
  if (hi != hi) r = (r & 0xffffu) | 0x7fff0000u;
  return r;
}
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890 && !defined(__HIPCC__)
// Hopper and Ada convert E4M3 in hardware, rounding to nearest even with saturation: the codes of convert.cuh
// for every non-NaN float (the kernel rx_e4m3_check verifies it on the device).
#define RX_HW_E4M3 1
RX_DEV u32 e4m3x2_hw(float lo, float hi) {
  u16 r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
}
RX_DEV void e4m3x2_decode_hw(u32 two, float& lo, float& hi) {
  u32 h2;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"((u16)two));
  asm("cvt.f32.f16 %0, %1;" : "=f"(lo) : "h"((u16)(h2 & 0xffffu)));
  asm("cvt.f32.f16 %0, %1;" : "=f"(hi) : "h"((u16)(h2 >> 16)));
}
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !defined(__HIPCC__)
// Hopper's bulk copies between global and shared memory (cp.async.bulk), which each SM's copy unit runs while
// its threads compute: a load completes on a shared-memory barrier (mbarrier) that counts its bytes, a store is
// tracked in bulk groups of the issuing thread.
#define RX_BULK 1
RX_DEV u32 smem_addr(const void* p) { return (u32)__cvta_generic_to_shared(p); }
RX_DEV void mbar_init(u64* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(bar)) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// An L2 policy for bulk copies: lines that L2 evicts last.
RX_DEV u64 l2_evict_last() {
  u64 p;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  return p;
}
// Loads bytes (a multiple of 16, both addresses 16-byte aligned) from global src into shared dst; bar's phase
// completes when they have arrived (the arrival also waits for the bytes to land).
RX_DEV void bulk_load(void* dst, const void* src, u32 bytes, u64* bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               ::"r"(smem_addr(dst)), "l"(src), "r"(bytes), "r"(smem_addr(bar))
               : "memory");
}
// Completes bar's phase with no load.
RX_DEV void mbar_arrive(u64* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}
RX_DEV void mbar_wait(u64* bar, u32 parity) {
  asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra W;\n}\n"
               ::"r"(smem_addr(bar)), "r"(parity)
               : "memory");
}
// Stores bytes from shared src to global dst (as bulk_load's), in L2 as usual or, given one, under policy, in
// the issuing thread's current bulk group.
RX_DEV void bulk_store(void* dst, const void* src, u32 bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(smem_addr(src)),
               "r"(bytes)
               : "memory");
}
RX_DEV void bulk_store(void* dst, const void* src, u32 bytes, u64 policy) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group.L2::cache_hint [%0], [%1], %2, %3;" ::"l"(dst),
               "r"(smem_addr(src)), "r"(bytes), "l"(policy)
               : "memory");
}
// Closes the thread's current bulk group (an empty one where it stored nothing).
RX_DEV void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Waits until at most N of the thread's bulk groups still read shared memory.
template <int N>
RX_DEV void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
// Waits until every bulk store of the thread has been written, and orders those writes before its later
// (generic) accesses, such as a release to a peer.
RX_DEV void bulk_wait_all() {
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  asm volatile("fence.proxy.async.global;" ::: "memory");
}
// Orders this thread's shared-memory stores before bulk stores that read them (after a block barrier).
RX_DEV void bulk_fence_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
#endif
