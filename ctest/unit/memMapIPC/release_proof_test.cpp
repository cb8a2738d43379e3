// How the memMapIPC parent decides that a path's memory is released (release_proof.hpp): from
// the driver's answers about its own addresses, before and after, never from the device's free
// memory, which other processes change. And the question itself (askDriverAbout), on a fake
// driver: this file defines cuPointerGetAttributes (a link seam, no libcuda), answering a freed
// address as the driver does (CUDA_SUCCESS, MAPPED 0, RANGE_SIZE left untouched), and a
// cuMemGetAddressRange that only counts its calls: the question must never ask it, since its
// error about a freed address is an API error to compute-sanitizer's memcheck.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "release_proof.hpp"

namespace ipc = memsamples::ipc;

namespace {

constexpr CUdeviceptr kBase = 0x7f0000200000;
constexpr std::size_t kSize = 2 << 20;

/// cuPointerGetAttributes finding [@p base, @p base + @p size) mapped.
ipc::AddressAnswer found(CUdeviceptr base = kBase, std::size_t size = kSize) {
  return ipc::AddressAnswer{CUDA_SUCCESS, 1, base, size};
}

/// cuPointerGetAttributes about a freed address: CUDA_SUCCESS, MAPPED 0, the range untouched.
ipc::AddressAnswer unmapped() {
  return ipc::AddressAnswer{CUDA_SUCCESS, 0, 0, 0};
}

/// A driver that could not answer: @p result.
ipc::AddressAnswer answered(CUresult result) {
  return ipc::AddressAnswer{result, 0, 0, 0};
}

/// A, B and C at kBase + i * kSize, each found before and answered @p after after.
ipc::ReleaseEvidence threeAllocations(const ipc::AddressAnswer& after) {
  ipc::ReleaseEvidence evidence;
  for (CUdeviceptr i = 0; i < 3; ++i) {
    const CUdeviceptr base = kBase + i * kSize;
    ipc::AddressAnswer later = after;
    if (later.result == CUDA_SUCCESS && later.base == kBase)
      later.base = base;  // "still there" means its own range
    evidence.allocations.push_back({base, found(base), later});
  }
  return evidence;
}

}  // namespace

TEST(ReleaseProof, GoneWhenTheDriverNoLongerFindsAnyOfTheAddressesMapped) {
  EXPECT_TRUE(ipc::releaseProblems(threeAllocations(unmapped())).empty());
  // A range the driver finds elsewhere, one that does not hold this pointer, is not this one.
  ipc::ReleaseEvidence elsewhere = threeAllocations(unmapped());
  elsewhere.allocations[1].after = found(kBase + 64 * kSize);
  EXPECT_TRUE(ipc::releaseProblems(elsewhere).empty());
  ipc::ReleaseEvidence pool = threeAllocations(unmapped());
  pool.poolBytesInUse = 0;
  EXPECT_TRUE(ipc::releaseProblems(pool).empty());
}

TEST(ReleaseProof, AnAllocationStillFoundIsNotReleased) {
  const std::vector<std::string> problems = ipc::releaseProblems(threeAllocations(found()));
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0],
            "allocation 0 (0x7f0000200000): cuPointerGetAttributes still finds it "
            "mapped after the release");
  EXPECT_EQ(problems[2],
            "allocation 2 (0x7f0000600000): cuPointerGetAttributes still finds it "
            "mapped after the release");
  // One of three left behind is named alone.
  ipc::ReleaseEvidence one = threeAllocations(unmapped());
  one.allocations[1].after = found(kBase + kSize - 4096, 2 * kSize);  // a range around it
  ASSERT_EQ(ipc::releaseProblems(one).size(), 1u);
  EXPECT_EQ(ipc::releaseProblems(one)[0],
            "allocation 1 (0x7f0000400000): cuPointerGetAttributes "
            "still finds it mapped after the release");
  // Mapped, with no range answered: still known.
  ipc::ReleaseEvidence noRange = threeAllocations(unmapped());
  noRange.allocations[2].after = found(0, 0);
  ASSERT_EQ(ipc::releaseProblems(noRange).size(), 1u);
}

TEST(ReleaseProof, ADriverThatCannotAnswerProvesNothing) {
  // A context lost to an earlier error answers every question with an error: that is not "gone".
  const std::vector<std::string> problems =
      ipc::releaseProblems(threeAllocations(answered(CUDA_ERROR_ILLEGAL_ADDRESS)));
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0],
            "allocation 0 (0x7f0000200000): cuPointerGetAttributes could not answer "
            "after the release (CUresult 700), so nothing is proved");
  // The plural call answers an unknown address with CUDA_SUCCESS: an error is never "gone".
  EXPECT_EQ(ipc::releaseProblems(threeAllocations(answered(CUDA_ERROR_NOT_FOUND))).size(), 3u);
  EXPECT_EQ(ipc::releaseProblems(threeAllocations(answered(CUDA_ERROR_INVALID_VALUE))).size(), 3u);
}

TEST(ReleaseProof, AnAllocationNotSeenBeforeCannotBeProvedGone) {
  ipc::ReleaseEvidence evidence = threeAllocations(unmapped());
  evidence.allocations[0].before = answered(CUDA_ERROR_NOT_FOUND);
  evidence.allocations[1].before = unmapped();        // answered, but not mapped
  evidence.allocations[2].before = found(kBase, 16);  // a range that does not hold it
  const std::vector<std::string> problems = ipc::releaseProblems(evidence);
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0],
            "allocation 0 (0x7f0000200000): cuPointerGetAttributes did not find it mapped even "
            "before its release (CUresult 500, MAPPED 0), so its release cannot be proved");
  EXPECT_EQ(problems[1].rfind("allocation 1 (0x7f0000400000): cuPointerGetAttributes did not "
                              "find it mapped even before its release (CUresult 0, MAPPED 0)",
                              0),
            0u);
  EXPECT_EQ(problems[2].rfind("allocation 2 (0x7f0000600000): cuPointerGetAttributes did not "
                              "find it mapped even before its release (CUresult 0, MAPPED 1)",
                              0),
            0u);
}

TEST(ReleaseProof, APoolThatStillCountsBytesInUseIsNotReleased) {
  ipc::ReleaseEvidence evidence = threeAllocations(unmapped());
  evidence.poolBytesInUse = 2 << 20;
  EXPECT_EQ(ipc::releaseProblems(evidence),
            std::vector<std::string>{"the pool still counts 2097152 bytes in use "
                                     "(CU_MEMPOOL_ATTR_USED_MEM_CURRENT) after every free"});
}

// --- The question, on a fake driver --------------------------------------------------------------

namespace {

/// What the fake driver knows and what it was asked.
struct FakePointers {
  CUdeviceptr live = 0;                    ///< The one address it finds mapped (in a 2 MiB range).
  std::vector<CUpointer_attribute> asked;  ///< Every attribute cuPointerGetAttributes was asked.
  int addressRangeCalls = 0;               ///< cuMemGetAddressRange calls: memcheck errors.
};

FakePointers& fakePointers() {
  static FakePointers instance;
  return instance;
}

}  // namespace

extern "C" {

// What the driver does: any address is answered with CUDA_SUCCESS; a known one gets every
// attribute, an unknown one MAPPED = 0 and nothing else written.
CUresult CUDAAPI cuPointerGetAttributes(unsigned int count, CUpointer_attribute* attributes,
                                        void** data, CUdeviceptr pointer) {
  const bool known = pointer == fakePointers().live;
  for (unsigned int i = 0; i < count; ++i) {
    fakePointers().asked.push_back(attributes[i]);
    if (attributes[i] == CU_POINTER_ATTRIBUTE_MAPPED) {
      const int mapped = known ? 1 : 0;
      std::memcpy(data[i], &mapped, sizeof mapped);
    } else if (known && attributes[i] == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR) {
      std::memcpy(data[i], &pointer, sizeof pointer);
    } else if (known && attributes[i] == CU_POINTER_ATTRIBUTE_RANGE_SIZE) {
      const std::size_t size = kSize;
      std::memcpy(data[i], &size, sizeof size);
    }
  }
  return CUDA_SUCCESS;
}

// The call the question must not make: on a freed address its error is what memcheck counts.
CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr*, size_t*, CUdeviceptr) {
  ++fakePointers().addressRangeCalls;
  return CUDA_ERROR_NOT_FOUND;
}

}  // extern "C"

TEST(ReleaseQuestion, AFreedAddressIsAnsweredWithoutAnErrorAndProvesTheRelease) {
  fakePointers() = FakePointers{};
  fakePointers().live = kBase;
  ipc::ReleaseEvidence evidence;
  evidence.allocations.push_back({kBase, ipc::askDriverAbout(kBase), {}});
  fakePointers().live = 0;  // released
  evidence.allocations[0].after = ipc::askDriverAbout(kBase);

  EXPECT_EQ(fakePointers().addressRangeCalls, 0) << "cuMemGetAddressRange is a memcheck error";
  const ipc::AddressAnswer& before = evidence.allocations[0].before;
  EXPECT_EQ(before.result, CUDA_SUCCESS);
  EXPECT_EQ(before.mapped, 1);
  EXPECT_EQ(before.base, kBase);
  EXPECT_EQ(before.size, kSize);
  const ipc::AddressAnswer& after = evidence.allocations[0].after;
  EXPECT_EQ(after.result, CUDA_SUCCESS);
  EXPECT_EQ(after.mapped, 0);
  EXPECT_EQ(after.size, 0u);  // left untouched by the driver: the value it was given
  EXPECT_TRUE(ipc::releaseProblems(evidence).empty());
  EXPECT_EQ(fakePointers().asked,
            (std::vector<CUpointer_attribute>{
                CU_POINTER_ATTRIBUTE_MAPPED, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                CU_POINTER_ATTRIBUTE_RANGE_SIZE, CU_POINTER_ATTRIBUTE_MAPPED,
                CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE}));
}
