// Sizing of the sample's host vectors.
#include <gtest/gtest.h>

#include "host_layout.hpp"
#include "memsamples.hpp"

namespace ms = memsamples;
namespace mn = memsamples::numa;

namespace {
constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kGiB = 1ull << 30;
}  // namespace

TEST(HostLayout, VectorStrideIsPageAligned) {
  EXPECT_EQ(mn::vectorStride(4), 4096u);
  EXPECT_EQ(mn::vectorStride(4096), 4096u);
  EXPECT_EQ(mn::vectorStride(4100), 8192u);
  EXPECT_EQ(mn::vectorStride(kGiB), kGiB);
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
