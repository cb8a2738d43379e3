// How 05_p2pMemMap counts a copy figure, the way nvbandwidth v0.8 does: copies per sample x bytes
// / sample time, and "both directions at once" as the sum of each direction's own figure next
// to the stricter "both done".
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "p2p_logic.hpp"
#include "test_support.hpp"

namespace p2p = memsamples::p2p;
using memsamples::test::messageOf;

namespace {
constexpr std::uint64_t kMiB = 1ull << 20;
}  // namespace

TEST(CopiesPerSample, IsNvbandwidthsDefaultLoopCount) {
  EXPECT_EQ(p2p::kCopiesPerSample, 16);
}

TEST(SampleGBps, CountsEveryCopyOfTheSampleAsBytesCopied) {
  // 16 copies of 512 MiB in 21.8 ms: 8 GiB / 21.8 ms.
  EXPECT_NEAR(p2p::sampleGBps(512 * kMiB, 16, 21.8), 16.0 * 512 * kMiB / 21.8e-3 / 1e9, 1e-9);
  EXPECT_NEAR(p2p::sampleGBps(512 * kMiB, 16, 21.8), 394.04, 0.01);
  // One copy of 1 GB in 1 ms is 1000 GB/s (1 GB = 1e9 B).
  EXPECT_DOUBLE_EQ(p2p::sampleGBps(1'000'000'000, 1, 1.0), 1000.0);
}

TEST(SampleGBps, NoTimeIsNoFigure) {
  EXPECT_TRUE(std::isnan(p2p::sampleGBps(kMiB, 16, 0.0)));
  EXPECT_TRUE(std::isnan(p2p::sampleGBps(kMiB, 16, -1.0)));
}

TEST(SampleGBps, RefusesASampleWithoutCopies) {
  EXPECT_EQ(messageOf<std::invalid_argument>([] { (void)p2p::sampleGBps(kMiB, 0, 1.0); }),
            "sampleGBps: a sample needs at least 1 copy, not 0");
}

TEST(CountBothWays, SumsWhatEachDirectionMovedInItsOwnTime) {
  // 16 x 1 GB per direction: 40 ms and 50 ms each, 52 ms until both had finished.
  const p2p::BothWaysFigures figures = p2p::countBothWays(1'000'000'000, 16, 40.0, 50.0, 52.0);
  EXPECT_DOUBLE_EQ(figures.firstGBps, 400.0);
  EXPECT_DOUBLE_EQ(figures.secondGBps, 320.0);
  EXPECT_DOUBLE_EQ(figures.sumGBps, 720.0);
  // Both directions' bytes over the whole time: 32 GB / 52 ms.
  EXPECT_DOUBLE_EQ(figures.bothDoneGBps, 32.0 / 0.052);
  EXPECT_LT(figures.bothDoneGBps, figures.sumGBps);
}

TEST(CountBothWays, BothDoneEqualsTheSumWhenBothDirectionsEndTogether) {
  const p2p::BothWaysFigures figures = p2p::countBothWays(512 * kMiB, 16, 22.0, 22.0, 22.0);
  EXPECT_DOUBLE_EQ(figures.sumGBps, figures.bothDoneGBps);
  EXPECT_DOUBLE_EQ(figures.firstGBps, figures.secondGBps);
}

TEST(CountBothWays, RefusesASampleWithoutCopies) {
  EXPECT_THROW((void)p2p::countBothWays(kMiB, 0, 1.0, 1.0, 1.0), std::invalid_argument);
}

TEST(DescribeCopySamples, SaysWhatOneSampleIsAndHowManyWereTaken) {
  EXPECT_EQ(p2p::describeCopySamples(512 * kMiB, 16, 20),
            "one sample = 16 copies of 512 MiB queued back to back between two events, median of "
            "20 samples");
  EXPECT_EQ(p2p::describeCopySamples(16 * kMiB, 1, 1),
            "one sample = 1 copy of 16.0 MiB queued back to back between two events, median of 1 "
            "sample");
}
