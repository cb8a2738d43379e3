/**
 * @file fake_host_numa_driver.hpp
 * @brief How a unit test controls and inspects the fake driver of fake_host_numa_driver.cpp: the
 *        VMM calls of useHostNumaAllocation (04_numaHostAlloc), with host-NUMA allocations.
 *
 * fake_host_numa_driver.cpp defines, with C linkage, the cu* functions that
 * host_numa_allocation.cpp and memsamples_check.cpp call, so that the sample's real code links
 * against it instead of libcuda (a link seam). Each call checks what the CUDA documentation asks
 * of it (sizes and offsets in whole granules, a mapping inside a reservation, access only to
 * mapped memory, a HOST_NUMA location with a node id) and answers CUDA_ERROR_INVALID_VALUE
 * otherwise. A test can make the Nth call of any of them fail. reset() at the start of each test.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fakenuma {

/// The minimum granularity the fake reports for a host-NUMA location.
constexpr std::size_t kGranularity = std::size_t{2} << 20;
/// The recommended one: larger, as a driver may recommend, so that a test sees which is used.
constexpr std::size_t kRecommendedGranularity = std::size_t{8} << 20;

/// Forgets every reservation, allocation, mapping, recorded call and planned failure.
void reset();

/// The @p nth call (1-based, since reset()) of @p function ("cuMemMap") returns @p result and
/// changes nothing.
void failCall(const std::string& function, int nth, CUresult result = CUDA_ERROR_OUT_OF_MEMORY);

/// The driver calls since reset(), in order, failed ones included (error-text lookups left out).
const std::vector<std::string>& driverCalls();

/// What the fake machine still holds.
struct Leftovers {
  std::size_t reservations = 0;       ///< Address ranges not freed.
  std::size_t mappings = 0;           ///< Mappings not unmapped.
  std::size_t unreleasedHandles = 0;  ///< cuMemCreate handles not released.
  /// True when nothing is left.
  bool none() const { return reservations == 0 && mappings == 0 && unreleasedHandles == 0; }
};
/// What is left now.
Leftovers leftovers();

/// The alignment the last successful cuMemAddressReserve asked for.
std::size_t lastReserveAlignment();

/// The host node of the allocation mapped at @p address, or -1.
int nodeMappedAt(CUdeviceptr address);
/// The access cuMemSetAccess granted on the mapping at @p address, in the order given.
std::vector<CUmemAccessDesc> accessAt(CUdeviceptr address);

}  // namespace fakenuma
