// OwnedAllocations: the table in which the driver-backed resources keep their RAII owners.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "resources.hpp"
#include "test_support.hpp"

namespace mr = memsamples::resource;
using memsamples::test::messageOf;

namespace {

// A move-only owner that counts how many live owners are destroyed (i.e. "frees").
class FakeOwner {
 public:
  FakeOwner(int id, std::atomic<int>* frees) : id_(id), frees_(frees) {}
  FakeOwner(FakeOwner&& other) noexcept
      : id_(other.id_), frees_(std::exchange(other.frees_, nullptr)) {}
  FakeOwner& operator=(FakeOwner&& other) noexcept {
    std::swap(id_, other.id_);
    std::swap(frees_, other.frees_);
    return *this;
  }
  ~FakeOwner() {
    if (frees_ != nullptr)
      ++*frees_;
  }
  int id() const { return id_; }

 private:
  int id_;
  std::atomic<int>* frees_;
};

void* address(std::uintptr_t value) {
  return reinterpret_cast<void*>(value);
}

}  // namespace

TEST(OwnedAllocations, TakeReturnsTheOwnerThatWasAdded) {
  std::atomic<int> frees{0};
  mr::OwnedAllocations<FakeOwner> table("vmm (device 0)");
  table.add(address(0x1000), 4096, FakeOwner(1, &frees));
  table.add(address(0x2000), 64, FakeOwner(2, &frees));
  EXPECT_EQ(frees.load(), 0);
  {
    FakeOwner owner = table.take(address(0x2000), 64);
    EXPECT_EQ(owner.id(), 2);
    EXPECT_EQ(frees.load(), 0);
  }
  EXPECT_EQ(frees.load(), 1);  // the caller's owner freed it
  // 0x2000 left the table, 0x1000 is still in it; messages name the table's resource.
  EXPECT_EQ(messageOf<std::invalid_argument>([&] { table.take(address(0x2000), 64); }),
            "vmm (device 0): deallocate of 0x2000, which this resource did not allocate (or freed "
            "already)");
  EXPECT_EQ(table.take(address(0x1000), 4096).id(), 1);
  EXPECT_EQ(frees.load(), 2);
}

TEST(OwnedAllocations, AnUnknownPointerIsRefused) {
  std::atomic<int> frees{0};
  mr::OwnedAllocations<FakeOwner> table("managed (device 0)");
  table.add(address(0x1000), 16, FakeOwner(1, &frees));
  const std::string message =
      messageOf<std::invalid_argument>([&] { table.take(address(0x3000), 16); });
  EXPECT_NE(message.find("managed (device 0): deallocate of 0x3000, which this resource did not "
                         "allocate (or freed already)"),
            std::string::npos)
      << message;
  table.take(address(0x1000), 16);
  EXPECT_THROW(table.take(address(0x1000), 16), std::invalid_argument);  // freed already
}

TEST(OwnedAllocations, AWrongSizeIsRefusedAndTheEntryKept) {
  std::atomic<int> frees{0};
  mr::OwnedAllocations<FakeOwner> table("pinned host (device 0)");
  table.add(address(0x1000), 4096, FakeOwner(1, &frees));
  EXPECT_EQ(messageOf<std::invalid_argument>([&] { table.take(address(0x1000), 100); }),
            "pinned host (device 0): deallocate of 0x1000 with 100 bytes, but it was allocated "
            "with 4096 bytes");
  EXPECT_EQ(frees.load(), 0);  // the entry is kept: it is taken below
  EXPECT_EQ(table.take(address(0x1000), 4096).id(), 1);
}

TEST(OwnedAllocations, AnAddressHandedOutTwiceIsAnErrorAndTheNewOwnerIsFreed) {
  std::atomic<int> frees{0};
  mr::OwnedAllocations<FakeOwner> table("numa host node 0 (device 0)");
  table.add(address(0x1000), 8, FakeOwner(1, &frees));
  EXPECT_EQ(
      messageOf<std::logic_error>([&] { table.add(address(0x1000), 8, FakeOwner(2, &frees)); }),
      "numa host node 0 (device 0): address 0x1000 was handed out twice");
  EXPECT_EQ(frees.load(), 1);  // the second owner
  EXPECT_EQ(table.take(address(0x1000), 8).id(), 1);
}

TEST(OwnedAllocations, WhatIsLeftIsFreedWithTheTable) {
  std::atomic<int> frees{0};
  {
    mr::OwnedAllocations<FakeOwner> table("leaky");
    table.add(address(0x1000), 8, FakeOwner(1, &frees));
    table.add(address(0x2000), 8, FakeOwner(2, &frees));
  }
  EXPECT_EQ(frees.load(), 2);
}

TEST(OwnedAllocations, ClearFreesEverythingNowAndTheTableStaysUsable) {
  std::atomic<int> frees{0};
  mr::OwnedAllocations<FakeOwner> table("vmm (device 0)");
  table.add(address(0x1000), 8, FakeOwner(1, &frees));
  table.add(address(0x2000), 8, FakeOwner(2, &frees));
  table.clear();
  EXPECT_EQ(frees.load(), 2);
  EXPECT_THROW(table.take(address(0x1000), 8), std::invalid_argument);  // the table is empty
  EXPECT_THROW(table.take(address(0x2000), 8), std::invalid_argument);
  table.add(address(0x1000), 8, FakeOwner(3, &frees));  // the same address may come back
  EXPECT_EQ(table.take(address(0x1000), 8).id(), 3);
  EXPECT_EQ(frees.load(), 3);
}

TEST(OwnedAllocations, ManyThreadsAddAndTakeAtOnce) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 2000;
  std::atomic<int> frees{0};
  mr::OwnedAllocations<FakeOwner> table("shared");
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const auto key = static_cast<std::uintptr_t>((t * kPerThread + i + 1) * 16);
        table.add(address(key), 16, FakeOwner(i, &frees));
        if (i % 2 == 0)
          table.take(address(key), 16);
      }
    });
  }
  for (std::thread& thread : threads)
    thread.join();
  EXPECT_EQ(frees.load(), kThreads * kPerThread / 2);
  // Exactly the odd entries are left: each is taken once, the even ones are gone.
  for (int key = 1; key <= kThreads * kPerThread; ++key) {
    void* ptr = address(static_cast<std::uintptr_t>(key * 16));
    const int i = (key - 1) % kPerThread;
    if (i % 2 == 0)
      EXPECT_THROW(table.take(ptr, 16), std::invalid_argument);
    else
      table.take(ptr, 16);
  }
  EXPECT_EQ(frees.load(), kThreads * kPerThread);
}
