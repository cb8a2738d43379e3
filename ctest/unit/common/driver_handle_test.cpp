// DriverHandle: exactly one release per handle, whatever is moved where.
#include <gtest/gtest.h>

#include <vector>

#include "memsamples.hpp"

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
