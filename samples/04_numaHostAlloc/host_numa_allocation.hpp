/**
 * @file host_numa_allocation.hpp
 * @brief The CUDA-native way to put host memory on a NUMA node: cuMemCreate with a
 *        CU_MEM_LOCATION_TYPE_HOST_NUMA location, mapped into reserved addresses and opened to
 *        the device and to the CPU. The whole sequence is the constructor of HostNumaAllocation.
 *
 * What one allocation looks like (the same VMM calls as 02_vectorAddMMAP, with a host location):
 *
 * @verbatim
     address                                                         address + size
     v                                                                            v
     +----------------------------------------------------------------------------+
     |  one physical allocation: cuMemCreate, location {HOST_NUMA, node}          |
     |  pinned host pages on that node, mapped with cuMemMap at offset 0          |
     +----------------------------------------------------------------------------+
     |<------ size: the request rounded up to the granularity (2 MiB on H200) ---->|
       ^ read-write for device <ordinal>     (access location DEVICE)        } one
       ^ read-write for the CPU              (access location HOST_NUMA)     } cuMemSetAccess
   @endverbatim
 *
 * The device and the CPU see the same address. Until cuMemSetAccess grants it, neither may touch
 * the memory, the CPU included.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <utility>

/**
 * Host memory on one NUMA node from the VMM API, owned: cuMemUnmap (which frees the memory, its
 * handle having been released at once) and cuMemAddressFree when released or destroyed.
 * Requires a current context. Not copyable.
 */
class HostNumaAllocation {
 public:
  /**
   * Builds @p bytes on host node @p node, read-write for device @p deviceOrdinal and for the
   * CPU: cuMemGetAllocationGranularity (minimum and recommended), cuMemAddressReserve,
   * cuMemCreate, cuMemMap, cuMemRelease, cuMemSetAccess. The size is rounded up to, and the
   * addresses aligned on, memsamples::allocationGranularity(): the recommended granularity from
   * one such unit up, else the minimum.
   * @throws memsamples::CudaError naming the call that failed; what was built is undone first.
   */
  HostNumaAllocation(int deviceOrdinal, int node, std::size_t bytes);
  /// Unmaps and frees the addresses if release() has not; failures are ignored here.
  ~HostNumaAllocation();
  HostNumaAllocation(const HostNumaAllocation&) = delete;
  HostNumaAllocation& operator=(const HostNumaAllocation&) = delete;

  /// The address the device and the CPU use; 0 after release().
  CUdeviceptr address() const noexcept { return address_; }
  /// The bytes mapped: the request rounded up to granularity().
  std::size_t size() const noexcept { return size_; }
  /// The granularity used: recommendedGranularity() or minimumGranularity().
  std::size_t granularity() const noexcept { return granularity_; }
  /// CU_MEM_ALLOC_GRANULARITY_MINIMUM for a HOST_NUMA location.
  std::size_t minimumGranularity() const noexcept { return minimum_; }
  /// CU_MEM_ALLOC_GRANULARITY_RECOMMENDED for a HOST_NUMA location.
  std::size_t recommendedGranularity() const noexcept { return recommended_; }

  /// Unmaps (which frees the memory) and frees the addresses now; empty afterwards, even when
  /// this throws. @throws memsamples::CudaError naming cuMemUnmap or cuMemAddressFree.
  void release();

 private:
  std::pair<CUresult, CUresult> unmapAndFree() noexcept;

  CUdeviceptr address_ = 0;
  std::size_t size_ = 0;
  std::size_t granularity_ = 0;
  std::size_t minimum_ = 0;
  std::size_t recommended_ = 0;
  bool mapped_ = false;
};
