/**
 * @file pool_attributes.hpp
 * @brief The pool attributes 10_streamOrderedPool reads and sets, one call each: what the pool
 *        holds (reserved and used, now and at their high-water marks), the release threshold
 *        and the three reuse rules. Unit tested against a fake driver (a link seam).
 */
#pragma once

#include <cuda.h>

#include <cstdint>

namespace pool_attributes {

/// The four counters of a pool, in bytes (CU_MEMPOOL_ATTR_*_MEM_*).
struct PoolUsage {
  std::uint64_t reservedCurrent = 0;  ///< Memory the pool holds from the device now.
  std::uint64_t reservedHigh = 0;     ///< Its high-water mark since the last reset.
  std::uint64_t usedCurrent = 0;      ///< Memory handed out to live allocations now.
  std::uint64_t usedHigh = 0;         ///< Its high-water mark since the last reset.
};

/// The three reuse rules of a pool, each on (1) or off (0).
struct ReuseRules {
  bool followEventDependencies = true;  ///< CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES
  bool allowOpportunistic = true;       ///< CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC
  bool allowInternalDependencies = true;  ///< CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES
};

/// Reads the four counters of @p pool (cuMemPoolGetAttribute). @throws memsamples::CudaError.
PoolUsage readPoolUsage(CUmemoryPool pool);

/// Resets both high-water marks of @p pool to the current values (setting them to 0 does that).
/// @throws memsamples::CudaError.
void resetHighWater(CUmemoryPool pool);

/// Sets the release threshold of @p pool (cuMemPoolSetAttribute). @throws memsamples::CudaError.
void setReleaseThreshold(CUmemoryPool pool, std::uint64_t bytes);

/// Reads the reuse rules of @p pool. @throws memsamples::CudaError.
ReuseRules readReuseRules(CUmemoryPool pool);

/// Sets the three reuse rules of @p pool. @throws memsamples::CudaError.
void setReuseRules(CUmemoryPool pool, const ReuseRules& rules);

}  // namespace pool_attributes
