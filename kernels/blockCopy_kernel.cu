/**
 * @file blockCopy_kernel.cu
 * @brief Scattered blocks copied by the SMs (09_memcpyBatch's third way), and a kernel that
 *        keeps the SMs busy while the copy engines work (its overlap measurement).
 *
 * BlockCopy_kernel moves `count` blocks of `blockBytes`: block i from src + srcOffsets[i] to
 * dst + dstOffsets[i]. One side is mapped pinned host memory (cuMemHostGetDevicePointer), so every
 * load or store of that side crosses PCIe: the SMs do the copy engine's work, and with thousands
 * of small blocks they pay no per-copy cost, only the link's. Each CTA takes one block at a time
 * (grid-stride over blocks); its threads stride over the block's 16-byte words, so consecutive
 * threads touch consecutive addresses, and each thread issues kLoadsInFlight loads before it
 * stores any of them: a read of host memory takes microseconds, and only loads in flight hide
 * that. How many CTAs it takes to keep the link busy is what 09 measures (its CTA search). A
 * block size that is not a multiple of 16, or an unaligned base, takes the 4-byte loop instead.
 *
 * Spin_kernel only waits, clock by clock, for `cycles` cycles on every SM it occupies: stand-in
 * compute for CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE.
 */
#include <cstdint>

namespace {

/// Loads each thread has in flight before it stores: four 16-byte words, 64 bytes a thread.
constexpr unsigned int kLoadsInFlight = 4;

/// Copies @p words 16-byte words from @p from to @p to with the threads of this CTA.
///
/// The loads are written as __ldcg (`ld.global.cg`, cached in L2 only): every word is read once,
/// so L1 has nothing to keep. (Left to itself the compiler reads a `const __restrict__` source
/// through the read-only path, `ld.global.nc`. That build gathered at 0.57-0.66 of the link in
/// two runs on an H100; this one at 0.91-0.95 in a later run on an H100, where a separate probe
/// kernel reached 0.92-0.96 with `.nc`, `.cg`, `.ca` and plain loads alike: so the load form is
/// not shown to be what differed. See 09's README.)
__device__ void copyWide(uint4* __restrict__ to, const uint4* __restrict__ from,
                         unsigned long long words) {
  const unsigned long long stride = blockDim.x;
  for (unsigned long long first = threadIdx.x; first < words; first += kLoadsInFlight * stride) {
    // All loads first, then all stores: the loads overlap instead of waiting one by one.
    uint4 held[kLoadsInFlight];
#pragma unroll
    for (unsigned int k = 0; k < kLoadsInFlight; ++k) {
      const unsigned long long w = first + k * stride;
      if (w < words)
        held[k] = __ldcg(from + w);  // cached in L2 only: see above
    }
#pragma unroll
    for (unsigned int k = 0; k < kLoadsInFlight; ++k) {
      const unsigned long long w = first + k * stride;
      if (w < words)
        to[w] = held[k];
    }
  }
}

/// Copies @p words 4-byte words from @p from to @p to with the threads of this CTA.
__device__ void copyNarrow(unsigned int* __restrict__ to, const unsigned int* __restrict__ from,
                           unsigned long long words) {
  for (unsigned long long w = threadIdx.x; w < words; w += blockDim.x)
    to[w] = from[w];
}

}  // namespace

/// Copies block i from src + srcOffsets[i] to dst + dstOffsets[i] for i < count, blockBytes each
/// (a multiple of 4); launch with any grid (09 uses CTAs of 512 threads).
extern "C" __global__ void BlockCopy_kernel(unsigned char* __restrict__ dst,
                                            const unsigned char* __restrict__ src,
                                            const unsigned long long* __restrict__ dstOffsets,
                                            const unsigned long long* __restrict__ srcOffsets,
                                            unsigned long long count,
                                            unsigned long long blockBytes) {
  const bool wide = blockBytes % 16 == 0 &&
                    ((reinterpret_cast<std::uintptr_t>(dst) |
                      reinterpret_cast<std::uintptr_t>(src)) & 0xF) == 0;
  for (unsigned long long i = blockIdx.x; i < count; i += gridDim.x) {
    const unsigned char* from = src + srcOffsets[i];
    unsigned char* to = dst + dstOffsets[i];
    if (wide) {
      copyWide(reinterpret_cast<uint4*>(to), reinterpret_cast<const uint4*>(from),
               blockBytes / 16);
    } else {
      copyNarrow(reinterpret_cast<unsigned int*>(to), reinterpret_cast<const unsigned int*>(from),
                 blockBytes / 4);
    }
  }
}

/// Waits @p cycles clock cycles in every thread: busy SMs, no memory traffic.
extern "C" __global__ void Spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}
