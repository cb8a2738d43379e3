// What each range attribute must read back after a given advice; location names; Checklist.
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "managed_logic.hpp"

namespace mm = memsamples::managed;

namespace {

/// Locations as the sample writes them: {type, id}.
CUmemLocation deviceLocation(int ordinal) {
  return {CU_MEM_LOCATION_TYPE_DEVICE, ordinal};
}
CUmemLocation hostLocation() {
  return {CU_MEM_LOCATION_TYPE_HOST, 0};
}
CUmemLocation hostNumaLocation(int node) {
  return {CU_MEM_LOCATION_TYPE_HOST_NUMA, node};
}

/// What the driver answers for a range with no advice and no prefetch, ACCESSED_BY of 3 slots.
mm::RangeAttributes pristine() {
  mm::RangeAttributes a;
  a.accessedBy = {CU_DEVICE_INVALID, CU_DEVICE_INVALID, CU_DEVICE_INVALID};
  return a;
}

}  // namespace

TEST(Locations, NamesAndEquality) {
  EXPECT_EQ(mm::describeLocation(deviceLocation(3)), "device 3");
  EXPECT_EQ(mm::describeLocation(hostLocation()), "host");
  EXPECT_EQ(mm::describeLocation(hostNumaLocation(1)), "host NUMA node 1");
  CUmemLocation current = {};
  current.type = CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
  EXPECT_EQ(mm::describeLocation(current), "host NUMA node of the calling thread");
  EXPECT_EQ(mm::describeLocation(CUmemLocation{}), "invalid (none or mixed)");
  EXPECT_EQ(mm::locationTypeName(CU_MEM_LOCATION_TYPE_HOST_NUMA), "CU_MEM_LOCATION_TYPE_HOST_NUMA");
  EXPECT_EQ(mm::locationTypeName(static_cast<CUmemLocationType>(42)), "CUmemLocationType 42");
  EXPECT_EQ(mm::legacyLocationName(0), "device 0");
  EXPECT_EQ(mm::legacyLocationName(CU_DEVICE_CPU), "CU_DEVICE_CPU (host)");
  EXPECT_EQ(mm::legacyLocationName(CU_DEVICE_INVALID), "CU_DEVICE_INVALID (none or mixed)");
  EXPECT_EQ(mm::legacyLocationName(-7), "unknown location -7");

  EXPECT_TRUE(mm::sameLocation(deviceLocation(1), deviceLocation(1)));
  EXPECT_FALSE(mm::sameLocation(deviceLocation(1), deviceLocation(0)));
  EXPECT_FALSE(mm::sameLocation(deviceLocation(0), hostLocation()));
  EXPECT_FALSE(mm::sameLocation(hostNumaLocation(0), hostNumaLocation(1)));
  CUmemLocation hostWithId = hostLocation();
  hostWithId.id = 9;
  EXPECT_TRUE(mm::sameLocation(hostLocation(), hostWithId));
}

TEST(CompareRangeAttributes, NoAdviceMatchesAPristineRange) {
  EXPECT_TRUE(mm::compareRangeAttributes(mm::ExpectedRange{}, pristine()).empty());
}

TEST(CompareRangeAttributes, PreferredDevice) {
  mm::ExpectedRange expected;
  expected.preferred = deviceLocation(1);
  mm::RangeAttributes got = pristine();
  got.preferredLocation = 1;
  got.preferredLocationType = CU_MEM_LOCATION_TYPE_DEVICE;
  got.preferredLocationId = 1;
  EXPECT_TRUE(mm::compareRangeAttributes(expected, got).empty());

  got.preferredLocationId = 0;
  auto found = mm::compareRangeAttributes(expected, got);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].attribute, "CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID");
  EXPECT_EQ(found[0].expected, "1");
  EXPECT_EQ(found[0].got, "0");

  // A range the driver reports as having no preferred location at all.
  found = mm::compareRangeAttributes(expected, pristine());
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].attribute, "CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION");
  EXPECT_EQ(found[0].expected, "device 1");
  EXPECT_EQ(found[0].got, "CU_DEVICE_INVALID (none or mixed)");
  EXPECT_EQ(found[1].attribute, "CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE");
  EXPECT_EQ(found[1].expected, "CU_MEM_LOCATION_TYPE_DEVICE");
  EXPECT_EQ(found[1].got, "CU_MEM_LOCATION_TYPE_INVALID");
}

TEST(CompareRangeAttributes, PreferredHostIgnoresTheId) {
  mm::ExpectedRange expected;
  expected.preferred = hostLocation();
  mm::RangeAttributes got = pristine();
  got.preferredLocation = CU_DEVICE_CPU;
  got.preferredLocationType = CU_MEM_LOCATION_TYPE_HOST;
  got.preferredLocationId = 12345;  // "should be ignored" for HOST
  EXPECT_TRUE(mm::compareRangeAttributes(expected, got).empty());
  got.preferredLocation = 0;
  const auto found = mm::compareRangeAttributes(expected, got);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].expected, "CU_DEVICE_CPU (host)");
  EXPECT_EQ(found[0].got, "device 0");
}

TEST(CompareRangeAttributes, PreferredHostNumaComparesTypeAndIdButNotTheLegacyValue) {
  mm::ExpectedRange expected;
  expected.preferred = hostNumaLocation(0);
  mm::RangeAttributes got = pristine();
  got.preferredLocationType = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  got.preferredLocationId = 0;
  for (int legacy : {CU_DEVICE_CPU, CU_DEVICE_INVALID})
    EXPECT_TRUE(
        mm::compareRangeAttributes(expected, (got.preferredLocation = legacy, got)).empty());
  got.preferredLocationId = 1;
  auto found = mm::compareRangeAttributes(expected, got);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].attribute, "CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID");
  got.preferredLocationType = CU_MEM_LOCATION_TYPE_DEVICE;
  found = mm::compareRangeAttributes(expected, got);
  ASSERT_EQ(found.size(), 1u);  // the id is not compared once the type is wrong
  EXPECT_EQ(found[0].attribute, "CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE");
  EXPECT_EQ(found[0].expected, "CU_MEM_LOCATION_TYPE_HOST_NUMA or CU_MEM_LOCATION_TYPE_HOST");
  EXPECT_EQ(found[0].got, "CU_MEM_LOCATION_TYPE_DEVICE");
}

// A node advised may read back as that node or as plain HOST, whatever the count of online nodes
// (one node, a CPU-less node, GPU memory as a node); nothing else passes.
TEST(CompareRangeAttributes, HostNumaAdviceAcceptsTheNodeOrPlainHostAndNothingElse) {
  mm::ExpectedRange expected;
  expected.preferred = hostNumaLocation(1);
  mm::RangeAttributes asNode = pristine();
  asNode.preferredLocation = CU_DEVICE_CPU;
  asNode.preferredLocationType = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  asNode.preferredLocationId = 1;
  EXPECT_TRUE(mm::compareRangeAttributes(expected, asNode).empty());
  mm::RangeAttributes asHost = asNode;
  asHost.preferredLocationType = CU_MEM_LOCATION_TYPE_HOST;
  asHost.preferredLocationId = 0;  // HOST's id means nothing
  EXPECT_TRUE(mm::compareRangeAttributes(expected, asHost).empty());

  mm::RangeAttributes otherNode = asNode;
  otherNode.preferredLocationId = 0;
  auto found = mm::compareRangeAttributes(expected, otherNode);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].attribute, "CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID");
  EXPECT_EQ(found[0].expected, "1");
  EXPECT_EQ(found[0].got, "0");
  for (CUmemLocationType wrong : {CU_MEM_LOCATION_TYPE_INVALID, CU_MEM_LOCATION_TYPE_DEVICE,
                                  CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT}) {
    mm::RangeAttributes got = asNode;
    got.preferredLocationType = wrong;
    found = mm::compareRangeAttributes(expected, got);
    ASSERT_EQ(found.size(), 1u) << mm::locationTypeName(wrong);
    EXPECT_EQ(found[0].attribute, "CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE");
  }
  // Plain HOST advice is not satisfied by a node: the rule only widens a node expectation.
  expected.preferred = hostLocation();
  found = mm::compareRangeAttributes(expected, asNode);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].got, "CU_MEM_LOCATION_TYPE_HOST_NUMA");
}

TEST(HostNumaReadBack, SaysWhichAnswerTheDriverGave) {
  mm::ExpectedRange expected;
  expected.preferred = hostNumaLocation(1);
  mm::RangeAttributes got = pristine();
  got.preferredLocationType = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  got.preferredLocationId = 1;
  EXPECT_EQ(mm::hostNumaReadBack(expected, got),
            "the driver reports host NUMA node 1 as CU_MEM_LOCATION_TYPE_HOST_NUMA id 1");
  got.preferredLocationType = CU_MEM_LOCATION_TYPE_HOST;
  EXPECT_EQ(mm::hostNumaReadBack(expected, got),
            "the driver reports host NUMA node 1 as CU_MEM_LOCATION_TYPE_HOST (no node named)");
  expected.preferred = hostLocation();  // no node advised: nothing to say
  EXPECT_EQ(mm::hostNumaReadBack(expected, got), "");
  EXPECT_EQ(mm::hostNumaReadBack(mm::ExpectedRange{}, got), "");
}

TEST(CompareRangeAttributes, ReadMostly) {
  mm::ExpectedRange expected;
  expected.readMostly = true;
  mm::RangeAttributes got = pristine();
  auto found = mm::compareRangeAttributes(expected, got);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].attribute, "CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY");
  EXPECT_EQ(found[0].expected, "1");
  EXPECT_EQ(found[0].got, "0");
  got.readMostly = 1;
  EXPECT_TRUE(mm::compareRangeAttributes(expected, got).empty());
}

TEST(CompareRangeAttributes, AccessedByIsASetPaddedWithInvalid) {
  mm::ExpectedRange expected;
  expected.accessedBy = {2, 0};
  mm::RangeAttributes got = pristine();
  got.accessedBy = {0, 2, CU_DEVICE_INVALID};
  EXPECT_TRUE(mm::compareRangeAttributes(expected, got).empty());
  got.accessedBy = {0, CU_DEVICE_INVALID, CU_DEVICE_INVALID};
  const auto found = mm::compareRangeAttributes(expected, got);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].attribute, "CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY");
  EXPECT_EQ(found[0].expected, "{device 0, device 2}");
  EXPECT_EQ(found[0].got, "{device 0}");
  EXPECT_EQ(mm::compareRangeAttributes(mm::ExpectedRange{}, got)[0].expected, "{}");
}

TEST(CompareRangeAttributes, LastPrefetchLocation) {
  mm::ExpectedRange expected;
  expected.lastPrefetch = hostLocation();
  mm::RangeAttributes got = pristine();
  got.lastPrefetchLocation = CU_DEVICE_CPU;
  got.lastPrefetchLocationType = CU_MEM_LOCATION_TYPE_HOST;
  EXPECT_TRUE(mm::compareRangeAttributes(expected, got).empty());
  expected.lastPrefetch = deviceLocation(0);
  const auto found = mm::compareRangeAttributes(expected, got);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].attribute, "CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION");
  EXPECT_EQ(found[0].expected, "device 0");
  EXPECT_EQ(found[0].got, "CU_DEVICE_CPU (host)");
  EXPECT_EQ(found[1].attribute, "CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE");
}

TEST(CompareRangeAttributes, MixedRangeExpectsInvalidEverywhere) {
  // Half the pages prefer the GPU, half the host: the whole range has no single answer.
  mm::RangeAttributes got = pristine();
  got.preferredLocation = 0;  // what a driver that reported the first page would say
  got.preferredLocationType = CU_MEM_LOCATION_TYPE_DEVICE;
  const auto found = mm::compareRangeAttributes(mm::ExpectedRange{}, got);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].expected, "CU_DEVICE_INVALID (none or mixed)");
  EXPECT_EQ(found[1].expected, "CU_MEM_LOCATION_TYPE_INVALID");
}

TEST(DifferingAttributes, NamesEveryAttributeThatDiffers) {
  mm::RangeAttributes one = pristine();
  mm::RangeAttributes all = pristine();
  EXPECT_TRUE(mm::differingAttributes(one, all).empty());
  all.readMostly = 1;
  all.accessedBy[0] = 0;
  all.lastPrefetchLocationId = 3;
  const auto found = mm::differingAttributes(one, all);
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].attribute, "CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY");
  EXPECT_EQ(found[1].attribute, "CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY");
  EXPECT_EQ(found[1].got, "{device 0}");
  EXPECT_EQ(found[2].attribute, "CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID");
}

TEST(DescribeRangeAttributes, OneReadableLine) {
  mm::RangeAttributes got = pristine();
  got.preferredLocation = 0;
  got.preferredLocationType = CU_MEM_LOCATION_TYPE_DEVICE;
  got.accessedBy[0] = 0;
  got.lastPrefetchLocation = CU_DEVICE_CPU;
  got.lastPrefetchLocationType = CU_MEM_LOCATION_TYPE_HOST;
  EXPECT_EQ(mm::describeRangeAttributes(got),
            "read-mostly 0, preferred device 0 (legacy device 0), accessed-by {device 0}, last "
            "prefetch host (legacy CU_DEVICE_CPU (host))");
}

TEST(RangeAttributeQuery, AsksForEveryAttributeWithTheSizeTheDriverRequires) {
  const mm::RangeAttributeQuery query(3);
  const mm::RangeAttributes& target = query.said;
  ASSERT_EQ(query.asked.size(), mm::kRangeAttributeCount);
  ASSERT_EQ(query.data.size(), mm::kRangeAttributeCount);
  ASSERT_EQ(query.sizes.size(), mm::kRangeAttributeCount);
  const std::vector<CUmem_range_attribute> expected = {
      CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY,
      CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION,
      CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE,
      CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID,
      CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY,
      CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION,
      CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE,
      CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID};
  EXPECT_EQ(query.asked, expected);
  // Every answer lands in the target, in 4-byte units (ACCESSED_BY: one int per slot).
  EXPECT_EQ(query.data[0], &target.readMostly);
  EXPECT_EQ(query.data[2], &target.preferredLocationType);
  EXPECT_EQ(query.data[4], target.accessedBy.data());
  EXPECT_EQ(query.data[7], &target.lastPrefetchLocationId);
  for (std::size_t i = 0; i < query.sizes.size(); ++i)
    EXPECT_EQ(query.sizes[i], i == 4 ? 3 * sizeof(int) : 4u) << i;
  EXPECT_EQ(target.accessedBy, (std::vector<int>(3, CU_DEVICE_INVALID)));
  // At least one slot: ACCESSED_BY needs a non-zero size.
  EXPECT_EQ(mm::RangeAttributeQuery(0).sizes[4], sizeof(int));
}

TEST(PrefetchedTo, OnlyTheLastPrefetchIsSet) {
  const mm::ExpectedRange expected = mm::prefetchedTo(deviceLocation(2));
  EXPECT_FALSE(expected.readMostly);
  EXPECT_FALSE(expected.preferred.has_value());
  EXPECT_TRUE(expected.accessedBy.empty());
  ASSERT_TRUE(expected.lastPrefetch.has_value());
  EXPECT_TRUE(mm::sameLocation(*expected.lastPrefetch, deviceLocation(2)));
}

TEST(ReadMostlyRange, ReadMostlyAndTheLastPrefetchOnly) {
  const mm::ExpectedRange expected = mm::readMostlyRange(deviceLocation(1));
  EXPECT_TRUE(expected.readMostly);
  EXPECT_FALSE(expected.preferred.has_value());
  EXPECT_TRUE(expected.accessedBy.empty());
  ASSERT_TRUE(expected.lastPrefetch.has_value());
  EXPECT_TRUE(mm::sameLocation(*expected.lastPrefetch, deviceLocation(1)));
  // Pages that faults moved record no prefetch (--no-prefetch).
  EXPECT_FALSE(mm::readMostlyRange(std::nullopt).lastPrefetch.has_value());
}

TEST(KeptOnHostFor, PreferredOnTheHostAccessedByTheDeviceLastPrefetchedToTheHost) {
  const CUmemLocation host = {CU_MEM_LOCATION_TYPE_HOST, 0};
  const mm::ExpectedRange expected = mm::keptOnHostFor(3);
  EXPECT_FALSE(expected.readMostly);
  ASSERT_TRUE(expected.preferred.has_value());
  EXPECT_TRUE(mm::sameLocation(*expected.preferred, host));
  EXPECT_EQ(expected.accessedBy, std::vector<int>{3});
  ASSERT_TRUE(expected.lastPrefetch.has_value());
  EXPECT_TRUE(mm::sameLocation(*expected.lastPrefetch, host));
}

TEST(Checklist, CountsChecksAndWordsFailures) {
  memsamples::Checklist checks;
  EXPECT_TRUE(checks.expect(true, "first", "a", "a"));
  EXPECT_FALSE(checks.expect(false, "C after prefetch", "0 mismatches", "3 mismatches"));
  EXPECT_TRUE(checks.expectAttributes("fresh", {}, mm::kRangeAttributeCount));
  EXPECT_FALSE(checks.expectAttributes("SET_READ_MOSTLY",
                                       {{"CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY", "1", "0"}},
                                       mm::kRangeAttributeCount));
  EXPECT_EQ(checks.checks(), 2 + 2 * mm::kRangeAttributeCount);
  EXPECT_TRUE(checks.expectAttributes("pointer", {}, mm::kPointerAttributeChecks));
  EXPECT_EQ(checks.checks(), 2 + 2 * mm::kRangeAttributeCount + mm::kPointerAttributeChecks);
  EXPECT_FALSE(checks.passed());
  ASSERT_EQ(checks.failures().size(), 2u);
  EXPECT_EQ(checks.failures()[0], "C after prefetch: expected 0 mismatches, got 3 mismatches");
  EXPECT_EQ(checks.failures()[1],
            "SET_READ_MOSTLY: CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY: expected 1, got 0");
}

// Step 8's advice table: every advice set, read back and unset on all of A, then the halves.
TEST(AdviceSteps, EachAdviceIsSetReadBackAndUnset) {
  constexpr std::uint64_t kBytes = 1ull << 20;
  const std::vector<mm::AdviceStep> steps = mm::adviceSteps(kBytes, 2, 1);
  ASSERT_EQ(steps.size(), 19u);
  // Before any advice: a read-back of the fresh allocation, which has none.
  EXPECT_FALSE(steps[0].advice.has_value());
  ASSERT_TRUE(steps[0].expected.has_value());
  EXPECT_TRUE(mm::compareRangeAttributes(*steps[0].expected, pristine()).empty());
  // Whole-range rows: advice, then exactly what it implies.
  EXPECT_EQ(steps[1].label, "SET_PREFERRED_LOCATION device 2");
  EXPECT_EQ(*steps[1].advice, CU_MEM_ADVISE_SET_PREFERRED_LOCATION);
  EXPECT_TRUE(mm::sameLocation(*steps[1].expected->preferred, deviceLocation(2)));
  EXPECT_EQ(steps[3].label, "SET_PREFERRED_LOCATION host NUMA node 1");
  EXPECT_TRUE(steps[3].mayBeRefused);
  EXPECT_TRUE(mm::sameLocation(steps[3].where, hostNumaLocation(1)));
  EXPECT_EQ(steps[5].expected->accessedBy, std::vector<int>{2});
  EXPECT_TRUE(steps[7].expected->readMostly);
  for (const mm::AdviceStep& step : steps) {
    EXPECT_EQ(step.range.offset + step.range.bytes <= kBytes, true) << step.label;
    EXPECT_EQ(step.mayBeRefused, &step == &steps[3]) << step.label;
  }
  // The halves: advice without read-backs, then three read-backs without advice.
  EXPECT_EQ(steps[9].range.bytes, kBytes / 2);
  EXPECT_FALSE(steps[9].expected.has_value());
  EXPECT_EQ(steps[12].range.offset, kBytes / 2);
  EXPECT_FALSE(steps[13].advice.has_value());
  EXPECT_TRUE(steps[13].expected->readMostly);
  EXPECT_EQ(steps[13].expected->accessedBy, std::vector<int>{2});
  EXPECT_EQ(steps[14].expected->preferred->type, CU_MEM_LOCATION_TYPE_HOST);
  EXPECT_EQ(steps[15].label, "whole range (mixed values)");
  EXPECT_TRUE(mm::compareRangeAttributes(*steps[15].expected, pristine()).empty());
  // Everything unset at the end, and read back as a fresh range.
  EXPECT_EQ(*steps.back().advice, CU_MEM_ADVISE_UNSET_ACCESSED_BY);
  EXPECT_EQ(steps.back().label, "all advice unset again");
  EXPECT_TRUE(mm::compareRangeAttributes(*steps.back().expected, pristine()).empty());
  // A device that names no host NUMA node gets no node row.
  const std::vector<mm::AdviceStep> noNode = mm::adviceSteps(kBytes, 0, -1);
  ASSERT_EQ(noNode.size(), 18u);
  for (const mm::AdviceStep& step : noNode)
    EXPECT_NE(step.where.type, CU_MEM_LOCATION_TYPE_HOST_NUMA) << step.label;
}

// What one cuPointerGetAttributes call asks, and where each answer lands.
TEST(PointerAttributeQuery, AsksEightAttributesIntoTheMembers) {
  const mm::PointerAttributeQuery q;
  const mm::PointerAttributes& p = q.said;
  void* const* answers = q.answers;
  EXPECT_EQ(q.asked[0], CU_POINTER_ATTRIBUTE_MEMORY_TYPE);
  EXPECT_EQ(answers[0], &p.memoryType);
  EXPECT_EQ(q.asked[3], CU_POINTER_ATTRIBUTE_RANGE_START_ADDR);
  EXPECT_EQ(answers[3], &p.rangeStart);
  EXPECT_EQ(q.asked[7], CU_POINTER_ATTRIBUTE_CONTEXT);
  EXPECT_EQ(answers[7], &p.context);
}
