// Cutting buffers into aligned chunks and strided ranges.
#include <gtest/gtest.h>

#include <string>

#include "managed_logic.hpp"

namespace ms = memsamples;

namespace {

constexpr std::uint64_t k64K = 64ull << 10;

std::string errorOf(std::uint64_t total, std::size_t chunks, std::uint64_t alignment) {
  try {
    ms::splitIntoChunks(total, chunks, alignment);
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST(SplitIntoChunks, AlignedBoundariesAndTheRemainderAtTheEnd) {
  const std::uint64_t total = (64ull << 20) + 12;  // not a multiple of anything nice
  const auto chunks = ms::splitIntoChunks(total, 10, k64K);
  ASSERT_EQ(chunks.size(), 10u);
  std::uint64_t next = 0;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    EXPECT_EQ(chunks[i].offset, next) << i;
    EXPECT_EQ(chunks[i].offset % k64K, 0u) << i;
    EXPECT_GT(chunks[i].bytes, 0u) << i;
    next += chunks[i].bytes;
  }
  EXPECT_EQ(next, total);
  EXPECT_EQ(chunks[0].bytes, 6684672u);  // 64 MiB / 10 = 6710886, down to 102 x 64 KiB
  EXPECT_EQ(chunks[9].bytes, total - 9 * 6684672u);
}

TEST(SplitIntoChunks, SmallestSizeThatWorks) {
  const auto chunks = ms::splitIntoChunks(10 * k64K, 10, k64K);
  for (const ms::ByteRange& chunk : chunks)
    EXPECT_EQ(chunk.bytes, k64K);
  const auto halves = ms::splitIntoChunks(1ull << 20, 2, k64K);
  EXPECT_EQ(halves[1].offset, 512u << 10);
}

TEST(SplitIntoChunks, RefusesImpossibleRequests) {
  EXPECT_EQ(errorOf(10 * k64K - 1, 10, k64K),
            "splitIntoChunks: 655359 bytes cannot make 10 chunks of at least 65536 bytes");
  EXPECT_EQ(errorOf(100, 0, 1), "splitIntoChunks: the number of chunks must be at least 1");
  EXPECT_EQ(errorOf(100, 2, 0), "splitIntoChunks: the alignment must be at least 1 byte");
}

TEST(StridedRanges, EveryOtherRange) {
  const auto ranges = ms::stridedRanges(4, k64K, 2 * k64K);
  ASSERT_EQ(ranges.size(), 4u);
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    EXPECT_EQ(ranges[i].offset, i * 2 * k64K);
    EXPECT_EQ(ranges[i].bytes, k64K);
  }
  EXPECT_TRUE(ms::stridedRanges(0, k64K, k64K).empty());
}

TEST(StridedRanges, RefusesEmptyOrOverlappingRanges) {
  EXPECT_THROW(ms::stridedRanges(4, 0, k64K), std::invalid_argument);
  try {
    ms::stridedRanges(4, 2 * k64K, k64K);
    FAIL() << "overlapping ranges accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_EQ(std::string(error.what()),
              "stridedRanges: ranges of 131072 bytes overlap with a stride of 65536");
  }
  EXPECT_THROW(ms::stridedRanges(4, 0, k64K), std::invalid_argument);
}
