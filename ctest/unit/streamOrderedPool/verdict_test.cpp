// 10_streamOrderedPool's checks, goals and verdict with good and bad measurements: a verdict
// that stopped looking at what was measured fails here, not only on a GPU.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "memsamples.hpp"
#include "pool_verdict.hpp"

namespace pv = pool_verdict;
namespace ms = memsamples;

namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

/// A pool run that did what the loop asked: 128 MiB live at most, 160 reserved, none left.
pool_plan::VariantResult goodPoolRun() {
  pool_plan::VariantResult variant;
  variant.name = "pool, threshold max";
  variant.reservedHigh = 160 * kMiB;
  variant.usedHigh = 128 * kMiB;
  variant.reservedAfter = 160 * kMiB;
  variant.usedAfter = 0;
  return variant;
}

}  // namespace

TEST(StreamOrderedPoolVerdict, AGoodPoolLoopPassesItsThreeChecks) {
  ms::Checklist checks;
  pv::checkPoolLoop(checks, goodPoolRun(), 128 * kMiB);
  EXPECT_EQ(checks.checks(), 3u);
  EXPECT_TRUE(checks.passed());
}

TEST(StreamOrderedPoolVerdict, APoolThatHandedOutLessThanWasLiveFails) {
  ms::Checklist checks;
  pool_plan::VariantResult variant = goodPoolRun();
  variant.usedHigh = 64 * kMiB;
  pv::checkPoolLoop(checks, variant, 128 * kMiB);
  ASSERT_EQ(checks.failures().size(), 1u);
  EXPECT_EQ(checks.failures()[0],
            "pool, threshold max: used high-water mark: expected at least the live bytes' "
            "128 MiB, got 64.0 MiB");
}

TEST(StreamOrderedPoolVerdict, MemoryStillInUseAfterTheLastFreeFails) {
  ms::Checklist checks;
  pool_plan::VariantResult variant = goodPoolRun();
  variant.usedAfter = 1 * kMiB;
  pv::checkPoolLoop(checks, variant, 128 * kMiB);
  ASSERT_EQ(checks.failures().size(), 1u);
  EXPECT_NE(checks.failures()[0].find("memory in use after the last free"), std::string::npos);
}

TEST(StreamOrderedPoolVerdict, ReservingLessThanWasUsedFails) {
  ms::Checklist checks;
  pool_plan::VariantResult variant = goodPoolRun();
  variant.reservedHigh = 100 * kMiB;
  pv::checkPoolLoop(checks, variant, 100 * kMiB);
  ASSERT_EQ(checks.failures().size(), 1u);
  EXPECT_NE(checks.failures()[0].find("reserved high-water mark"), std::string::npos);
}

// Issue 33 R3: cuda.h lets cuMemPoolTrimTo keep what it cannot safely release. A trim that
// keeps 2 MiB of 224 is not a failure; the line says what was kept.
TEST(StreamOrderedPoolVerdict, ATrimThatKeepsMemoryIsReportedNotFailed) {
  ms::Checklist checks;
  pv::Trim trim;
  trim.reservedBefore = 224 * kMiB;
  trim.reservedAfter = 2 * kMiB;
  trim.usedAfter = 0;
  pv::checkTrim(checks, trim);
  EXPECT_TRUE(checks.passed()) << checks.failures().front();
  EXPECT_EQ(checks.checks(), 2u);
  const std::string line = pv::trimLine(trim);
  EXPECT_NE(line.find("224 MiB reserved before cuMemPoolTrimTo(pool, 0), 2.00 MiB after"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("could not safely release"), std::string::npos) << line;
}

TEST(StreamOrderedPoolVerdict, ATrimThatGaveEverythingBackSaysSo) {
  ms::Checklist checks;
  pv::Trim trim;
  trim.reservedBefore = 224 * kMiB;
  pv::checkTrim(checks, trim);
  EXPECT_TRUE(checks.passed());
  EXPECT_NE(pv::trimLine(trim).find("0 B after (all given back)"), std::string::npos)
      << pv::trimLine(trim);
}

TEST(StreamOrderedPoolVerdict, ATrimWithMemoryStillInUseOrAGrownPoolFails) {
  pv::Trim inUse;
  inUse.reservedBefore = 32 * kMiB;
  inUse.reservedAfter = 32 * kMiB;
  inUse.usedAfter = 1 * kMiB;
  ms::Checklist first;
  pv::checkTrim(first, inUse);
  ASSERT_EQ(first.failures().size(), 1u);
  EXPECT_NE(first.failures()[0].find("step 10: memory in use at the trim"), std::string::npos);

  pv::Trim grown;
  grown.reservedBefore = 2 * kMiB;
  grown.reservedAfter = 4 * kMiB;
  ms::Checklist second;
  pv::checkTrim(second, grown);
  ASSERT_EQ(second.failures().size(), 1u);
  EXPECT_NE(second.failures()[0].find("reserved memory after the trim"), std::string::npos);
}

TEST(StreamOrderedPoolVerdict, SpeedUpIsTheReferenceMedianOverThePools) {
  pool_plan::VariantResult alloc;
  alloc.medianUs = 80;
  pool_plan::VariantResult pool;
  pool.medianUs = 0.8;
  EXPECT_DOUBLE_EQ(pv::speedUp(alloc, pool), 100);
  pool.medianUs = 0;
  EXPECT_DOUBLE_EQ(pv::speedUp(alloc, pool), 0);
}

// Issue 34: each figure is judged against what it measures: the same-size loop against 80x, the
// mix against 10x, and either only where the pool kept everything (threshold max).
TEST(StreamOrderedPoolVerdict, GoalsAreJudgedAtThresholdMaxOnly) {
  const pv::Goal same{"same size", pv::kSameSizeGoal};
  EXPECT_TRUE(pv::goalMet(same, 80.0, UINT64_MAX));
  EXPECT_TRUE(pv::goalMet(same, 120.0, UINT64_MAX));
  EXPECT_FALSE(pv::goalMet(same, 79.9, UINT64_MAX));
  EXPECT_FALSE(pv::goalMet(same, 120.0, 0));
  EXPECT_EQ(pv::goalLine(same, 103.26, UINT64_MAX),
            "Goal (same size): the pool at threshold max at least 80x faster per pair than "
            "cuMemAlloc + cuMemFree: met (103.3x)");
  EXPECT_NE(pv::goalLine(same, 40, UINT64_MAX).find(": not met (40.0x)"), std::string::npos);
  EXPECT_NE(pv::goalLine(same, 1.2, 0).find("not judged, this run kept 0 B (1.2x)"),
            std::string::npos)
      << pv::goalLine(same, 1.2, 0);

  const pv::Goal mix{"mix", pv::kMixGoal};
  EXPECT_TRUE(pv::goalMet(mix, 25, UINT64_MAX));
  EXPECT_FALSE(pv::goalMet(mix, 9, UINT64_MAX));
}

TEST(StreamOrderedPoolVerdict, TheVerdictFailsOnAnyFailedCheckAndListsIt) {
  ms::Checklist good;
  good.expect(true, "step 4: the copy", "", "");
  std::ostringstream goodOut;
  ms::JsonObject goodJson;
  EXPECT_EQ(pv::verdict(good, goodOut, goodJson), ms::Verdict::Pass);
  EXPECT_EQ(goodOut.str(), "Checks: 1, failed: 0\n");
  EXPECT_NE(goodJson.dump().find("\"failures\": []"), std::string::npos) << goodJson.dump();

  ms::Checklist bad;
  bad.expect(true, "step 4: the copy", "", "");
  bad.expect(false, "step 9: VecAdd on pool memory", "every element right", "3 wrong");
  std::ostringstream badOut;
  ms::JsonObject badJson;
  EXPECT_EQ(pv::verdict(bad, badOut, badJson), ms::Verdict::Fail);
  EXPECT_EQ(badOut.str(),
            "Check failed: step 9: VecAdd on pool memory: expected every element right, got 3 "
            "wrong\nChecks: 2, failed: 1\n");
  EXPECT_NE(badJson.dump().find("\"checks\": 2"), std::string::npos) << badJson.dump();
}
