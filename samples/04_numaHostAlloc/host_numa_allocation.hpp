/**
 * @file host_numa_allocation.hpp
 * @brief The CUDA-native way to put host memory on a NUMA node, as one function with the whole
 *        call sequence: cuMemCreate with a CU_MEM_LOCATION_TYPE_HOST_NUMA location, mapped into
 *        reserved addresses, opened to the device and to the CPU, used, unmapped and freed.
 *
 * The layout it builds (one physical allocation, one cuMemSetAccess for the device and the
 * CPU) is drawn in the sample's README, "Going deeper", "Step 8: the CUDA-native path".
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <functional>
#include <string>

/// One host-NUMA allocation while it is mapped: what useHostNumaAllocation() hands its user.
struct HostNumaRange {
  CUdeviceptr address = 0;                 ///< The address the device and the CPU use.
  std::size_t size = 0;                    ///< The request rounded up to `granularity`.
  std::size_t granularity = 0;             ///< The one used: `recommended` or `minimum`.
  std::size_t minimumGranularity = 0;      ///< CU_MEM_ALLOC_GRANULARITY_MINIMUM of the location.
  std::size_t recommendedGranularity = 0;  ///< CU_MEM_ALLOC_GRANULARITY_RECOMMENDED.
};

/**
 * Builds @p bytes of host memory on node @p node, read-write for device @p deviceOrdinal and for
 * the CPU, hands it to @p use, then unmaps it (which frees the memory: its handle was released
 * right after mapping) and frees the addresses, each call checked. The size is rounded up to,
 * and the addresses aligned on, memsamples::allocationGranularity(). Needs a current context.
 * @throws memsamples::CudaError naming the call that failed; what was built is undone first.
 */
void useHostNumaAllocation(int deviceOrdinal, int node, std::size_t bytes,
                           const std::function<void(const HostNumaRange&)>& use);
