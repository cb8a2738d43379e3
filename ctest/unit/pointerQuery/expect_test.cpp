// What 11_pointerQuery expects the driver to answer about each pointer it made: right answers
// pass, and each wrong answer fails naming the attribute; the address-range, host-flag and
// allocation-property checks; which rows ask for a dma-buf and why the others do not; the table.
#include <gtest/gtest.h>

#include <string>

#include "facts_fixture.hpp"
#include "pointer_classify.hpp"
#include "pointer_expect.hpp"

namespace pq = pointer_query;
using pq::Made;
using pointer_test::kAddress;
using pointer_test::kBytes;
using pointer_test::known;
using pointer_test::rightAnswers;
using pointer_test::run;

namespace {

pq::RowCheck checkRow(Made made, const pq::PointerFacts& got) {
  return pq::checkAnswers(known(made), got, pq::classify(got), run());
}

/// The attributes a check found wrong, comma-separated.
std::string wrong(const pq::RowCheck& check) {
  std::string names;
  for (const auto& mismatch : check.mismatches)
    names += (names.empty() ? "" : ",") + mismatch.attribute;
  return names;
}

constexpr Made kEveryRow[] = {Made::DeviceAlloc, Made::AllocHost, Made::HostAllocMapped,
                              Made::HostAllocWc, Made::Registered, Made::Managed,
                              Made::Vmm,         Made::Pool,      Made::Malloc,
                              Made::Stack,       Made::OnePast,   Made::Freed};

}  // namespace

TEST(PointerQueryCheckAnswers, RightAnswersPassEveryRowAndEachRowChecksSomething) {
  for (Made made : kEveryRow) {
    const pq::RowCheck check = checkRow(made, rightAnswers(made));
    EXPECT_EQ(wrong(check), "") << static_cast<int>(made);
    EXPECT_GT(check.checks, 0u) << static_cast<int>(made);
  }
}

TEST(PointerQueryCheckAnswers, AWrongMemoryTypeFailsAndMisleadsClassify) {
  pq::PointerFacts got = rightAnswers(Made::DeviceAlloc);
  got.memoryType = CU_MEMORYTYPE_HOST;
  EXPECT_NE(wrong(checkRow(Made::DeviceAlloc, got)).find("MEMORY_TYPE"), std::string::npos);
  EXPECT_NE(wrong(checkRow(Made::DeviceAlloc, got)).find("classify()"), std::string::npos);
}

TEST(PointerQueryCheckAnswers, TheVmmRangeIsTheReservationNotTheMapping) {
  pq::PointerFacts got = rightAnswers(Made::Vmm);
  got.rangeSize = kBytes;  // the mapping's size: wrong for RANGE_SIZE
  EXPECT_EQ(wrong(checkRow(Made::Vmm, got)), "RANGE_START_ADDR/RANGE_SIZE");
}

TEST(PointerQueryCheckAnswers, TheVmmHandleTypesAreTheOnesAskedFor) {
  pq::PointerFacts got = rightAnswers(Made::Vmm);
  got.handleTypes = 0;
  EXPECT_EQ(wrong(checkRow(Made::Vmm, got)), "ALLOWED_HANDLE_TYPES");
}

TEST(PointerQueryCheckAnswers, APoolBlockNamesItsPool) {
  pq::PointerFacts got = rightAnswers(Made::Pool);
  got.memPool = reinterpret_cast<CUmemoryPool>(std::uintptr_t{0x42});
  EXPECT_EQ(wrong(checkRow(Made::Pool, got)), "MEMPOOL_HANDLE");
  got.memPool = nullptr;  // then it reads as cuMemAlloc memory, or VMM
  EXPECT_EQ(wrong(checkRow(Made::Pool, got)), "classify(),MEMPOOL_HANDLE");
}

TEST(PointerQueryCheckAnswers, HostMemoryIsReachedAtTheAddressCuMemHostGetDevicePointerGave) {
  pq::Known wc = known(Made::HostAllocWc);
  wc.devicePointer = 0x500000000;  // a disjoint device address
  pq::PointerFacts got = rightAnswers(Made::HostAllocWc);
  EXPECT_EQ(wrong(pq::checkAnswers(wc, got, pq::classify(got), run())), "DEVICE_POINTER");
  got.devicePointer = 0x500000000;
  EXPECT_EQ(wrong(pq::checkAnswers(wc, got, pq::classify(got), run())), "");
}

TEST(PointerQueryCheckAnswers, AHostRangeIsJudgedOnlyWhereTheDriverNamesOne) {
  pq::PointerFacts got = rightAnswers(Made::AllocHost);
  got.rangeStart = kAddress + 4096;  // named, and not holding the allocation
  got.rangeSize = kBytes;
  EXPECT_EQ(wrong(checkRow(Made::AllocHost, got)), "RANGE_START_ADDR/RANGE_SIZE");
}

TEST(PointerQueryCheckAnswers, CounterExamplesMustNotLookLikeDriverMemory) {
  pq::PointerFacts got;
  got.memoryType = CU_MEMORYTYPE_HOST;
  got.mapped = 1;
  EXPECT_EQ(wrong(checkRow(Made::Malloc, got)), "classify(),MEMORY_TYPE,MAPPED");

  pq::PointerFacts freed = rightAnswers(Made::DeviceAlloc);  // still mapped: wrong
  EXPECT_EQ(wrong(checkRow(Made::Freed, freed)), "classify(),MAPPED");
  freed.mapped = 0;  // the type may stay, MAPPED = 0 makes it nobody's
  EXPECT_EQ(wrong(checkRow(Made::Freed, freed)), "");
}

TEST(PointerQueryCheckAnswers, PageableAccessLetsTheDriverKnowPlainHostMemory) {
  pq::PointerFacts got;
  got.memoryType = CU_MEMORYTYPE_HOST;
  got.mapped = 1;
  pq::RunFacts hmm = run();
  hmm.pageableAccess = true;
  EXPECT_EQ(wrong(pq::checkAnswers(known(Made::Stack), got, pq::classify(got), hmm)), "");
}

TEST(PointerQueryCheckAnswers, OneBytePastMayBeANeighbourButNotTheAllocation) {
  pq::PointerFacts neighbour = rightAnswers(Made::DeviceAlloc);
  neighbour.rangeStart = kAddress + kBytes;
  EXPECT_EQ(wrong(checkRow(Made::OnePast, neighbour)), "");
  pq::PointerFacts same = rightAnswers(Made::DeviceAlloc);
  same.rangeSize = 2 * kBytes;  // the driver counted the byte past as part of it
  EXPECT_EQ(wrong(checkRow(Made::OnePast, same)), "RANGE_START_ADDR/RANGE_SIZE");
}

TEST(PointerQueryAddressRange, TheVmmMappingAndCuMemAllocBlocks) {
  EXPECT_EQ(wrong(pq::checkAddressRange(known(Made::Vmm), kAddress, kBytes)), "");
  EXPECT_EQ(wrong(pq::checkAddressRange(known(Made::DeviceAlloc), kAddress, kBytes)), "");
  EXPECT_EQ(wrong(pq::checkAddressRange(known(Made::DeviceAlloc), kAddress - 4096, 2 * kBytes)),
            "cuMemGetAddressRange");
  EXPECT_EQ(wrong(pq::checkAddressRange(known(Made::Pool), kAddress - kBytes, 4 * kBytes)), "");
  EXPECT_EQ(wrong(pq::checkAddressRange(known(Made::OnePast), kAddress + kBytes, kBytes)), "");
}

TEST(PointerQueryHostFlags, EveryRequestedFlagMustBeThereAndTheDriverMayAddDeviceMap) {
  const pq::Known mapped = known(Made::HostAllocMapped);
  EXPECT_EQ(wrong(pq::checkHostFlags(mapped, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP)),
            "");
  EXPECT_EQ(wrong(pq::checkHostFlags(mapped, CU_MEMHOSTALLOC_DEVICEMAP)), "cuMemHostGetFlags");
  EXPECT_EQ(wrong(pq::checkHostFlags(known(Made::AllocHost), CU_MEMHOSTALLOC_DEVICEMAP)), "");
  EXPECT_TRUE(pq::hasHostFlags(Made::AllocHost));
  EXPECT_FALSE(pq::hasHostFlags(Made::Registered));  // cuMemHostGetFlags would fail there
}

TEST(PointerQueryAllocationProperties, TheRetainedHandleDescribesTheVmmAllocation) {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  EXPECT_EQ(wrong(pq::checkAllocationProperties(known(Made::Vmm), prop, 0)), "");
  EXPECT_EQ(wrong(pq::checkAllocationProperties(known(Made::Vmm), prop, 1)), "location id");
}

TEST(PointerQueryDmaBuf, AsksOnlyWhereCudaHAllowsAndTheDeviceSaysSo) {
  EXPECT_TRUE(pq::dmaBufPlan(Made::DeviceAlloc, true, false).ask);
  EXPECT_TRUE(pq::dmaBufPlan(Made::Vmm, true, false).ask);
  EXPECT_FALSE(pq::dmaBufPlan(Made::AllocHost, true, false).ask);  // the H100's answer
  EXPECT_EQ(pq::dmaBufPlan(Made::AllocHost, true, false).reason,
            "CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED is 0");
  EXPECT_TRUE(pq::dmaBufPlan(Made::HostAllocWc, false, true).ask);
  EXPECT_FALSE(pq::dmaBufPlan(Made::DeviceAlloc, false, true).ask);
  for (Made made : {Made::Registered, Made::Managed, Made::Pool, Made::Malloc, Made::Freed}) {
    const pq::DmaBufPlan plan = pq::dmaBufPlan(made, true, true);
    EXPECT_FALSE(plan.ask);
    EXPECT_FALSE(plan.reason.empty());
  }
}

TEST(PointerQueryTable, ARowShowsEachAnswerRelativeToItsOwnAddressAndMarksWrongOnes) {
  pq::Known k = known(Made::DeviceAlloc);
  k.label = "cuMemAlloc";
  pq::PointerFacts got = rightAnswers(Made::DeviceAlloc);
  got.mapped = 0;
  const pq::PointerClass said = pq::classify(got);
  const pq::RowCheck check = pq::checkAnswers(k, got, said, run());
  const std::string row = pq::tableRow(k, got, said, check, run());
  EXPECT_EQ(row.rfind("cuMemAlloc", 0), 0u) << row;
  EXPECT_NE(row.find("dev  =p    -     ours"), std::string::npos) << row;
  EXPECT_NE(row.find("0/2M"), std::string::npos) << row;
  EXPECT_NE(row.find("0!"), std::string::npos) << row;  // MAPPED is wrong
  EXPECT_NE(row.find("not CUDA!"), std::string::npos) << row;
  EXPECT_EQ(pq::tableHeader().rfind("pointer", 0), 0u);
}

TEST(PointerQueryShortBytes, FitsInAFewCharacters) {
  EXPECT_EQ(pq::shortBytes(0), "0");
  EXPECT_EQ(pq::shortBytes(64), "64");
  EXPECT_EQ(pq::shortBytes(4096), "4K");
  EXPECT_EQ(pq::shortBytes(2u << 20), "2M");
  EXPECT_EQ(pq::shortBytes(3u << 29), "1.5G");
  EXPECT_EQ(pq::hexText(0x6), "0x6");
}

TEST(PointerQueryAccess, TheLessonsDeviceMemoryIsReadWriteOthersAreShown) {
  const std::uint64_t rw = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
  EXPECT_EQ(wrong(pq::checkAccess(known(Made::Vmm), rw)), "");
  EXPECT_EQ(wrong(pq::checkAccess(known(Made::Vmm), CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READ)),
            "ACCESS_FLAGS");
  EXPECT_EQ(wrong(pq::checkAccess(known(Made::Pool), 0)), "ACCESS_FLAGS");
  EXPECT_EQ(pq::checkAccess(known(Made::OnePast), 0).checks, 0u);
}

TEST(PointerQueryAddressRange, AVmmAnswerMayBeTheMappingOrTheReservationButNoMore) {
  EXPECT_EQ(wrong(pq::checkAddressRange(known(Made::Vmm), kAddress, 2 * kBytes)), "");
  EXPECT_EQ(wrong(pq::checkAddressRange(known(Made::Vmm), kAddress, 3 * kBytes)),
            "cuMemGetAddressRange");
  EXPECT_EQ(wrong(pq::checkAddressRange(known(Made::Vmm), kAddress + 4096, kBytes)),
            "cuMemGetAddressRange");
}
