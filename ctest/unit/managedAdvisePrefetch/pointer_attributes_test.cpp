// What cuPointerGetAttributes must say about a managed allocation, and how it is shown.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "managed_logic.hpp"

namespace mm = memsamples::managed;

namespace {

constexpr CUdeviceptr kBase = 0x7f4742000000ull;
constexpr std::size_t kBytes = 1ull << 30;

/// What the driver answers for a managed allocation of kBytes at kBase, made on device 0.
mm::PointerAttributes managedAllocation() {
  mm::PointerAttributes p;
  p.memoryType = CU_MEMORYTYPE_DEVICE;
  p.isManaged = 1;
  p.deviceOrdinal = 0;
  p.rangeStart = kBase;
  p.rangeSize = kBytes;
  p.devicePointer = kBase;
  p.hostPointer = reinterpret_cast<void*>(static_cast<std::uintptr_t>(kBase));
  return p;
}

}  // namespace

TEST(ComparePointerAttributes, AManagedAllocationPassesEveryCheck) {
  const mm::PointerAttributes p = managedAllocation();
  EXPECT_TRUE(mm::comparePointerAttributes(p, p, kBase, kBytes, 0).empty());
  // The driver may track a larger range around the allocation.
  mm::PointerAttributes wider = p;
  wider.rangeStart = kBase - 4096;
  wider.rangeSize = kBytes + 8192;
  EXPECT_TRUE(mm::comparePointerAttributes(wider, wider, kBase, kBytes, 0).empty());
}

TEST(ComparePointerAttributes, EveryCheckNamesItsAttribute) {
  mm::PointerAttributes p = managedAllocation();
  p.isManaged = 0;
  p.deviceOrdinal = 1;
  p.rangeSize = kBytes / 2;
  p.devicePointer = kBase + 16;
  p.hostPointer = nullptr;
  mm::PointerAttributes inside = managedAllocation();
  inside.rangeStart = kBase + kBytes / 2;
  const auto found = mm::comparePointerAttributes(p, inside, kBase, kBytes, 0);
  // Each row: attribute, expected, got.
  const std::vector<std::vector<std::string>> rows = {
      {"CU_POINTER_ATTRIBUTE_IS_MANAGED", "1", "0"},
      {"CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL", "0", "1"},
      {"CU_POINTER_ATTRIBUTE_RANGE_START_ADDR/_SIZE",
       "a range containing [0x7f4742000000, 0x7f4782000000)", "[0x7f4742000000, 0x7f4762000000)"},
      {"CU_POINTER_ATTRIBUTE_RANGE_START_ADDR/_SIZE from inside",
       "the same range as from the start", "[0x7f4762000000, 0x7f47a2000000)"},
      {"CU_POINTER_ATTRIBUTE_DEVICE_POINTER", "0x7f4742000000", "0x7f4742000010"},
      {"CU_POINTER_ATTRIBUTE_HOST_POINTER", "0x7f4742000000", "0x0"}};
  ASSERT_EQ(found.size(), mm::kPointerAttributeChecks);
  ASSERT_EQ(rows.size(), mm::kPointerAttributeChecks);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(found[i].attribute, rows[i][0]);
    EXPECT_EQ(found[i].expected, rows[i][1]) << rows[i][0];
    EXPECT_EQ(found[i].got, rows[i][2]) << rows[i][0];
  }
}

TEST(DescribePointerAttributes, OneLinePerAnswer) {
  const mm::PointerAttributes p = managedAllocation();
  EXPECT_EQ(mm::describePointerAttributes(p, p, kBase + kBytes / 2, nullptr),
            "  memory type      CU_MEMORYTYPE_DEVICE (for managed memory this says nothing about "
            "where the pages are)\n"
            "  is managed       1\n"
            "  device ordinal   0 (the device of the allocating context)\n"
            "  range            start 0x7f4742000000, size 1073741824 bytes\n"
            "  device pointer   0x7f4742000000, host pointer 0x7f4742000000 (one address "
            "everywhere)\n"
            "  context          the sample's context\n"
            "  from 0x7f4762000000 (inside): range start 0x7f4742000000, size 1073741824 bytes\n");
}

TEST(MemoryTypeName, KnownAndUnknown) {
  EXPECT_STREQ(mm::memoryTypeName(CU_MEMORYTYPE_UNIFIED), "CU_MEMORYTYPE_UNIFIED");
  EXPECT_STREQ(mm::memoryTypeName(CU_MEMORYTYPE_HOST), "CU_MEMORYTYPE_HOST");
  EXPECT_STREQ(mm::memoryTypeName(99), "unknown CUmemorytype");
}

// Step 8 (checkPointerAttributes) judges both answers against the allocation in one check of six.
TEST(Judge, PointerAnswersAgainstTheAllocation) {
  mm::PointerAttributes p = managedAllocation();
  const mm::ManagedRange allocation{kBase, kBytes, 0};
  mm::Judgement j = mm::judge(mm::PointerAnswers{p, p, kBase + kBytes / 2}, allocation);
  EXPECT_TRUE(j.mismatches.empty());
  EXPECT_EQ(j.checks, mm::kPointerAttributeChecks);
  EXPECT_EQ(j.said, "managed 1, device 0, range 0x7f4742000000 + 1.00 GiB");
  p.isManaged = 0;
  j = mm::judge(mm::PointerAnswers{p, p, kBase}, allocation);
  ASSERT_EQ(j.mismatches.size(), 1u);
  EXPECT_EQ(j.mismatches[0].attribute, "CU_POINTER_ATTRIBUTE_IS_MANAGED");
}
