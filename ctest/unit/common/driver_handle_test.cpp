// DriverHandle and OwnedRange: exactly one release per handle or range, whatever is moved where.
#include <gtest/gtest.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "memsamples.hpp"
#include "support/vmm_owners.hpp"

namespace ms = memsamples;

namespace {

std::vector<int> released;  // handles passed to fakeRelease, in order

CUresult fakeRelease(int handle) {
  released.push_back(handle);
  return CUDA_SUCCESS;
}

using FakeHandle = ms::DriverHandle<int, fakeRelease>;

}  // namespace

TEST(DriverHandle, ReleasesOnceWhenDestroyed) {
  released.clear();
  { FakeHandle owner(7); }
  { FakeHandle empty; }
  EXPECT_EQ(released, std::vector<int>{7});
}

TEST(DriverHandle, MoveTransfersOwnership) {
  released.clear();
  {
    FakeHandle first(1);
    FakeHandle second(std::move(first));
    EXPECT_EQ(first.get(), 0);
    EXPECT_EQ(second.get(), 1);
    std::vector<FakeHandle> owners;
    owners.push_back(std::move(second));
    owners.emplace_back(2);
    owners.emplace_back(3);  // reallocation moves the owners: still no release
    EXPECT_TRUE(released.empty());
  }
  EXPECT_EQ(released, (std::vector<int>{1, 2, 3}));
}

TEST(DriverHandle, MoveAssignReleasesThePreviousHandle) {
  released.clear();
  FakeHandle target(10);
  FakeHandle source(20);
  target = std::move(source);
  EXPECT_EQ(released, std::vector<int>{10});
  EXPECT_EQ(target.get(), 20);
  FakeHandle& sameObject = target;
  target = std::move(sameObject);  // self-move keeps the handle
  EXPECT_EQ(target.get(), 20);
  target.reset();
  EXPECT_EQ(released, (std::vector<int>{10, 20}));
  target.reset();  // already empty: nothing more
  EXPECT_EQ(released.size(), 2u);
}

TEST(DriverHandle, OutReleasesBeforeTheDriverWritesAgain) {
  released.clear();
  FakeHandle owner(5);
  *owner.out() = 6;  // what a create call does with the pointer it is given
  EXPECT_EQ(released, std::vector<int>{5});
  EXPECT_EQ(owner.get(), 6);
}

TEST(DriverHandle, DisownGivesTheHandleUpWithoutReleasingIt) {
  released.clear();
  {
    FakeHandle owner(9);
    EXPECT_EQ(owner.release(), 9);
    EXPECT_EQ(owner.get(), 0);
  }
  EXPECT_TRUE(released.empty());
}

// ------------------------------------------------------------------------------- OwnedRange
// Common's VMM range owner (support/vmm_owners.hpp), which 04, 05 and 08 use for
// cuMemAddressFree and cuMemUnmap: here with a fake release that records what it was given.

namespace {

std::vector<std::pair<CUdeviceptr, std::size_t>> freedRanges;  // in order

CUresult fakeFreeRange(CUdeviceptr base, std::size_t bytes) {
  freedRanges.emplace_back(base, bytes);
  return CUDA_SUCCESS;
}

using FakeRange = ms::OwnedRange<fakeFreeRange>;

}  // namespace

TEST(OwnedRange, ReleasesWhatItStillOwnsWithItsSize) {
  freedRanges.clear();
  {
    FakeRange reserved(4096);
    *reserved.out() = 0x1000;  // as cuMemAddressReserve writes it
    EXPECT_EQ(reserved.get(), 0x1000u);
    FakeRange mapped(4096, reserved.get());
    FakeRange adopted;
    adopted.own(0x9000, 64);
    FakeRange empty(128);  // nothing was written to it: nothing to release
  }
  // Reverse order of declaration: the mapping before the reservation it lies in.
  const std::vector<std::pair<CUdeviceptr, std::size_t>> expected = {
      {0x9000, 64}, {0x1000, 4096}, {0x1000, 4096}};
  EXPECT_EQ(freedRanges, expected);
}

TEST(OwnedRange, ReleaseGivesTheRangeUpAndMoveTransfersIt) {
  freedRanges.clear();
  {
    FakeRange first(256, 0x2000);
    EXPECT_EQ(first.release(), 0x2000u);  // the good path's checked call frees it
    EXPECT_EQ(first.get(), 0u);
    std::vector<FakeRange> ranges;
    ranges.emplace_back(512, 0x3000);
    ranges.emplace_back(512, 0x4000);  // reallocation moves the owners: still no release
    ranges.emplace_back(512, 0x5000);
    EXPECT_TRUE(freedRanges.empty());
  }
  const std::vector<std::pair<CUdeviceptr, std::size_t>> expected = {
      {0x3000, 512}, {0x4000, 512}, {0x5000, 512}};  // a vector destroys front to back
  EXPECT_EQ(freedRanges, expected);
}
