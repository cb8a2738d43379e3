/**
 * @file vectorAdd_kernel.cu
 * @brief C = A + B, written to run at memory bandwidth.
 *
 * Used by every sample that needs a kernel to touch memory. It is loaded at run time from
 * vectorAdd_kernel.fatbin with cuModuleLoadData, so the entry point is `extern "C"`: its symbol
 * is the plain name `VecAdd_kernel`, which cuModuleGetFunction looks up.
 *
 * Why it is fast:
 * - **Grid-stride loop.** Each thread walks the array with a stride of the whole grid, so any N
 *   is correct with any grid. 01 and 02 launch one thread per float4 (blocksToCover() in
 *   Common), which on the H200 is 6 % faster than a grid that only fills every SM once (the grid
 *   03, 04 and 06 still use); the loop also covers a grid capped at its maximum size.
 * - **16-byte accesses.** When all three pointers are 16-byte aligned (cuMemAlloc and cuMemMap
 *   ranges always are), the bulk is processed as float4: a quarter of the load/store
 *   instructions for the same bytes. The last N % 4 elements are handled one by one, and
 *   unaligned pointers fall back to the scalar loop, so every N and every pointer is correct.
 * - **64-bit indexing.** N is `unsigned long long`, so arrays past 2^31 elements are fine.
 */
#include <cstdint>

/// c[i] = a[i] + b[i] for i < n; launch with any grid (grid-stride), pointers may alias nothing.
extern "C" __global__ void VecAdd_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                         float* __restrict__ c, unsigned long long n) {
  const unsigned long long first =
      static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;

  const bool aligned = ((reinterpret_cast<std::uintptr_t>(a) | reinterpret_cast<std::uintptr_t>(b) |
                         reinterpret_cast<std::uintptr_t>(c)) &
                        0xF) == 0;
  unsigned long long scalarStart = 0;
  if (aligned) {
    const unsigned long long n4 = n / 4;
    const float4* a4 = reinterpret_cast<const float4*>(a);
    const float4* b4 = reinterpret_cast<const float4*>(b);
    float4* c4 = reinterpret_cast<float4*>(c);
    for (unsigned long long i = first; i < n4; i += stride) {
      const float4 x = a4[i];
      const float4 y = b4[i];
      c4[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
    scalarStart = n4 * 4;
  }
  for (unsigned long long i = scalarStart + first; i < n; i += stride) {
    c[i] = a[i] + b[i];
  }
}
