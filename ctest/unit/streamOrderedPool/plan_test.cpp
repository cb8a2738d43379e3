// 10_streamOrderedPool's CUDA-free logic: options, size mix, bookkeeping, quantiles, tables.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "memsamples.hpp"
#include "pool_plan.hpp"

namespace pp = pool_plan;
namespace ms = memsamples;

TEST(StreamOrderedPoolOptions, DefaultsGiveTenThousandAllocationsOfOneKiBTo64MiB) {
  const pp::RunPlan plan = pp::checkOptions({}, {}, "max", 20);
  EXPECT_EQ(plan.minBytes, 1024u);
  EXPECT_EQ(plan.maxBytes, 64u << 20);
  EXPECT_EQ(plan.keepThreshold, UINT64_MAX);
  EXPECT_EQ(plan.allocations, 10000);
  // The same-size loop: 2,000 allocations of 16 MiB.
  EXPECT_EQ(plan.sameBytes, 16u << 20);
  EXPECT_EQ(plan.sameAllocations, 2000);
}

TEST(StreamOrderedPoolOptions, SameSizeIsItsOwnOption) {
  const pp::RunPlan plan = pp::checkOptions({}, std::uint64_t{1} << 20, "max", 2,
                                            std::uint64_t{4} << 10);
  EXPECT_EQ(plan.sameBytes, 4u << 10);
  EXPECT_EQ(plan.sameAllocations, 200);
  EXPECT_EQ(plan.maxBytes, 1u << 20);
}

TEST(StreamOrderedPoolMix, SameSizesRepeatOneSize) {
  const auto sizes = pp::sameSizes(20, 16u << 20);
  ASSERT_EQ(sizes.size(), 20u);
  EXPECT_TRUE(std::all_of(sizes.begin(), sizes.end(),
                          [](std::uint64_t b) { return b == (16u << 20); }));
  // Held 8 live per step, the same sizes reach one step of them: the bookkeeping counts what a
  // step holds, whatever the sizes.
  EXPECT_EQ(pp::loopHighWater({sizes, 8, 8}), 8u * (16u << 20));
  EXPECT_TRUE(pp::sameSizes(0, 1).empty());
}

// Issue 34: the same-size loop is the case a training or inference step makes: every layer takes
// a workspace of the same size and gives it back, in stream order, and only the step's end
// synchronizes. One block is live at a time, 8 pairs make a step.
TEST(StreamOrderedPoolLoops, TheSameSizeLoopHoldsOneBlockEightPairsPerStep) {
  const pp::RunPlan plan = pp::checkOptions({}, {}, "max", 20);
  const pp::Loop loop = pp::sameSizeLoop(plan);
  EXPECT_EQ(pp::kSameSizeLivePerStep, 1);
  EXPECT_EQ(pp::kSameSizePairsPerStep, 8);
  EXPECT_EQ(loop.livePerStep, 1);
  EXPECT_EQ(loop.allocationsPerStep, 8);
  ASSERT_EQ(loop.sizes.size(), 2000u);
  EXPECT_TRUE(std::all_of(loop.sizes.begin(), loop.sizes.end(),
                          [](std::uint64_t b) { return b == (16u << 20); }));

  // 250 steps of 8 allocations, each step 8 groups of one block: allocate, free, 8 times, then
  // the synchronization.
  const std::vector<pp::StepRange> steps = pp::steps(loop);
  ASSERT_EQ(steps.size(), 250u);
  for (std::size_t s = 0; s < steps.size(); ++s) {
    EXPECT_EQ(steps[s].first, 8 * s);
    EXPECT_EQ(steps[s].count, 8u);
    const std::vector<pp::StepRange> groups = pp::groups(loop, steps[s]);
    ASSERT_EQ(groups.size(), 8u);
    for (std::size_t g = 0; g < groups.size(); ++g) {
      EXPECT_EQ(groups[g].first, 8 * s + g);
      EXPECT_EQ(groups[g].count, 1u);
    }
  }

  // Live at most: one block, which is what the pool's used high-water mark is checked against.
  EXPECT_EQ(pp::loopHighWater(loop), 16u << 20);
}

// The mix keeps its shape: 8 live per step, the same sizes as sizeMix() gives.
TEST(StreamOrderedPoolLoops, TheMixHoldsEightBlocksPerStep) {
  const pp::RunPlan plan = pp::checkOptions({}, {}, "max", 20);
  const pp::Loop loop = pp::mixLoop(plan, 2024);
  EXPECT_EQ(pp::kMixLivePerStep, 8);
  EXPECT_EQ(loop.livePerStep, 8);
  EXPECT_EQ(loop.allocationsPerStep, 8);
  EXPECT_EQ(loop.sizes, pp::sizeMix(10000, 1024, 64u << 20, 2024));

  // One group per step: all 8 live together, then all freed.
  const std::vector<pp::StepRange> steps = pp::steps(loop);
  ASSERT_EQ(steps.size(), 1250u);
  for (std::size_t s = 0; s < steps.size(); ++s) {
    EXPECT_EQ(steps[s].first, 8 * s);
    EXPECT_EQ(steps[s].count, 8u);
    const std::vector<pp::StepRange> groups = pp::groups(loop, steps[s]);
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(groups[0].first, steps[s].first);
    EXPECT_EQ(groups[0].count, 8u);
  }
}

TEST(StreamOrderedPoolLoops, StepsCoverEverySizeOnceAndALastShortStep) {
  const pp::Loop loop{std::vector<std::uint64_t>(20, 1), 8, 8};
  const std::vector<pp::StepRange> steps = pp::steps(loop);
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[2].first, 16u);
  EXPECT_EQ(steps[2].count, 4u);
  EXPECT_TRUE(pp::steps({{}, 8, 8}).empty());
  EXPECT_TRUE(pp::steps({{1, 2}, 1, 0}).empty());
  EXPECT_EQ(pp::loopHighWater({{1, 2}, 1, 0}), 0u);
}

// Groups cut a step into blocks live together, the last one short; the high-water mark is the
// largest group's sum, not the step's.
TEST(StreamOrderedPoolLoops, GroupsCutAStepAndSetTheHighWaterMark) {
  const pp::Loop loop{{1, 2, 4, 8, 16, 32, 64}, 3, 7};
  const std::vector<pp::StepRange> steps = pp::steps(loop);
  ASSERT_EQ(steps.size(), 1u);
  const std::vector<pp::StepRange> groups = pp::groups(loop, steps[0]);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[1].first, 3u);
  EXPECT_EQ(groups[1].count, 3u);
  EXPECT_EQ(groups[2].first, 6u);
  EXPECT_EQ(groups[2].count, 1u);
  EXPECT_EQ(pp::loopHighWater(loop), 64u);  // {64} beats {8, 16, 32} = 56 and {1, 2, 4}
  EXPECT_EQ(pp::loopHighWater({{1, 2, 4, 8, 16, 32, 64}, 7, 7}), 127u);
  EXPECT_EQ(pp::groups({{1, 2}, 0, 2}, {0, 2}).size(), 2u);  // below 1: one block at a time
}

TEST(StreamOrderedPoolOptions, ThresholdIsMaxOrAByteSize) {
  EXPECT_EQ(pp::parseThreshold("max"), UINT64_MAX);
  EXPECT_EQ(pp::parseThreshold("0"), 0u);
  EXPECT_EQ(pp::parseThreshold("32M"), 32u << 20);
  EXPECT_THROW(pp::parseThreshold("lots"), ms::UsageError);
  EXPECT_THROW(pp::parseThreshold(""), ms::UsageError);
  EXPECT_THROW(pp::parseThreshold("-1"), ms::UsageError);
}

TEST(StreamOrderedPoolOptions, SizesOutOfOrderAreOneLineNamingBoth) {
  try {
    pp::checkOptions(std::uint64_t{64} << 20, std::uint64_t{1} << 20, "max", 1);
    FAIL() << "no usage error";
  } catch (const ms::UsageError& error) {
    EXPECT_STREQ(error.what(),
                 "--min-size 64.0 MiB is larger than --max-size 1.00 MiB: the sizes are out of "
                 "order");
  }
}

TEST(StreamOrderedPoolOptions, AMinimumAboveTheDefaultMaximumRaisesIt) {
  const pp::RunPlan plan = pp::checkOptions(std::uint64_t{128} << 20, {}, "0", 1);
  EXPECT_EQ(plan.maxBytes, plan.minBytes);
  EXPECT_EQ(plan.keepThreshold, 0u);
  EXPECT_EQ(plan.allocations, 500);
}

TEST(StreamOrderedPoolOptions, ZeroIterationsAreRefused) {
  EXPECT_THROW(pp::checkOptions({}, {}, "max", 0), ms::UsageError);
}

TEST(StreamOrderedPoolSizing, LargestIsCutToAQuarterOfFreeMemoryPerStep) {
  EXPECT_EQ(pp::fitLargest(1024, 64u << 20, 1ull << 40, 8), 64u << 20);
  // 256 MiB free: a quarter is 64 MiB, for 8 temporaries 8 MiB each.
  EXPECT_EQ(pp::fitLargest(1024, 64u << 20, 256u << 20, 8), 8u << 20);
  EXPECT_EQ(pp::fitLargest(1024, 64u << 20, 0, 8), 1024u);
  // The same-size loop's one block may take the whole quarter.
  EXPECT_EQ(pp::fitLargest(1, 16u << 20, 256u << 20, 1), 16u << 20);
  EXPECT_EQ(pp::fitLargest(1, 128u << 20, 256u << 20, 1), 64u << 20);
  // A step of no blocks is sized as one.
  EXPECT_EQ(pp::fitLargest(1, 128u << 20, 256u << 20, 0), 64u << 20);
}

TEST(StreamOrderedPoolMix, SizesStayInRangeAlignedAndReproducible) {
  const auto sizes = pp::sizeMix(10000, 1024, 64u << 20, 7);
  ASSERT_EQ(sizes.size(), 10000u);
  EXPECT_EQ(sizes, pp::sizeMix(10000, 1024, 64u << 20, 7));
  EXPECT_NE(sizes, pp::sizeMix(10000, 1024, 64u << 20, 8));
  for (const std::uint64_t bytes : sizes) {
    EXPECT_GE(bytes, 1024u);
    EXPECT_LE(bytes, 64u << 20);
    EXPECT_EQ(bytes % 256, 0u);
  }
}

TEST(StreamOrderedPoolMix, SpreadIsLogUniform) {
  // 16 doublings from 1 KiB to 64 MiB: each quarter of them gets about a quarter of the sizes.
  const auto sizes = pp::sizeMix(10000, 1024, 64u << 20, 1);
  const auto below = [&](std::uint64_t limit) {
    return static_cast<double>(
        std::count_if(sizes.begin(), sizes.end(), [&](std::uint64_t b) { return b < limit; }));
  };
  EXPECT_NEAR(below(16u << 10), 2500, 250);
  EXPECT_NEAR(below(256u << 10), 5000, 250);
  EXPECT_NEAR(below(4u << 20), 7500, 250);
}

TEST(StreamOrderedPoolMix, TinyAndSingleSizeRanges) {
  for (const std::uint64_t bytes : pp::sizeMix(100, 1, 100, 3)) {
    EXPECT_GE(bytes, 1u);
    EXPECT_LE(bytes, 100u);
  }
  for (const std::uint64_t bytes : pp::sizeMix(10, 4096, 4096, 3))
    EXPECT_EQ(bytes, 4096u);
  EXPECT_TRUE(pp::sizeMix(0, 1, 2, 3).empty());
}

TEST(StreamOrderedPoolBookkeeping, HighWaterMarkFollowsLiveBytes) {
  pp::LiveBytes live;
  live.allocate(100);
  live.allocate(50);
  live.free(100);
  live.allocate(20);
  EXPECT_EQ(live.live(), 70u);
  EXPECT_EQ(live.high(), 150u);
  EXPECT_THROW(live.free(71), std::logic_error);
}

TEST(StreamOrderedPoolBookkeeping, LoopHighWaterIsTheLargestStep) {
  std::vector<std::uint64_t> sizes(20, 1);
  sizes[9] = 100;   // step 2 (allocations 8-15) holds 107
  sizes[17] = 10;   // step 3 (16-19) holds 13
  EXPECT_EQ(pp::loopHighWater({sizes, 8, 8}), 107u);
  EXPECT_EQ(pp::loopHighWater({{}, 8, 8}), 0u);
  // One live at a time, 8 allocations per step: the largest single size.
  EXPECT_EQ(pp::loopHighWater({sizes, 1, 8}), 100u);
}

TEST(StreamOrderedPoolStatistics, NearestRankQuantiles) {
  std::vector<double> values;
  for (int i = 100; i >= 1; --i)
    values.push_back(i);
  EXPECT_DOUBLE_EQ(pp::quantile(values, 0.5), 50);
  EXPECT_DOUBLE_EQ(pp::quantile(values, 0.99), 99);
  EXPECT_DOUBLE_EQ(pp::quantile(values, 1.0), 100);
  EXPECT_DOUBLE_EQ(pp::quantile({7}, 0.99), 7);
  EXPECT_DOUBLE_EQ(pp::quantile({}, 0.5), 0);
}

// At a rank that is not a whole number, nearest rank rounds up: the smallest value with at least
// that fraction at or below it. Rounding down would report a value with less than the fraction
// at or below it (issue 36: ceil -> floor survived the test above, whose ranks are whole).
TEST(StreamOrderedPoolStatistics, NearestRankRoundsAFractionalRankUp) {
  const std::vector<double> ten = {10, 9, 8, 7, 6, 5, 4, 3, 2, 1};
  EXPECT_DOUBLE_EQ(pp::quantile(ten, 0.25), 3);   // rank 2.5 -> 3rd value
  EXPECT_DOUBLE_EQ(pp::quantile(ten, 0.99), 10);  // rank 9.9 -> 10th value
  EXPECT_DOUBLE_EQ(pp::quantile(ten, 0.01), 1);   // rank 0.1 -> 1st value
  EXPECT_DOUBLE_EQ(pp::quantile({3, 1, 2}, 0.5), 2);  // rank 1.5 -> the middle one
  // An even count's median by nearest rank is the lower middle value, not their mean.
  EXPECT_DOUBLE_EQ(pp::quantile({4, 1, 3, 2}, 0.5), 2);
}

TEST(StreamOrderedPoolReport, TablesNameEveryVariantAndTheSpeedUp) {
  pp::VariantResult alloc;
  alloc.name = "cuMemAlloc + cuMemFree";
  alloc.medianUs = 100;
  alloc.p99Us = 900;
  pp::VariantResult keep;
  keep.name = "pool, threshold max";
  keep.medianUs = 0.5;
  keep.p99Us = 2;
  keep.reservedHigh = 256u << 20;
  keep.usedHigh = 128u << 20;
  keep.reservedAfter = 256u << 20;
  const std::string latency = pp::latencyTable("Same size, 16.0 MiB x 8 live", {alloc, keep});
  EXPECT_EQ(latency.rfind("Same size, 16.0 MiB x 8 live", 0), 0u) << latency;
  EXPECT_NE(latency.find("cuMemAlloc + cuMemFree"), std::string::npos);
  EXPECT_NE(latency.find("200.00x"), std::string::npos) << latency;
  const std::string footprint = pp::footprintTable({alloc, keep}, 128u << 20);
  EXPECT_NE(footprint.find("256 MiB"), std::string::npos) << footprint;
  EXPECT_NE(footprint.find("2.00"), std::string::npos) << footprint;
  EXPECT_NE(footprint.find("live bytes high-water mark of the loop: 128 MiB"), std::string::npos);
  pp::ReuseResult row;
  row.rule = "ALLOW_OPPORTUNISTIC";
  row.scenario = "the free has completed";
  row.reusedWhenOn = true;
  const std::string reuse = pp::reuseTable({row});
  EXPECT_NE(reuse.find("ALLOW_OPPORTUNISTIC, the free has completed"), std::string::npos);
  EXPECT_NE(reuse.find("yes"), std::string::npos);
  EXPECT_NE(reuse.find("no"), std::string::npos);
}
