// The managed kind's guard and budget (resource_plan.cpp): what they refuse, with which message.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "resource_plan.hpp"

namespace mm = memsamples::resource;

namespace {

std::string refusal(std::uint64_t bytes, std::uint64_t freeBytes) {
  try {
    mm::checkManagedRequest(bytes, freeBytes);
  } catch (const mm::ManagedAllocationRefused& error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST(ManagedGuard, AcceptsUpToFreeMemory) {
  EXPECT_EQ(refusal(1, 1), "");
  EXPECT_EQ(refusal(64ull << 20, 1ull << 30), "");
  EXPECT_EQ(refusal(1ull << 30, 1ull << 30), "");
}

TEST(ManagedGuard, RefusesZeroBytes) {
  EXPECT_EQ(refusal(0, 1ull << 30),
            "cuMemAllocManaged of 0 bytes refused: a managed allocation needs at least one byte "
            "(the driver would return CUDA_ERROR_INVALID_VALUE)");
}

TEST(ManagedGuard, RefusesMoreThanFreeMemory) {
  // Sizes that would print the same when rounded are printed exactly.
  EXPECT_EQ(refusal((1ull << 30) + 1, 1ull << 30),
            "cuMemAllocManaged of 1073741825 bytes refused: the device has only 1073741824 bytes "
            "free, and over-subscribing managed memory can stall a shared GPU; ask for at most "
            "1073741824 bytes");
  EXPECT_EQ(refusal(2ull << 30, 1ull << 30),
            "cuMemAllocManaged of 2.00 GiB refused: the device has only 1.00 GiB free, and "
            "over-subscribing managed memory can stall a shared GPU; ask for at most 1.00 GiB");
  EXPECT_EQ(refusal(200ull << 30, 130ull << 30),
            "cuMemAllocManaged of 200 GiB refused: the device has only 130 GiB free, and "
            "over-subscribing managed memory can stall a shared GPU; ask for at most 130 GiB");
  EXPECT_NE(refusal(1, 0), "");
}

TEST(ManagedBudget, ChargesAndReleases) {
  mm::ManagedMemoryBudget budget(10ull << 20);
  EXPECT_EQ(budget.limit(), 10ull << 20);
  budget.reserve(4ull << 20);
  budget.reserve(6ull << 20);
  EXPECT_EQ(budget.reserved(), 10ull << 20);
  budget.release(4ull << 20);
  EXPECT_EQ(budget.reserved(), 6ull << 20);
  budget.reserve(4ull << 20);
  EXPECT_EQ(budget.reserved(), 10ull << 20);
  budget.release(10ull << 20);
  EXPECT_EQ(budget.reserved(), 0u);
}

TEST(ManagedBudget, ReleasingMoreThanIsChargedIsALogicErrorAndChangesNothing) {
  mm::ManagedMemoryBudget budget(100ull << 20);
  budget.reserve(10ull << 20);
  try {
    budget.release(100ull << 20);
    FAIL() << "the budget accepted 100 MiB back with 10 MiB charged";
  } catch (const std::logic_error& error) {
    EXPECT_EQ(std::string(error.what()),
              "ManagedMemoryBudget::release: 100 MiB given back, but only 10.0 MiB is charged; a "
              "caller released memory it never reserved");
  }
  EXPECT_EQ(budget.reserved(), 10ull << 20);
  // One byte too many still counts, and is printed exactly.
  try {
    budget.release((10ull << 20) + 1);
    FAIL() << "the budget accepted one byte more than charged";
  } catch (const std::logic_error& error) {
    EXPECT_EQ(std::string(error.what()),
              "ManagedMemoryBudget::release: 10485761 bytes given back, but only 10485760 bytes "
              "is charged; a caller released memory it never reserved");
  }
  EXPECT_EQ(budget.reserved(), 10ull << 20);
  mm::ManagedMemoryBudget empty(1ull << 20);
  EXPECT_THROW(empty.release(1), std::logic_error);
  EXPECT_EQ(empty.reserved(), 0u);
}

TEST(ManagedBudget, RefusesWhatWouldExceedTheLimitAndChargesNothing) {
  mm::ManagedMemoryBudget budget(10ull << 20);
  budget.reserve(8ull << 20);
  try {
    budget.reserve(3ull << 20);
    FAIL() << "the budget accepted 3 MiB with 2 MiB left";
  } catch (const mm::ManagedAllocationRefused& error) {
    EXPECT_EQ(std::string(error.what()),
              "cuMemAllocManaged of 3.00 MiB refused: the managed-memory budget of 10.0 MiB has "
              "2.00 MiB left (8.00 MiB already allocated)");
  }
  EXPECT_EQ(budget.reserved(), 8ull << 20);
  EXPECT_THROW(budget.reserve(UINT64_MAX), mm::ManagedAllocationRefused);  // no overflow
  EXPECT_EQ(budget.reserved(), 8ull << 20);
  // A request that rounds to what is left is printed exactly.
  try {
    budget.reserve((2ull << 20) + 1);
    FAIL() << "the budget accepted one byte more than it has left";
  } catch (const mm::ManagedAllocationRefused& error) {
    EXPECT_EQ(std::string(error.what()),
              "cuMemAllocManaged of 2097153 bytes refused: the managed-memory budget of 10.0 MiB "
              "has 2097152 bytes left (8.00 MiB already allocated)");
  }
}

TEST(ManagedBudget, IsSafeToShareBetweenThreads) {
  mm::ManagedMemoryBudget budget(1000);
  std::vector<std::thread> threads;
  std::vector<int> granted(8, 0);
  for (std::size_t t = 0; t < granted.size(); ++t) {
    threads.emplace_back([&budget, &granted, t] {
      for (int i = 0; i < 1000; ++i) {
        try {
          budget.reserve(1);
          ++granted[t];
        } catch (const mm::ManagedAllocationRefused&) {
        }
      }
    });
  }
  for (std::thread& thread : threads)
    thread.join();
  int total = 0;
  for (int count : granted)
    total += count;
  EXPECT_EQ(total, 1000);
  EXPECT_EQ(budget.reserved(), 1000u);
}
