// util.cu: small helpers of the engine.

// Flips the bits of mask in the byte at p (the RCCLX_TESTS_CORRUPT_RANK hook plants a wrong element with it).
extern "C" __global__ void rx_flip_bits(u8* p, u32 mask) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *p ^= (u8)mask;
}
