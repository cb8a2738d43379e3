/**
 * @file byte_ranges.hpp
 * @brief Byte ranges inside a buffer: a buffer cut into aligned chunks, or ranges one every
 *        stride (03's batch prefetch and its benchmark).
 *
 * Nothing here touches the CUDA driver (unit tested in
 * ctest/unit/managedAdvisePrefetch/chunks_test.cpp).
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace memsamples {

/// A byte range inside a buffer.
struct ByteRange {
  std::uint64_t offset = 0;  ///< First byte, from the start of the buffer.
  std::uint64_t bytes = 0;   ///< Length in bytes (never 0).
};

/// @p totalBytes cut into @p chunks consecutive ranges with boundaries on multiples of
/// @p alignment, the remainder in the last. @throws std::invalid_argument when impossible.
std::vector<ByteRange> splitIntoChunks(std::uint64_t totalBytes, std::size_t chunks,
                                       std::uint64_t alignment);

/// @p count ranges of @p rangeBytes, one every @p strideBytes (never touching, so the driver
/// cannot merge them). @throws std::invalid_argument when a range is empty or wider than a stride.
std::vector<ByteRange> stridedRanges(std::size_t count, std::uint64_t rangeBytes,
                                     std::uint64_t strideBytes);

}  // namespace memsamples
