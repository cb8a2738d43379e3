// Sizing of the sample's host vectors, and how its host ranges are laid out in the page sizes
// given (injected base pages stand in for 64 KiB-page kernels; reading the page sizes is
// Common's, tested in ctest/unit/common/numa_node_info_test.cpp).
#include <gtest/gtest.h>

#include "memsamples.hpp"
#include "numa_binding.hpp"

namespace ms = memsamples;
namespace mn = memsamples::numa;

namespace {
constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kGiB = 1ull << 30;
constexpr std::size_t kPage4K = 4096;
constexpr std::size_t kPage64K = 65536;
}  // namespace

TEST(HostLayout, VectorStrideIsPageAligned) {
  EXPECT_EQ(mn::vectorStride(4, kPage4K), 4096u);
  EXPECT_EQ(mn::vectorStride(4096, kPage4K), 4096u);
  EXPECT_EQ(mn::vectorStride(4100, kPage4K), 8192u);
  EXPECT_EQ(mn::vectorStride(kGiB, kPage4K), kGiB);
  // With 64 KiB pages each vector still starts on a page of its own.
  EXPECT_EQ(mn::vectorStride(4, kPage64K), 65536u);
  EXPECT_EQ(mn::vectorStride(4100, kPage64K), 65536u);
  EXPECT_EQ(mn::vectorStride(65537, kPage64K), 131072u);
}

TEST(RangeLayout, HugePagesFromOneHugePageUp) {
  const memsamples::PageSizes x86{kPage4K, 2 * kMiB};
  // The H200 run: 3 x 1 GiB, already whole huge pages; one huge page of extra addresses.
  const mn::RangeLayout big = mn::hostRangeLayout(3 * kGiB, x86);
  EXPECT_EQ(big.alignment, 2 * kMiB);
  EXPECT_EQ(big.mappedBytes, 3 * kGiB);
  EXPECT_EQ(big.reservedBytes, 3 * kGiB + 2 * kMiB);
  const mn::RangeLayout odd = mn::hostRangeLayout(3 * kMiB, x86);
  EXPECT_EQ(odd.mappedBytes, 4 * kMiB);
  // Below one huge page: base pages, no extra addresses.
  const mn::RangeLayout small = mn::hostRangeLayout(kMiB + 1, x86);
  EXPECT_EQ(small.alignment, kPage4K);
  EXPECT_EQ(small.mappedBytes, kMiB + kPage4K);
  EXPECT_EQ(small.reservedBytes, small.mappedBytes);
}

TEST(RangeLayout, SixtyFourKiBPagesDoNotPadToHalfAGibibyte) {
  const memsamples::PageSizes arm64{kPage64K, 512 * kMiB};
  // --size 16M: 48 MiB stays 48 MiB (a 2 MiB assumption would be wrong, a 512 MiB pad wasteful).
  const mn::RangeLayout small = mn::hostRangeLayout(48 * kMiB + 4, arm64);
  EXPECT_EQ(small.alignment, kPage64K);
  EXPECT_EQ(small.mappedBytes, 48 * kMiB + kPage64K);
  EXPECT_EQ(small.reservedBytes, small.mappedBytes);
  const mn::RangeLayout big = mn::hostRangeLayout(1536 * kMiB, arm64);
  EXPECT_EQ(big.alignment, 512 * kMiB);
  EXPECT_EQ(big.mappedBytes, 1536 * kMiB);
  EXPECT_EQ(big.reservedBytes, 2048 * kMiB);
  // No transparent huge pages: base pages whatever the size.
  EXPECT_EQ(mn::hostRangeLayout(3 * kGiB, memsamples::PageSizes{kPage64K, 0}).alignment, kPage64K);
  EXPECT_THROW(mn::hostRangeLayout(0, arm64), std::invalid_argument);
  EXPECT_THROW(mn::hostRangeLayout(SIZE_MAX - kPage64K, arm64), std::invalid_argument);
}

TEST(HostLayout, VectorsAreSizedByTheCommonRulesForTheHost) {
  // The sample sizes its host vectors with memsamples::chooseBufferBytes() and what
  // hostMemoryAvailable() found; the rules are Common's (tested there), the wording the host's.
  const std::uint64_t available = 3 * kGiB;
  EXPECT_EQ(ms::chooseBufferBytes(64 * kMiB, kGiB, available, 3, sizeof(float), "the host"),
            64 * kMiB);
  try {
    ms::chooseBufferBytes(2 * kGiB, kGiB, available, 3, sizeof(float), "the host");
    ADD_FAILURE() << "accepted 3 x 2 GiB in 3 GiB";
  } catch (const ms::UsageError& error) {
    EXPECT_STREQ(error.what(),
                 "--size 2.00 GiB needs 3 buffers but the host has only 3.00 GiB free; choose at "
                 "most 1.00 GiB");
  }
  // 80 % of 3 GiB over 3 vectors, rounded down to 2 MiB.
  EXPECT_EQ(ms::chooseBufferBytes(std::nullopt, kGiB, available, 3, sizeof(float), "the host"),
            818 * kMiB);
}
