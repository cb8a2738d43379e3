// The rules the lesson's checks.expect() applies: one judge() per kind of answer.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "managed_logic.hpp"

namespace mm = memsamples::managed;

namespace {

constexpr CUmemLocation kDevice0 = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
constexpr CUmemLocation kDevice1 = {CU_MEM_LOCATION_TYPE_DEVICE, 1};
constexpr CUmemLocation kHost = {CU_MEM_LOCATION_TYPE_HOST, 0};

/// A range with no advice and no prefetch, ACCESSED_BY of 2 slots.
mm::RangeAttributes pristine() {
  mm::RangeAttributes a;
  a.accessedBy = {CU_DEVICE_INVALID, CU_DEVICE_INVALID};
  return a;
}

/// The range as the driver reads it back after a prefetch to @p where (device or host).
mm::RangeAttributes prefetched(const CUmemLocation& where) {
  mm::RangeAttributes a = pristine();
  a.lastPrefetchLocation = where.type == CU_MEM_LOCATION_TYPE_DEVICE ? where.id : CU_DEVICE_CPU;
  a.lastPrefetchLocationType = where.type;
  a.lastPrefetchLocationId = where.id;
  return a;
}

}  // namespace

TEST(Judge, APlainValueMustBeEqual) {
  mm::Judgement j = mm::judge(1, 1);
  EXPECT_TRUE(j.mismatches.empty());
  EXPECT_EQ(j.said, "1");
  EXPECT_EQ(j.checks, 1u);
  j = mm::judge(0, 1);
  ASSERT_EQ(j.mismatches.size(), 1u);
  EXPECT_EQ(j.mismatches[0].attribute, "");
  EXPECT_EQ(j.mismatches[0].expected, "1");
  EXPECT_EQ(j.mismatches[0].got, "0");
}

TEST(Judge, ALocationIsTheSamePlace) {
  EXPECT_TRUE(mm::judge(kDevice0, kDevice0).mismatches.empty());
  EXPECT_EQ(mm::judge(kDevice0, kDevice0).said, "device 0");
  CUmemLocation hostWithId = kHost;
  hostWithId.id = 7;  // the id of HOST means nothing
  EXPECT_TRUE(mm::judge(hostWithId, kHost).mismatches.empty());
  mm::Judgement j = mm::judge(kDevice1, kDevice0);
  ASSERT_EQ(j.mismatches.size(), 1u);
  EXPECT_EQ(j.mismatches[0].expected, "device 0");
  EXPECT_EQ(j.mismatches[0].got, "device 1");
  // A range without a preferred location reads back INVALID.
  j = mm::judge(CUmemLocation{}, kDevice0);
  ASSERT_EQ(j.mismatches.size(), 1u);
  EXPECT_EQ(j.mismatches[0].got, "invalid (none or mixed)");
}

TEST(Judge, AccessedByIsExactlyTheAdvisedDevices) {
  const std::vector<int> answer = {0, CU_DEVICE_INVALID, CU_DEVICE_INVALID};
  mm::Judgement j = mm::judge(answer, std::vector<int>{0});
  EXPECT_TRUE(j.mismatches.empty());
  EXPECT_EQ(j.said, "{device 0}");
  j = mm::judge(answer, std::vector<int>{0, 1});
  ASSERT_EQ(j.mismatches.size(), 1u);
  EXPECT_EQ(j.mismatches[0].expected, "{device 0, device 1}");
  EXPECT_EQ(j.mismatches[0].got, "{device 0}");
  EXPECT_EQ(mm::judge(std::vector<int>(3, CU_DEVICE_INVALID), std::vector<int>{0}).said, "{}");
}

TEST(Judge, ARangeCountsItsEightAttributes) {
  const mm::ExpectedRange onHost = mm::prefetchedTo(kHost);
  mm::Judgement j = mm::judge(prefetched(kHost), onHost);
  EXPECT_TRUE(j.mismatches.empty());
  EXPECT_EQ(j.checks, mm::kRangeAttributeCount);
  EXPECT_EQ(j.said, "read-mostly 0, preferred none, accessed-by {}, last prefetch host");
  j = mm::judge(prefetched(kDevice0), onHost);
  ASSERT_EQ(j.mismatches.size(), 2u);  // the legacy int and the _TYPE
  EXPECT_EQ(j.mismatches[0].attribute, "CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION");
  EXPECT_EQ(j.mismatches[1].attribute, "CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE");
}

// Step 4's advice on the inputs: A and B read-mostly, then prefetched to the GPU in step 5 (with
// --no-prefetch: no last prefetch location); step 6's UNSET_READ_MOSTLY takes it back.
TEST(Judge, TheInputsAreReadMostly) {
  mm::RangeAttributes got = prefetched(kDevice0);
  got.readMostly = 1;
  const mm::ExpectedRange afterStep5 = mm::readMostlyRange(kDevice0);
  mm::Judgement j = mm::judge(got, afterStep5);
  EXPECT_TRUE(j.mismatches.empty());
  EXPECT_EQ(j.said, "read-mostly 1, preferred none, accessed-by {}, last prefetch device 0");
  // With --no-prefetch nothing records a prefetch: the expectation names none.
  mm::RangeAttributes faulted = pristine();
  faulted.readMostly = 1;
  EXPECT_TRUE(mm::judge(faulted, mm::readMostlyRange(std::nullopt)).mismatches.empty());
  EXPECT_EQ(mm::judge(faulted, afterStep5).mismatches.size(), 2u);  // the legacy int and _TYPE
  // After UNSET_READ_MOSTLY only the last prefetch is left, and a range still read-mostly fails.
  const mm::ExpectedRange afterUnset = mm::prefetchedTo(kDevice0);
  EXPECT_TRUE(mm::judge(prefetched(kDevice0), afterUnset).mismatches.empty());
  j = mm::judge(got, afterUnset);
  ASSERT_EQ(j.mismatches.size(), 1u);
  EXPECT_EQ(j.mismatches[0].attribute, "CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY");
}

// Step 4's advice on the result: C preferred on the host and accessed by the GPU, so the kernel
// writes it in place; step 5 prefetched it to the host (its pages made there) before the kernel.
TEST(Judge, TheResultLivesOnTheHostAndTheGpuMapsIt) {
  mm::RangeAttributes got = prefetched(kHost);
  got.preferredLocation = CU_DEVICE_CPU;
  got.preferredLocationType = CU_MEM_LOCATION_TYPE_HOST;
  got.accessedBy[0] = 0;
  const mm::ExpectedRange inPlace = mm::keptOnHostFor(0);
  mm::Judgement j = mm::judge(got, inPlace);
  EXPECT_TRUE(j.mismatches.empty());
  EXPECT_EQ(j.said, "read-mostly 0, preferred host, accessed-by {device 0}, last prefetch host");
  // The single read-backs of step 4: the preferred location as _TYPE and _ID, then ACCESSED_BY.
  EXPECT_TRUE(mm::judge(CUmemLocation{CU_MEM_LOCATION_TYPE_HOST, 0}, kHost).mismatches.empty());
  EXPECT_FALSE(mm::judge(kDevice0, kHost).mismatches.empty());
  EXPECT_TRUE(mm::judge(got.accessedBy, std::vector<int>{0}).mismatches.empty());
  // A preference for the GPU instead, or no accessed-by, is caught.
  mm::RangeAttributes onGpu = got;
  onGpu.preferredLocation = 0;
  onGpu.preferredLocationType = CU_MEM_LOCATION_TYPE_DEVICE;
  EXPECT_EQ(mm::judge(onGpu, inPlace).mismatches.size(), 2u);  // the legacy int and _TYPE
  mm::RangeAttributes unmapped = got;
  unmapped.accessedBy[0] = CU_DEVICE_INVALID;
  j = mm::judge(unmapped, inPlace);
  ASSERT_EQ(j.mismatches.size(), 1u);
  EXPECT_EQ(j.mismatches[0].attribute, "CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY");
  // After UNSET_PREFERRED_LOCATION and UNSET_ACCESSED_BY only the last prefetch is left.
  EXPECT_TRUE(mm::judge(prefetched(kHost), mm::prefetchedTo(kHost)).mismatches.empty());
  EXPECT_EQ(mm::judge(got, mm::prefetchedTo(kHost)).mismatches.size(), 3u);
}

// The three pieces of advice together, as the advice table's first half reads them back.
TEST(Judge, TheThreePiecesOfAdviceTogether) {
  mm::RangeAttributes got = pristine();
  got.readMostly = 1;
  got.preferredLocation = 0;
  got.preferredLocationType = CU_MEM_LOCATION_TYPE_DEVICE;
  got.preferredLocationId = 0;
  got.accessedBy[0] = 0;
  const mm::ExpectedRange advised = {true, kDevice0, {0}, std::nullopt};
  mm::Judgement j = mm::judge(got, advised);
  EXPECT_TRUE(j.mismatches.empty());
  EXPECT_EQ(j.said,
            "read-mostly 1, preferred device 0, accessed-by {device 0}, last prefetch none");
  // Every UNSET_ done: the same answer no longer fits, and a pristine one does.
  EXPECT_EQ(mm::judge(pristine(), advised).mismatches.size(), 4u);
  EXPECT_TRUE(mm::judge(pristine(), mm::ExpectedRange{}).mismatches.empty());
}

TEST(Judge, AHostNumaPreferenceSaysWhichAnswerTheDriverGave) {
  mm::RangeAttributes got = pristine();
  got.preferredLocation = CU_DEVICE_CPU;
  got.preferredLocationType = CU_MEM_LOCATION_TYPE_HOST;
  mm::ExpectedRange expected;
  expected.preferred = CUmemLocation{CU_MEM_LOCATION_TYPE_HOST_NUMA, 0};
  const mm::Judgement j = mm::judge(got, expected);
  EXPECT_TRUE(j.mismatches.empty());
  EXPECT_EQ(j.said,
            "read-mostly 0, preferred host, accessed-by {}, last prefetch none (the driver reports "
            "host NUMA node 0 as CU_MEM_LOCATION_TYPE_HOST (no node named))");
}

TEST(Judge, EveryRangeOfABatchNamesItsOwnDestination) {
  mm::PrefetchBatch batch;
  mm::addRange(batch, 0x10000, 4096, kDevice0);
  mm::addRange(batch, 0x20000, 4096, kDevice0);
  mm::addRange(batch, 0x30000, 4096, kHost);
  std::vector<mm::RangeAttributes> said = {prefetched(kDevice0), prefetched(kDevice0),
                                           prefetched(kHost)};
  mm::Judgement j = mm::judge(said, batch);
  EXPECT_TRUE(j.mismatches.empty());
  EXPECT_EQ(j.checks, 3 * mm::kRangeAttributeCount);
  EXPECT_EQ(j.said, "3 ranges, each last prefetched to its own destination");
  said[2] = prefetched(kDevice0);  // the host range went to the GPU instead
  j = mm::judge(said, batch);
  ASSERT_EQ(j.mismatches.size(), 2u);
  EXPECT_EQ(j.mismatches[0].attribute, "range 2: CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION");
  EXPECT_EQ(j.said, "2 attributes differ");
  said.pop_back();
  EXPECT_THROW(mm::judge(said, batch), std::invalid_argument);
}
