// How the memMapIPC parent decides that a path's memory is released (release_proof.hpp): from
// the driver's answers about its own addresses, before and after, never from the device's free
// memory, which other processes change.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "release_proof.hpp"

namespace ipc = memsamples::ipc;

namespace {

constexpr CUdeviceptr kBase = 0x7f0000200000;
constexpr std::size_t kSize = 2 << 20;

/// cuMemGetAddressRange finding [@p base, @p base + @p size).
ipc::AddressAnswer found(CUdeviceptr base = kBase, std::size_t size = kSize) {
  return ipc::AddressAnswer{CUDA_SUCCESS, base, size};
}

/// cuMemGetAddressRange answering @p result.
ipc::AddressAnswer answered(CUresult result) {
  return ipc::AddressAnswer{result, 0, 0};
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

TEST(ReleaseProof, GoneWhenTheDriverNoLongerKnowsAnyOfTheAddresses) {
  EXPECT_TRUE(ipc::releaseProblems(threeAllocations(answered(CUDA_ERROR_NOT_FOUND))).empty());
  EXPECT_TRUE(ipc::releaseProblems(threeAllocations(answered(CUDA_ERROR_INVALID_VALUE))).empty());
  // A range the driver finds elsewhere, one that does not hold this pointer, is not this one.
  ipc::ReleaseEvidence elsewhere = threeAllocations(answered(CUDA_ERROR_NOT_FOUND));
  elsewhere.allocations[1].after = found(kBase + 64 * kSize);
  EXPECT_TRUE(ipc::releaseProblems(elsewhere).empty());
  ipc::ReleaseEvidence pool = threeAllocations(answered(CUDA_ERROR_NOT_FOUND));
  pool.poolBytesInUse = 0;
  EXPECT_TRUE(ipc::releaseProblems(pool).empty());
}

TEST(ReleaseProof, AnAllocationStillFoundIsNotReleased) {
  const std::vector<std::string> problems = ipc::releaseProblems(threeAllocations(found()));
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0],
            "allocation 0 (0x7f0000200000): cuMemGetAddressRange still finds it after the release");
  EXPECT_EQ(problems[2],
            "allocation 2 (0x7f0000600000): cuMemGetAddressRange still finds it after the release");
  // One of three left behind is named alone.
  ipc::ReleaseEvidence one = threeAllocations(answered(CUDA_ERROR_NOT_FOUND));
  one.allocations[1].after = found(kBase + kSize - 4096, 2 * kSize);  // a range around it
  ASSERT_EQ(ipc::releaseProblems(one).size(), 1u);
  EXPECT_EQ(ipc::releaseProblems(one)[0],
            "allocation 1 (0x7f0000400000): cuMemGetAddressRange still finds it after the release");
}

TEST(ReleaseProof, ADriverThatCannotAnswerProvesNothing) {
  // A context lost to an earlier error answers every question with an error: that is not "gone".
  const std::vector<std::string> problems =
      ipc::releaseProblems(threeAllocations(answered(CUDA_ERROR_ILLEGAL_ADDRESS)));
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0],
            "allocation 0 (0x7f0000200000): cuMemGetAddressRange could not answer "
            "after the release (CUresult 700), so nothing is proved");
}

TEST(ReleaseProof, AnAllocationNotSeenBeforeCannotBeProvedGone) {
  ipc::ReleaseEvidence evidence = threeAllocations(answered(CUDA_ERROR_NOT_FOUND));
  evidence.allocations[0].before = answered(CUDA_ERROR_NOT_FOUND);
  evidence.allocations[2].before = found(kBase, 16);  // a range that does not hold it
  const std::vector<std::string> problems = ipc::releaseProblems(evidence);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0],
            "allocation 0 (0x7f0000200000): cuMemGetAddressRange did not find it "
            "even before its release (CUresult 500), so its release cannot be "
            "proved");
  EXPECT_EQ(problems[1].rfind("allocation 2 (0x7f0000600000): cuMemGetAddressRange did not find "
                              "it even before its release (CUresult 0)",
                              0),
            0u);
}

TEST(ReleaseProof, APoolThatStillCountsBytesInUseIsNotReleased) {
  ipc::ReleaseEvidence evidence = threeAllocations(answered(CUDA_ERROR_NOT_FOUND));
  evidence.poolBytesInUse = 2 << 20;
  EXPECT_EQ(ipc::releaseProblems(evidence),
            std::vector<std::string>{"the pool still counts 2097152 bytes in use "
                                     "(CU_MEMPOOL_ATTR_USED_MEM_CURRENT) after every free"});
}
