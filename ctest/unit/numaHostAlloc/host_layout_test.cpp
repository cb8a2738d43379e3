// Sizing of the sample's host vectors. (How its host ranges are laid out in the page sizes,
// memsamples::vectorStride and hostRangeLayout, and reading the page sizes are Common's, tested
// in ctest/unit/common/numa_node_info_test.cpp.)
#include <gtest/gtest.h>

#include "memsamples.hpp"

namespace ms = memsamples;

namespace {
constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kGiB = 1ull << 30;
}  // namespace

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
