// Rounding to the multicast granularity and the buffer layout of 08_multicastReduce.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <stdexcept>

#include "multicast_plan.hpp"

namespace mc = memsamples::multicast;

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

TEST(MulticastRoundUp, KeepsMultiplesAndRoundsTheRestUp) {
  EXPECT_EQ(mc::roundUp(0, 2 * kMiB), 0u);
  EXPECT_EQ(mc::roundUp(1, 2 * kMiB), 2 * kMiB);
  EXPECT_EQ(mc::roundUp(2 * kMiB, 2 * kMiB), 2 * kMiB);
  EXPECT_EQ(mc::roundUp(2 * kMiB + 1, 2 * kMiB), 4 * kMiB);
  EXPECT_EQ(mc::roundUp(1000, 3), 1002u);  // not only powers of two
}

TEST(MulticastRoundUp, RefusesZeroGranularityAndOverflow) {
  EXPECT_THROW(mc::roundUp(10, 0), std::invalid_argument);
  EXPECT_THROW(mc::roundUp(std::numeric_limits<std::size_t>::max() - 5, 2 * kMiB),
               std::overflow_error);
  const std::size_t top = std::numeric_limits<std::size_t>::max() / (2 * kMiB) * (2 * kMiB);
  EXPECT_EQ(mc::roundUp(top, 2 * kMiB), top);
}

TEST(MulticastLayout, DefaultSizeOnH200) {
  // The two-GPU H200 machine: multicast granularity 2 MiB (recommended), VMM 2 MiB.
  const mc::BufferLayout layout = mc::planLayout(256 * kMiB, 2 * kMiB, 2 * kMiB, 2 * kMiB);
  EXPECT_EQ(layout.dataBytes, 256 * kMiB);
  EXPECT_EQ(layout.counterOffset, 256 * kMiB);
  EXPECT_EQ(layout.counterBytes, mc::kMaxBlocks * 4u);
  EXPECT_EQ(layout.granularity, 2 * kMiB);
  EXPECT_EQ(layout.allocationBytes, 258 * kMiB);  // the counters need one more granule
}

TEST(MulticastLayout, CountersAreAlignedAfterTheData) {
  const mc::BufferLayout layout = mc::planLayout(1048592, 2 * kMiB, 2 * kMiB, 2 * kMiB);
  EXPECT_EQ(layout.counterOffset % 128, 0u);
  EXPECT_GE(layout.counterOffset, layout.dataBytes);
  EXPECT_LT(layout.counterOffset - layout.dataBytes, 128u);
  EXPECT_LE(layout.counterOffset + layout.counterBytes, layout.allocationBytes);
  EXPECT_EQ(layout.allocationBytes, 2 * kMiB);
}

TEST(MulticastLayout, SmallBufferUsesTheMinimumGranularity) {
  // Recommended 512 MiB would pad a 16 MiB buffer 32-fold: the minimum is used instead.
  const mc::BufferLayout layout = mc::planLayout(16 * kMiB, 2 * kMiB, 512 * kMiB, 2 * kMiB);
  EXPECT_EQ(layout.granularity, 2 * kMiB);
  EXPECT_EQ(layout.allocationBytes, 18 * kMiB);
  const mc::BufferLayout big = mc::planLayout(1024 * kMiB, 2 * kMiB, 512 * kMiB, 2 * kMiB);
  EXPECT_EQ(big.granularity, 512 * kMiB);
  EXPECT_EQ(big.allocationBytes, 1536 * kMiB);
}

TEST(MulticastLayout, SizeIsAlsoAMultipleOfTheAllocationGranularity) {
  // A multicast minimum smaller than cuMemCreate's: the size must suit both.
  const mc::BufferLayout layout = mc::planLayout(3 * kMiB, 512 * 1024, 0, 2 * kMiB);
  EXPECT_EQ(layout.granularity, 2 * kMiB);
  EXPECT_EQ(layout.allocationBytes % (2 * kMiB), 0u);
  EXPECT_EQ(layout.allocationBytes, 4 * kMiB);
  EXPECT_THROW(mc::planLayout(kMiB, 0, 0, 2 * kMiB), std::invalid_argument);
  EXPECT_THROW(mc::planLayout(kMiB, 2 * kMiB, 0, 0), std::invalid_argument);
}

TEST(MulticastLayout, BusFactor) {
  EXPECT_DOUBLE_EQ(mc::allReduceBusFactor(1), 0.0);
  EXPECT_DOUBLE_EQ(mc::allReduceBusFactor(2), 1.0);
  EXPECT_DOUBLE_EQ(mc::allReduceBusFactor(4), 1.5);
  EXPECT_DOUBLE_EQ(mc::allReduceBusFactor(8), 1.75);
  EXPECT_THROW(mc::allReduceBusFactor(0), std::invalid_argument);
}

}  // namespace
