/**
 * @file managed_memory.hpp
 * @brief The managed-memory driver calls of 03_managedAdvisePrefetch, each wrapped once: advice,
 *        prefetch, validated batch prefetch and discard, range and pointer attribute queries.
 *
 * The wrappers add error checking (memsamples::check) and, for the batch calls, the argument
 * validation of managed_logic.hpp before the driver sees the arrays. They keep the driver's
 * vocabulary: a location is a CUmemLocation, a range is an address and a byte count.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <vector>

#include "managed_logic.hpp"

namespace memsamples::managed {

/// cuMemAdvise (CUDA 13: cuMemAdvise_v2, CUmemLocation form) on [@p ptr, @p ptr + @p bytes).
/// @throws CudaError naming the advice.
void advise(CUdeviceptr ptr, std::size_t bytes, CUmem_advise advice, const CUmemLocation& location);

/// Same call, returning the driver's answer instead of throwing: for advice that a machine may
/// not support (a host NUMA node as preferred location).
CUresult tryAdvise(CUdeviceptr ptr, std::size_t bytes, CUmem_advise advice,
                   const CUmemLocation& location);

/// cuMemPrefetchAsync (CUDA 13: cuMemPrefetchAsync_v2) of one range to @p destination.
void prefetchAsync(CUdeviceptr ptr, std::size_t bytes, const CUmemLocation& destination,
                   CUstream stream);

/**
 * cuMemPrefetchBatchAsync of @p batch on @p stream, after validatePrefetchBatch().
 * @throws BatchPrefetchError (nothing is enqueued) or CudaError.
 */
void prefetchBatchAsync(const PrefetchBatch& batch, CUstream stream);

/**
 * cuMemDiscardBatchAsync: tells the driver the contents of these ranges are no longer needed.
 * Until a range is written or prefetched again its contents are indeterminate, and the driver
 * may drop its pages instead of migrating them. Validated like a prefetch batch first.
 * @throws BatchPrefetchError (nothing is enqueued) or CudaError.
 */
void discardBatchAsync(const std::vector<CUdeviceptr>& dptrs, const std::vector<std::size_t>& sizes,
                       CUstream stream);

/**
 * All eight CU_MEM_RANGE_ATTRIBUTE_* of a range, one cuMemRangeGetAttribute call each.
 * @param ptr start of the range (managed memory).
 * @param bytes length of the range.
 * @param accessedBySlots how many entries to ask for in ACCESSED_BY (at least 1).
 */
RangeAttributes readRangeAttributes(CUdeviceptr ptr, std::size_t bytes, int accessedBySlots);

/// The same eight attributes with a single cuMemRangeGetAttributes call.
RangeAttributes readRangeAttributesAtOnce(CUdeviceptr ptr, std::size_t bytes, int accessedBySlots);

/// What cuPointerGetAttributes says about an address.
struct PointerAttributes {
  unsigned int memoryType = 0;    ///< CU_POINTER_ATTRIBUTE_MEMORY_TYPE (a CUmemorytype).
  int isManaged = 0;              ///< CU_POINTER_ATTRIBUTE_IS_MANAGED.
  int deviceOrdinal = -1;         ///< CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL.
  CUdeviceptr rangeStart = 0;     ///< CU_POINTER_ATTRIBUTE_RANGE_START_ADDR.
  std::size_t rangeSize = 0;      ///< CU_POINTER_ATTRIBUTE_RANGE_SIZE.
  CUdeviceptr devicePointer = 0;  ///< CU_POINTER_ATTRIBUTE_DEVICE_POINTER.
  void* hostPointer = nullptr;    ///< CU_POINTER_ATTRIBUTE_HOST_POINTER.
  CUcontext context = nullptr;    ///< CU_POINTER_ATTRIBUTE_CONTEXT.
};

/// cuPointerGetAttributes for the attributes of PointerAttributes, in one call.
PointerAttributes readPointerAttributes(CUdeviceptr ptr);

/// "CU_MEMORYTYPE_DEVICE", ..., or "unknown CUmemorytype".
const char* memoryTypeName(unsigned int memoryType);

}  // namespace memsamples::managed
