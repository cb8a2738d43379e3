/**
 * @file copy_kernel.cu
 * @brief dst = src, a copy done by the SMs instead of a copy engine.
 *
 * 05_p2pMemMap compares two ways of moving data between GPUs: a copy engine (cuMemcpyPeerAsync)
 * and this kernel, which runs on one device and reads (or writes) the other device's memory
 * through a peer mapping (in the loopback run and the local reference: the same device's).
 * It is loaded at run time from copy_kernel.fatbin with cuModuleLoadData, so the entry point
 * is `extern "C"`: cuModuleGetFunction finds it by the plain name `Copy_kernel`.
 *
 * It is written like VecAdd_kernel (vectorAdd_kernel.cu), for the same reasons:
 * - **Grid-stride loop.** The host launches enough blocks to fill the GPU (occupancy x SMs); each
 *   thread walks the array with a stride of the whole grid, so one launch configuration fits any
 *   element count.
 * - **16-byte accesses, eight in flight.** When both pointers are 16-byte aligned (cuMemAlloc and
 *   cuMemMap ranges always are), the bulk moves as float4, and each thread issues eight loads
 *   before it stores them, so a peer read over NVLink keeps enough requests outstanding. The
 *   last n % 4 elements, and unaligned pointers, take the scalar loop, so every n and every
 *   pointer is correct.
 * - **Bits, not arithmetic.** Values are only loaded and stored, so every bit pattern arrives
 *   unchanged (the sample checks the copies word by word).
 * - **64-bit indexing.** n is `unsigned long long`, so arrays past 2^31 elements are fine.
 *
 * The argument order is the one of cuMemcpy: destination first.
 */
#include <cstdint>

/// dst[i] = src[i] for i < n (n in floats); launch with any grid (grid-stride); no overlap.
extern "C" __global__ void Copy_kernel(float* __restrict__ dst, const float* __restrict__ src,
                                       unsigned long long n) {
  const unsigned long long first =
      static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;

  const bool aligned =
      ((reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src)) & 0xF) == 0;
  unsigned long long scalarStart = 0;
  if (aligned) {
    const unsigned long long n4 = n / 4;
    const float4* src4 = reinterpret_cast<const float4*>(src);
    float4* dst4 = reinterpret_cast<float4*>(dst);
    // Eight loads in flight before their stores: reading a peer over NVLink is latency bound,
    // and one outstanding load per thread leaves the link idle between round trips.
    constexpr int kInFlight = 8;
    unsigned long long i = first;
    for (; i + (kInFlight - 1) * stride < n4; i += kInFlight * stride) {
      float4 v[kInFlight];
#pragma unroll
      for (int k = 0; k < kInFlight; ++k)
        v[k] = src4[i + k * stride];
#pragma unroll
      for (int k = 0; k < kInFlight; ++k)
        dst4[i + k * stride] = v[k];
    }
    for (; i < n4; i += stride)
      dst4[i] = src4[i];
    scalarStart = n4 * 4;
  }
  for (unsigned long long i = scalarStart + first; i < n; i += stride) {
    dst[i] = src[i];
  }
}
