// planStripes(), the choice between the minimum and the recommended granularity, and
// combinedGranularity(): rounding and stripe layout; describeAccess().
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "run_plan.hpp"
#include "striped_vmm.hpp"
#include "test_support.hpp"

namespace vmm = memsamples::vmm;
using memsamples::test::messageOf;

namespace {

constexpr std::uint64_t KiB = 1ull << 10;
constexpr std::uint64_t MiB = 1ull << 20;
constexpr std::uint64_t GiB = 1ull << 30;
constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

}  // namespace

TEST(PlanStripes, OneStripeOnOneDeviceRoundsToTheGranularity) {
  const vmm::StripeLayout layout = vmm::planStripes(4100, 2 * MiB, 1, {0});
  EXPECT_EQ(layout.requestedBytes, 4100u);
  EXPECT_EQ(layout.granularity, 2 * MiB);
  EXPECT_EQ(layout.roundedBytes, 2 * MiB);
  EXPECT_EQ(layout.stripeBytes, 2 * MiB);
  ASSERT_EQ(layout.stripes.size(), 1u);
  EXPECT_EQ(layout.stripes[0].device, 0);
  EXPECT_EQ(layout.stripes[0].offset, 0u);
  EXPECT_EQ(layout.stripes[0].bytes, 2 * MiB);
}

TEST(PlanStripes, ExactMultiplesAreNotRounded) {
  const vmm::StripeLayout layout = vmm::planStripes(GiB, 2 * MiB, 8, {0});
  EXPECT_EQ(layout.roundedBytes, GiB);
  EXPECT_EQ(layout.stripeBytes, 128 * MiB);
  ASSERT_EQ(layout.stripes.size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(layout.stripes[i].offset, i * 128 * MiB);
    EXPECT_EQ(layout.stripes[i].device, 0);
  }
}

TEST(PlanStripes, RoundsToStripesTimesGranularitySoEveryStripeIsEqual) {
  // 64 MiB + 4 bytes over 3 stripes of 2 MiB granularity: unit 6 MiB, 11 units = 66 MiB.
  const vmm::StripeLayout layout = vmm::planStripes(64 * MiB + 4, 2 * MiB, 3, {0});
  EXPECT_EQ(layout.roundedBytes, 66 * MiB);
  EXPECT_EQ(layout.stripeBytes, 22 * MiB);
  EXPECT_EQ(layout.stripes[2].offset, 44 * MiB);
}

TEST(PlanStripes, AssignsDevicesRoundRobinInTheGivenOrder) {
  const vmm::StripeLayout layout = vmm::planStripes(10 * MiB, 2 * MiB, 5, {2, 0, 1});
  ASSERT_EQ(layout.stripes.size(), 5u);
  const int expected[] = {2, 0, 1, 2, 0};
  for (std::size_t i = 0; i < 5; ++i)
    EXPECT_EQ(layout.stripes[i].device, expected[i]) << i;
}

TEST(PlanStripes, FewerStripesThanDevicesUsesTheFirstDevices) {
  const vmm::StripeLayout layout = vmm::planStripes(4 * MiB, 2 * MiB, 1, {3, 1});
  ASSERT_EQ(layout.stripes.size(), 1u);
  EXPECT_EQ(layout.stripes[0].device, 3);
}

TEST(PlanStripes, HoldsItsInvariantsForManyCombinations) {
  const std::uint64_t sizes[] = {1,        4,   4100,    2 * MiB - 1, 2 * MiB, 2 * MiB + 1,
                                 64 * MiB, GiB, GiB + 4, 3 * GiB + 7, 40 * GiB};
  const std::uint64_t granularities[] = {1, 3, 4 * KiB, 64 * KiB, 2 * MiB, 512 * MiB};
  const int stripeCounts[] = {1, 2, 3, 8, 64, 1000};
  const std::vector<std::vector<int>> deviceLists = {
      {0}, {0, 1}, {2, 0, 1}, {0, 1, 2, 3, 4, 5, 6, 7}};
  for (const std::uint64_t size : sizes) {
    for (const std::uint64_t granularity : granularities) {
      for (const int stripes : stripeCounts) {
        for (const auto& devices : deviceLists) {
          const vmm::StripeLayout layout = vmm::planStripes(size, granularity, stripes, devices);
          const std::uint64_t unit = granularity * static_cast<std::uint64_t>(stripes);
          SCOPED_TRACE(std::to_string(size) + " B, granularity " + std::to_string(granularity) +
                       ", " + std::to_string(stripes) + " stripes, " +
                       std::to_string(devices.size()) + " devices");
          ASSERT_GE(layout.roundedBytes, size);
          ASSERT_LT(layout.roundedBytes - size, unit);  // the smallest multiple
          ASSERT_EQ(layout.roundedBytes % unit, 0u);
          ASSERT_EQ(layout.stripeBytes % granularity, 0u);
          ASSERT_EQ(layout.stripeBytes * static_cast<std::uint64_t>(stripes), layout.roundedBytes);
          ASSERT_EQ(layout.stripes.size(), static_cast<std::size_t>(stripes));
          for (std::size_t i = 0; i < layout.stripes.size(); ++i) {
            ASSERT_EQ(layout.stripes[i].offset, i * layout.stripeBytes);
            ASSERT_EQ(layout.stripes[i].bytes, layout.stripeBytes);
            ASSERT_EQ(layout.stripes[i].device, devices[i % devices.size()]);
          }
        }
      }
    }
  }
}

TEST(PlanStripes, RejectsZeroSizeWithAClearMessage) {
  EXPECT_EQ(messageOf<std::invalid_argument>([] { vmm::planStripes(0, 2 * MiB, 1, {0}); }),
            "planStripes: a size of 0 bytes was requested; a range needs at least 1 byte");
}

TEST(PlanStripes, RejectsZeroGranularityBadStripeCountsAndNoDevices) {
  EXPECT_EQ(messageOf<std::invalid_argument>([] { vmm::planStripes(MiB, 0, 1, {0}); }),
            "planStripes: the granularity is 0");
  EXPECT_EQ(messageOf<std::invalid_argument>([] { vmm::planStripes(MiB, 2 * MiB, 0, {0}); }),
            "planStripes: 0 stripes requested; the count must be in [1, 65536]");
  EXPECT_EQ(messageOf<std::invalid_argument>([] { vmm::planStripes(MiB, 2 * MiB, -3, {0}); }),
            "planStripes: -3 stripes requested; the count must be in [1, 65536]");
  EXPECT_EQ(messageOf<std::invalid_argument>([] { vmm::planStripes(MiB, 2 * MiB, 65537, {0}); }),
            "planStripes: 65537 stripes requested; the count must be in [1, 65536]");
  EXPECT_EQ(messageOf<std::invalid_argument>([] { vmm::planStripes(MiB, 2 * MiB, 1, {}); }),
            "planStripes: no backing device to place the stripes on");
}

TEST(PlanStripes, HugeSizesAreAnErrorNotAWrap) {
  // The largest size that still rounds: 2^64 - 2 MiB is a multiple of 2 MiB.
  const std::uint64_t largest = kMax - (2 * MiB - 1);
  EXPECT_EQ(vmm::planStripes(largest, 2 * MiB, 1, {0}).roundedBytes, largest);
  EXPECT_EQ(messageOf<std::overflow_error>([&] { vmm::planStripes(largest + 1, 2 * MiB, 1, {0}); }),
            "planStripes: " + std::to_string(largest + 1) +
                " bytes rounded up to a multiple of 2097152 bytes (1 stripe x 2.00 MiB) does "
                "not fit in 64 bits");
  EXPECT_THROW(vmm::planStripes(kMax, 2 * MiB, 8, {0, 1}), std::overflow_error);
  EXPECT_EQ(vmm::planStripes(kMax, 1, 1, {0}).roundedBytes, kMax);  // nothing to round
}

TEST(PlanStripes, StripesTimesGranularityOverflowIsAnError) {
  EXPECT_EQ(messageOf<std::overflow_error>([] { vmm::planStripes(1, 1ull << 60, 16, {0}); }),
            "planStripes: 16 stripes x 1152921504606846976 bytes of granularity does not fit "
            "in 64 bits");
  EXPECT_EQ(vmm::planStripes(1, 1ull << 59, 16, {0}).roundedBytes, 1ull << 63);
}

TEST(CombinedGranularity, TakesTheLargestAndRejectsZeroOrNothing) {
  EXPECT_EQ(vmm::combinedGranularity({2 * MiB}), 2 * MiB);
  EXPECT_EQ(vmm::combinedGranularity({2 * MiB, 64 * KiB, 512 * MiB, 2 * MiB}), 512 * MiB);
  EXPECT_EQ(messageOf<std::invalid_argument>([] { vmm::combinedGranularity({}); }),
            "combinedGranularity: no device");
  EXPECT_EQ(messageOf<std::invalid_argument>([] {
              vmm::combinedGranularity({2 * MiB, 0});
            }),
            "combinedGranularity: a device reported a granularity of 0");
}

TEST(RecommendedGranularityFits, WhenEveryStripeGetsAtLeastOneRecommendedUnit) {
  const vmm::Granularities granularities{2 * MiB, 32 * MiB};
  EXPECT_TRUE(vmm::recommendedGranularityFits(granularities, GiB, 8));            // 128 MiB each
  EXPECT_TRUE(vmm::recommendedGranularityFits(granularities, 256 * MiB, 8));      // exactly 32 MiB
  EXPECT_TRUE(vmm::recommendedGranularityFits(granularities, 256 * MiB - 4, 8));  // rounded up
  EXPECT_FALSE(vmm::recommendedGranularityFits(granularities, 248 * MiB, 8));     // 31 MiB each
  EXPECT_FALSE(vmm::recommendedGranularityFits(granularities, 4100, 1));
  EXPECT_TRUE(vmm::recommendedGranularityFits({2 * MiB, 2 * MiB}, 2 * MiB, 1));  // the H200
}

TEST(RecommendedGranularityFits, NeverWhenTheRecommendedValueIsNoMultipleOfTheMinimum) {
  EXPECT_FALSE(vmm::recommendedGranularityFits({2 * MiB, 3 * MiB}, GiB, 1));
  EXPECT_FALSE(vmm::recommendedGranularityFits({2 * MiB, MiB}, GiB, 1));
  EXPECT_FALSE(vmm::recommendedGranularityFits({2 * MiB, 0}, GiB, 1));
}

TEST(RecommendedGranularityFits, RejectsAZeroMinimumAndNoStripes) {
  EXPECT_EQ(messageOf<std::invalid_argument>([] {
              vmm::recommendedGranularityFits({0, 2 * MiB}, GiB, 1);
            }),
            "recommendedGranularityFits: the minimum granularity is 0");
  EXPECT_EQ(messageOf<std::invalid_argument>([] {
              vmm::recommendedGranularityFits({2 * MiB, 2 * MiB}, GiB, 0);
            }),
            "recommendedGranularityFits: 0 stripes; at least 1 is needed");
}

TEST(PlanStripes, AtTheRecommendedGranularityWhereItFitsElseTheMinimum) {
  const vmm::Granularities granularities{2 * MiB, 32 * MiB};
  // 100 MiB in 3 stripes: 34 MiB each before rounding, so 32 MiB units: 3 x 64 MiB.
  const vmm::StripeLayout large = vmm::planStripes(100 * MiB, granularities, 3, {0, 1});
  EXPECT_EQ(large.granularity, 32 * MiB);
  EXPECT_EQ(large.roundedBytes, 192 * MiB);
  EXPECT_EQ(large.stripeBytes, 64 * MiB);
  EXPECT_EQ(large.stripes[1].offset, 64 * MiB);
  EXPECT_EQ(large.stripes[1].device, 1);
  // 90 MiB in 3 stripes: 30 MiB each, so the minimum, and no padding at all.
  const vmm::StripeLayout small = vmm::planStripes(90 * MiB, granularities, 3, {0, 1});
  EXPECT_EQ(small.granularity, 2 * MiB);
  EXPECT_EQ(small.roundedBytes, 90 * MiB);
}

TEST(DescribeAccess, NamesTheFlagsCudaHDefinesAndShowsAnyOtherValue) {
  EXPECT_EQ(vmm::describeAccess(CU_MEM_ACCESS_FLAGS_PROT_READWRITE), "rw");
  EXPECT_EQ(vmm::describeAccess(CU_MEM_ACCESS_FLAGS_PROT_READ), "r");
  EXPECT_EQ(vmm::describeAccess(CU_MEM_ACCESS_FLAGS_PROT_NONE), "none");
  EXPECT_EQ(vmm::describeAccess(7), "flags 7");
}
