/**
 * @file owner_test.cpp
 * @brief unmapStripedRange() and the StripedVmmRange owner against the fake driver: every way a
 *        range ends leaves the machine clean, and a failed free says which call failed.
 */
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "fake_cuda_driver.hpp"
#include "striped_test_support.hpp"
#include "striped_vmm.hpp"

namespace vmm = memsamples::vmm;
using namespace striped_test;

namespace {
using UnmapStripedRange = FakeDriverTest;
using StripedVmmRangeOwner = FakeDriverTest;
}  // namespace

TEST_F(UnmapStripedRange, OneUnmapOfTheWholeRangeThenTheAddressFree) {
  const vmm::StripedRange range = vmm::mapStripedRange(64 * MiB, 8, {0}, {0});
  const std::size_t built = fake::callLog().size();
  vmm::unmapStripedRange(range.base, range.layout.roundedBytes);
  EXPECT_EQ(std::vector<std::string>(fake::callLog().begin() + static_cast<long>(built),
                                     fake::callLog().end()),
            (std::vector<std::string>{"cuMemUnmap", "cuMemAddressFree"}));
  EXPECT_TRUE(machineIsClean());
}

TEST_F(UnmapStripedRange, AFailedUnmapIsReportedAndTheAddressFreeIsStillTried) {
  const vmm::StripedRange range = vmm::mapStripedRange(64 * MiB, 2, {0}, {0});
  fake::failCall("cuMemUnmap", 1);
  const memsamples::CudaError error =
      cudaErrorOf([&] { vmm::unmapStripedRange(range.base, range.layout.roundedBytes); });
  EXPECT_EQ(withoutLine(error.what()),
            "cuMemUnmap failed at striped_vmm.cpp:N: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
  EXPECT_EQ(fake::callCount("cuMemAddressFree"), 1);
}

TEST_F(UnmapStripedRange, AFailedAddressFreeIsReported) {
  const vmm::StripedRange range = vmm::mapStripedRange(64 * MiB, 2, {0}, {0});
  fake::failCall("cuMemAddressFree", 1, CUDA_ERROR_INVALID_VALUE);
  const memsamples::CudaError error =
      cudaErrorOf([&] { vmm::unmapStripedRange(range.base, range.layout.roundedBytes); });
  EXPECT_EQ(withoutLine(error.what()),
            "cuMemAddressFree failed at striped_vmm.cpp:N: CUDA_ERROR_INVALID_VALUE (invalid "
            "argument)");
  EXPECT_EQ(fake::leftovers().describe(),
            "1 reservations, 0 mappings, 0 unreleased handles, 0 bytes of physical memory");
}

TEST_F(StripedVmmRangeOwner, OwnsTheRangeItBuiltAndFreesItWhenDestroyed) {
  fake::reset({{fake::Device{}, fake::Device{}}, {}});
  {
    const vmm::StripedVmmRange range(10 * MiB, 4, {0, 1}, {1, 0});
    EXPECT_NE(range.get(), 0u);
    EXPECT_EQ(range.size(), 16 * MiB);
    EXPECT_EQ(range.layout().stripes.size(), 4u);
    EXPECT_EQ(range.mappingDevices(), (std::vector<int>{1, 0}));
    EXPECT_EQ(fake::deviceMappedAt(range.get() + 4 * MiB), 1);
    EXPECT_EQ(fake::leftovers().physicalBytes, 16 * MiB);
  }
  EXPECT_TRUE(machineIsClean());
}

TEST_F(StripedVmmRangeOwner, AFailedConstructionLeavesNothing) {
  fake::failCall("cuMemMap", 3);
  EXPECT_THROW(vmm::StripedVmmRange(64 * MiB, 4, {0}, {0}), memsamples::CudaError);
  EXPECT_TRUE(machineIsClean());
}

TEST_F(StripedVmmRangeOwner, MoveConstructionTransfersTheRange) {
  {
    vmm::StripedVmmRange first(64 * MiB, 2, {0}, {0});
    const CUdeviceptr base = first.get();
    const vmm::StripedVmmRange second(std::move(first));
    EXPECT_EQ(second.get(), base);
    EXPECT_EQ(second.size(), 64 * MiB);
    EXPECT_EQ(first.get(), 0u);  // NOLINT(bugprone-use-after-move): the moved-from state is tested
    EXPECT_EQ(first.size(), 0u);
    EXPECT_EQ(fake::leftovers().reservations, 1u);
  }
  EXPECT_TRUE(machineIsClean());
  EXPECT_EQ(fake::callCount("cuMemUnmap"), 1);  // the empty owner freed nothing
}

TEST_F(StripedVmmRangeOwner, MoveAssignmentFreesTheOldRangeAtOnce) {
  {
    vmm::StripedVmmRange target(64 * MiB, 2, {0}, {0});
    vmm::StripedVmmRange source(64 * MiB, 4, {0}, {0});
    const CUdeviceptr oldBase = target.get();
    const CUdeviceptr newBase = source.get();
    target = std::move(source);
    EXPECT_EQ(target.get(), newBase);
    EXPECT_EQ(target.layout().stripes.size(), 4u);
    EXPECT_EQ(source.get(), 0u);  // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(fake::deviceMappedAt(oldBase), -1);
    EXPECT_EQ(fake::deviceMappedAt(newBase), 0);
    EXPECT_EQ(fake::leftovers().reservations, 1u);

    vmm::StripedVmmRange& alias = target;  // self-assignment must keep the range
    target = std::move(alias);
    EXPECT_EQ(target.get(), newBase);
    EXPECT_EQ(fake::leftovers().reservations, 1u);
  }
  EXPECT_TRUE(machineIsClean());
}

TEST_F(StripedVmmRangeOwner, ReleaseGivesTheRangeUpWithoutFreeingItAndLeavesAnEmptyOwner) {
  vmm::StripedVmmRange range(64 * MiB, 2, {0}, {0});
  const CUdeviceptr base = range.get();
  const std::uint64_t bytes = range.size();
  const std::size_t built = fake::callLog().size();
  EXPECT_EQ(range.release(), base);
  EXPECT_EQ(fake::callLog().size(), built);  // no driver call: the range is still there
  EXPECT_EQ(fake::leftovers().reservations, 1u);
  EXPECT_EQ(range.get(), 0u);
  EXPECT_EQ(range.size(), 0u);
  EXPECT_TRUE(range.mappingDevices().empty());
  // Whoever took the range frees it.
  vmm::unmapStripedRange(base, bytes);
  EXPECT_TRUE(machineIsClean());
  const std::size_t calls = fake::callLog().size();
  EXPECT_EQ(range.release(), 0u);  // nothing left to give up
  EXPECT_EQ(fake::callLog().size(), calls);
}

TEST_F(StripedVmmRangeOwner, TheGoodPathFreesWithCheckedCallsThenGivesTheRangeUp) {
  // As the lesson writes it: get() for the checked free, release() once it succeeded.
  vmm::StripedVmmRange range(64 * MiB, 2, {0}, {0});
  vmm::unmapStripedRange(range.get(), range.size());
  EXPECT_TRUE(machineIsClean());
  EXPECT_NE(range.release(), 0u);
  EXPECT_EQ(range.get(), 0u);
  const std::size_t calls = fake::callLog().size();
  range = vmm::StripedVmmRange();  // the emptied owner frees nothing
  EXPECT_EQ(fake::callLog().size(), calls);
}

TEST_F(StripedVmmRangeOwner, AFailedExplicitFreeThrowsAndTheOwnerThatStillHoldsTheRangeTriesAgain) {
  {
    vmm::StripedVmmRange range(64 * MiB, 2, {0}, {0});
    const CUdeviceptr base = range.get();
    fake::failCall("cuMemUnmap", 1);
    const memsamples::CudaError error =
        cudaErrorOf([&] { vmm::unmapStripedRange(range.get(), range.size()); });
    EXPECT_EQ(withoutLine(error.what()),
              "cuMemUnmap failed at striped_vmm.cpp:N: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
    // The free threw before release(): the owner still holds the range it could not free.
    EXPECT_EQ(range.get(), base);
    EXPECT_EQ(fake::leftovers().mappings, 2u);
  }
  // Its destructor tried again (cuMemUnmap once more, cuMemAddressFree once more), and this time
  // nothing is left: the range did not leak.
  EXPECT_EQ(fake::callCount("cuMemUnmap"), 2);
  EXPECT_EQ(fake::callCount("cuMemAddressFree"), 2);
  EXPECT_TRUE(machineIsClean());
}

TEST_F(StripedVmmRangeOwner, TheDestructorIgnoresAFailedUnmapAndStillTriesTheAddressFree) {
  {
    const vmm::StripedVmmRange range(64 * MiB, 2, {0}, {0});
    fake::failCall("cuMemUnmap", 1);
  }
  EXPECT_EQ(fake::callCount("cuMemAddressFree"), 1);
  EXPECT_EQ(fake::leftovers().mappings, 2u);  // the driver kept what it could not unmap
}
