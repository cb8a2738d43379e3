/**
 * @file byte_ranges.cpp
 * @brief Byte ranges inside a buffer; see byte_ranges.hpp.
 */
#include "support/byte_ranges.hpp"

#include <stdexcept>
#include <string>

namespace memsamples {
namespace {

std::string str(std::uint64_t value) {
  return std::to_string(value);
}

}  // namespace

std::vector<ByteRange> splitIntoChunks(std::uint64_t totalBytes, std::size_t chunks,
                                       std::uint64_t alignment) {
  if (chunks == 0)
    throw std::invalid_argument("splitIntoChunks: the number of chunks must be at least 1");
  if (alignment == 0)
    throw std::invalid_argument("splitIntoChunks: the alignment must be at least 1 byte");
  if (totalBytes / chunks < alignment) {
    throw std::invalid_argument("splitIntoChunks: " + str(totalBytes) + " bytes cannot make " +
                                str(chunks) + " chunks of at least " + str(alignment) + " bytes");
  }
  const std::uint64_t chunkBytes = totalBytes / chunks / alignment * alignment;
  std::vector<ByteRange> ranges(chunks);
  for (std::size_t i = 0; i < chunks; ++i) {
    ranges[i].offset = i * chunkBytes;
    ranges[i].bytes = i + 1 < chunks ? chunkBytes : totalBytes - ranges[i].offset;
  }
  return ranges;
}

std::vector<ByteRange> stridedRanges(std::size_t count, std::uint64_t rangeBytes,
                                     std::uint64_t strideBytes) {
  if (rangeBytes == 0)
    throw std::invalid_argument("stridedRanges: a range must have at least one byte");
  if (rangeBytes > strideBytes) {
    throw std::invalid_argument("stridedRanges: ranges of " + str(rangeBytes) +
                                " bytes overlap with a stride of " + str(strideBytes));
  }
  std::vector<ByteRange> ranges(count);
  for (std::size_t i = 0; i < count; ++i)
    ranges[i] = {i * strideBytes, rangeBytes};
  return ranges;
}

}  // namespace memsamples
