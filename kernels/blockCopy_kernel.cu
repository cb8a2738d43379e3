/**
 * @file blockCopy_kernel.cu
 * @brief Scattered blocks copied by the SMs (09_memcpyBatch's third way), and a kernel that
 *        keeps the SMs busy while the copy engines work (its overlap measurement).
 *
 * BlockCopy_kernel moves `count` blocks of `blockBytes`: block i from src + srcOffsets[i] to
 * dst + dstOffsets[i]. One side is mapped pinned host memory (cuMemHostGetDevicePointer), so every
 * load or store of that side crosses PCIe: the SMs do the copy engine's work, and with thousands
 * of small blocks they pay no per-copy cost, only the link's. Each thread block takes whole blocks
 * (grid-stride over blocks), its threads stride over the block's 16-byte words, so consecutive
 * threads touch consecutive addresses. A block size that is not a multiple of 16, or an unaligned
 * base, takes the 4-byte loop instead.
 *
 * Spin_kernel only waits, clock by clock, for `cycles` cycles on every SM it occupies: stand-in
 * compute for CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE.
 */
#include <cstdint>

/// Copies block i from src + srcOffsets[i] to dst + dstOffsets[i] for i < count, blockBytes each
/// (a multiple of 4); launch with any grid.
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
      const uint4* from4 = reinterpret_cast<const uint4*>(from);
      uint4* to4 = reinterpret_cast<uint4*>(to);
      for (unsigned long long w = threadIdx.x; w < blockBytes / 16; w += blockDim.x)
        to4[w] = from4[w];
    } else {
      const unsigned int* from1 = reinterpret_cast<const unsigned int*>(from);
      unsigned int* to1 = reinterpret_cast<unsigned int*>(to);
      for (unsigned long long w = threadIdx.x; w < blockBytes / 4; w += blockDim.x)
        to1[w] = from1[w];
    }
  }
}

/// Waits @p cycles clock cycles in every thread: busy SMs, no memory traffic.
extern "C" __global__ void Spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}
