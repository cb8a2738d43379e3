// The resource interface's shared checks and ResourceAllocation, with a malloc-backed resource.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "memory_resource.hpp"
#include "test_resources.hpp"

namespace mr = memsamples::resource;
using mr::testing::fakeStream;
using mr::testing::MallocResource;

TEST(MemoryResource, AllocateAndDeallocateForwardBytesAndStream) {
  MallocResource resource("heap");
  void* ptr = resource.allocate(100, fakeStream(0x10));
  ASSERT_NE(ptr, nullptr);
  std::memset(ptr, 0xab, 100);  // usable memory
  EXPECT_EQ(resource.lastBytes(), 100u);
  EXPECT_EQ(resource.lastStream(), fakeStream(0x10));
  resource.deallocate(ptr, 100, fakeStream(0x20));
  EXPECT_EQ(resource.lastStream(), fakeStream(0x20));
  EXPECT_EQ(resource.outstanding(), 0);
}

TEST(MemoryResource, ZeroBytesIsRefusedWithTheResourceName) {
  MallocResource resource("heap");
  try {
    resource.allocate(0, nullptr);
    FAIL() << "allocate(0) must throw";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "heap: allocate of 0 bytes (at least 1 byte is required)");
  }
  EXPECT_EQ(resource.allocations(), 0);
}

TEST(MemoryResource, DeallocatingNullDoesNothing) {
  MallocResource resource("heap");
  resource.deallocate(nullptr, 64, nullptr);
  EXPECT_EQ(resource.deallocations(), 0);
}

TEST(MemoryResource, EqualityIsIdentityOrTheResourcesOwnRule) {
  MallocResource a("a"), b("b");
  MallocResource device("d", std::nullopt, {false, true, true});
  EXPECT_TRUE(a.isEqual(a));
  EXPECT_TRUE(a == b);  // MallocResource's rule: same properties
  EXPECT_TRUE(a != device);
  EXPECT_FALSE(device.isEqual(a));
}

TEST(MemoryResource, KernelAddressOfDeviceAccessibleMemoryIsThePointer) {
  MallocResource mapped("mapped", std::nullopt, {true, true, false});
  int value = 0;
  EXPECT_EQ(mapped.kernelAddress(&value), mr::toDevicePointer(&value));
  EXPECT_EQ(mr::fromDevicePointer(mr::toDevicePointer(&value)), static_cast<void*>(&value));
}

TEST(MemoryResource, KernelAddressOfHostOnlyMemoryIsRefused) {
  MallocResource host("heap");
  int value = 0;
  try {
    host.kernelAddress(&value);
    FAIL() << "kernelAddress must throw for host-only memory";
  } catch (const std::logic_error& error) {
    EXPECT_STREQ(error.what(),
                 "heap: its memory is not accessible from a device, so it has no kernel address");
  }
}

TEST(MemoryResource, PropertiesAndOwnerAreReported) {
  MallocResource owned("owned", 3, {true, true, false});
  EXPECT_EQ(owned.ownerDevice(), 3);
  EXPECT_TRUE(owned.properties().hostAccessible);
  EXPECT_TRUE(owned.properties().deviceAccessible);
  EXPECT_FALSE(owned.properties().streamOrdered);
  EXPECT_EQ(owned.name(), "owned");
  EXPECT_EQ(MallocResource("free").ownerDevice(), std::nullopt);
}

TEST(DescribeProperties, NamesEveryCombination) {
  EXPECT_EQ(mr::describeProperties({false, false, false}), "none");
  EXPECT_EQ(mr::describeProperties({true, false, false}), "host");
  EXPECT_EQ(mr::describeProperties({false, true, false}), "device");
  EXPECT_EQ(mr::describeProperties({true, true, false}), "host+device");
  EXPECT_EQ(mr::describeProperties({false, true, true}), "device, stream-ordered");
  EXPECT_EQ(mr::describeProperties({false, false, true}), "none, stream-ordered");
}

TEST(ResourceAllocation, GivesTheMemoryBackWhenDestroyed) {
  MallocResource resource("heap");
  {
    mr::ResourceAllocation allocation(resource, 256, fakeStream(7));
    EXPECT_NE(allocation.get(), nullptr);
    EXPECT_EQ(allocation.size(), 256u);
    EXPECT_EQ(allocation.resource(), &resource);
    EXPECT_EQ(resource.lastStream(), fakeStream(7));  // allocated on the stream it was given
    allocation.as<unsigned char>()[255] = 1;
    EXPECT_EQ(resource.outstanding(), 1);
  }
  EXPECT_EQ(resource.outstanding(), 0);
  EXPECT_EQ(resource.lastStream(), fakeStream(7));  // deallocated on its own stream
  EXPECT_EQ(resource.lastBytes(), 256u);
}

TEST(ResourceAllocation, MovingTransfersOwnership) {
  MallocResource resource("heap");
  mr::ResourceAllocation first(resource, 32, nullptr);
  void* ptr = first.get();
  mr::ResourceAllocation second(std::move(first));
  EXPECT_EQ(first.get(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_EQ(first.resource(), nullptr);
  EXPECT_EQ(second.get(), ptr);
  EXPECT_EQ(resource.outstanding(), 1);

  mr::ResourceAllocation third(resource, 64, nullptr);
  third = std::move(second);  // third's own 64 bytes are given back
  EXPECT_EQ(third.get(), ptr);
  EXPECT_EQ(third.size(), 32u);
  EXPECT_EQ(resource.outstanding(), 1);
  third = mr::ResourceAllocation();
  EXPECT_EQ(resource.outstanding(), 0);
}

TEST(ResourceAllocation, ReleaseReportsErrorsAndLeavesTheOwnerEmpty) {
  MallocResource resource("heap");
  mr::ResourceAllocation allocation(resource, 16, nullptr);
  void* ptr = allocation.get();
  resource.failDeallocate(true);
  EXPECT_THROW(allocation.release(), std::runtime_error);
  EXPECT_EQ(allocation.get(), nullptr);
  allocation.release();  // empty: nothing happens
  resource.failDeallocate(false);
  resource.deallocate(ptr, 16, nullptr);  // the test frees what the failed call left
  EXPECT_EQ(resource.outstanding(), 0);
}

TEST(ResourceAllocation, DestructorSwallowsDeallocateErrors) {
  MallocResource resource("heap");
  void* ptr = nullptr;
  {
    mr::ResourceAllocation allocation(resource, 16, nullptr);
    ptr = allocation.get();
    resource.failDeallocate(true);
  }  // no exception escapes
  resource.failDeallocate(false);
  resource.deallocate(ptr, 16, nullptr);
  EXPECT_EQ(resource.outstanding(), 0);
}

TEST(ResourceAllocation, AFailedAllocationLeavesNothing) {
  MallocResource resource("heap");
  EXPECT_THROW(mr::ResourceAllocation(resource, 0, nullptr), std::invalid_argument);
  EXPECT_EQ(resource.allocations(), 0);
}

TEST(ResourceAllocation, KernelAddressComesFromTheResource) {
  MallocResource mapped("mapped", std::nullopt, {true, true, false});
  mr::ResourceAllocation allocation(mapped, 8, nullptr);
  EXPECT_EQ(allocation.kernelAddress(), mr::toDevicePointer(allocation.get()));
}

TEST(ResourceAllocation, KernelAddressOfAnEmptyAllocationIsALogicError) {
  const std::string expected =
      "ResourceAllocation::kernelAddress: the allocation is empty (default-constructed, moved "
      "from or released), so it has no address";
  mr::ResourceAllocation empty;
  try {
    empty.kernelAddress();
    FAIL() << "kernelAddress of an empty allocation must throw";
  } catch (const std::logic_error& error) {
    EXPECT_EQ(error.what(), expected);
  }
  MallocResource mapped("mapped", std::nullopt, {true, true, false});
  mr::ResourceAllocation first(mapped, 8, nullptr);
  mr::ResourceAllocation second(std::move(first));
  // NOLINTNEXTLINE(bugprone-use-after-move): the moved-from object is empty by contract
  EXPECT_THROW(first.kernelAddress(), std::logic_error);
  second.release();
  EXPECT_THROW(second.kernelAddress(), std::logic_error);
  EXPECT_EQ(mapped.outstanding(), 0);
}
