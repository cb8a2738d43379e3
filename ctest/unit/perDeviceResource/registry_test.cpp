// PerDeviceResourceRegistry semantics (RMM's: initial resource, set returns the previous one,
// reset) and the errors where RMM leaves behaviour undefined, with CPU-only resources.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "per_device_registry.hpp"
#include "test_resources.hpp"
#include "test_support.hpp"

namespace mr = memsamples::resource;
using memsamples::test::messageOf;
using mr::testing::MallocResource;

namespace {

// A registry of @p devices whose initial resources are MallocResources named "initial <d>" and
// tied to their device; counts the factory calls and answers a settable current device.
struct Fixture {
  explicit Fixture(int devices)
      : registry(
            devices,
            [this](int device) {
              ++factoryCalls;
              factoryDevices.push_back(device);
              return std::make_unique<MallocResource>("initial " + std::to_string(device), device);
            },
            [this] { return current; }) {}
  int factoryCalls = 0;
  std::vector<int> factoryDevices;
  int current = 0;
  mr::PerDeviceResourceRegistry registry;
};

}  // namespace

TEST(Registry, TheInitialResourceIsMadeOnFirstUseOncePerDevice) {
  Fixture fixture(3);
  EXPECT_EQ(fixture.factoryCalls, 0);  // nothing made at construction
  mr::MemoryResource* first = fixture.registry.get(1);
  EXPECT_EQ(first->name(), "initial 1");
  EXPECT_EQ(fixture.registry.get(1), first);
  EXPECT_EQ(fixture.registry.initial(1), first);
  EXPECT_EQ(fixture.factoryCalls, 1);
  mr::MemoryResource* other = fixture.registry.get(2);
  EXPECT_NE(other, first);
  EXPECT_EQ(fixture.factoryDevices, (std::vector<int>{1, 2}));
  EXPECT_EQ(fixture.registry.deviceCount(), 3);
}

TEST(Registry, SetReturnsThePreviousResource) {
  Fixture fixture(2);
  MallocResource a("a", 0), b("b", 0);
  mr::MemoryResource* initial = fixture.registry.initial(0);
  EXPECT_EQ(fixture.registry.set(0, &a), initial);
  EXPECT_EQ(fixture.registry.get(0), &a);
  EXPECT_EQ(fixture.registry.set(0, &b), &a);
  EXPECT_EQ(fixture.registry.get(0), &b);
  EXPECT_EQ(fixture.registry.get(1)->name(), "initial 1");  // other devices are untouched
}

TEST(Registry, ResetPutsTheInitialResourceBackAndReturnsThePreviousOne) {
  Fixture fixture(1);
  MallocResource a("a", 0);
  mr::MemoryResource* initial = fixture.registry.get(0);
  fixture.registry.set(0, &a);
  EXPECT_EQ(fixture.registry.reset(0), &a);
  EXPECT_EQ(fixture.registry.get(0), initial);
  EXPECT_EQ(fixture.registry.reset(0), initial);  // resetting again: the initial was current
  EXPECT_EQ(fixture.registry.get(0), initial);
}

TEST(Registry, ResetOfADeviceNeverUsedReturnsItsInitialResource) {
  Fixture fixture(2);
  mr::MemoryResource* previous = fixture.registry.reset(1);
  EXPECT_EQ(previous->name(), "initial 1");
  EXPECT_EQ(fixture.factoryCalls, 1);
}

TEST(Registry, SettingNullOrTheInitialResourceIsAReset) {
  Fixture fixture(1);
  MallocResource a("a", 0);
  mr::MemoryResource* initial = fixture.registry.get(0);
  fixture.registry.set(0, &a);
  EXPECT_EQ(fixture.registry.set(0, nullptr), &a);
  EXPECT_EQ(fixture.registry.get(0), initial);
  fixture.registry.set(0, &a);
  EXPECT_EQ(fixture.registry.set(0, initial), &a);
  EXPECT_EQ(fixture.registry.get(0), initial);
}

TEST(Registry, AResourceWithoutOwnerDeviceFitsAnyDevice) {
  Fixture fixture(2);
  MallocResource shared("shared");
  fixture.registry.set(0, &shared);
  fixture.registry.set(1, &shared);
  EXPECT_EQ(fixture.registry.get(0), &shared);
  EXPECT_EQ(fixture.registry.get(1), &shared);
}

TEST(Registry, OutOfRangeIdsAreClearErrors) {
  Fixture fixture(2);
  MallocResource a("a");
  const std::string tooLarge =
      "per-device resource registry: device 2 is out of range (this registry has 2 devices: "
      "ids 0..1)";
  EXPECT_EQ(messageOf<std::out_of_range>([&] { fixture.registry.get(2); }), tooLarge);
  EXPECT_EQ(messageOf<std::out_of_range>([&] { fixture.registry.set(2, &a); }), tooLarge);
  EXPECT_EQ(messageOf<std::out_of_range>([&] { fixture.registry.reset(2); }), tooLarge);
  EXPECT_EQ(messageOf<std::out_of_range>([&] { fixture.registry.initial(2); }), tooLarge);
  EXPECT_EQ(messageOf<std::out_of_range>([&] { fixture.registry.get(-1); }),
            "per-device resource registry: device -1 is out of range (this registry has 2 "
            "devices: ids 0..1)");
  EXPECT_EQ(fixture.factoryCalls, 0);
}

TEST(Registry, OutOfRangeMessagesForOneAndNoDevices) {
  Fixture one(1);
  EXPECT_EQ(messageOf<std::out_of_range>([&] { one.registry.get(1); }),
            "per-device resource registry: device 1 is out of range (this registry has 1 "
            "device: id 0)");
  Fixture none(0);
  EXPECT_EQ(messageOf<std::out_of_range>([&] { none.registry.get(0); }),
            "per-device resource registry: device 0 is out of range (this registry has no "
            "devices)");
}

TEST(Registry, TheCurrentDeviceFunctionsFollowTheQuery) {
  Fixture fixture(3);
  MallocResource a("a", 2);
  fixture.current = 2;
  EXPECT_EQ(fixture.registry.currentDevice(), 2);
  EXPECT_EQ(fixture.registry.getCurrent()->name(), "initial 2");
  EXPECT_EQ(fixture.registry.setCurrent(&a)->name(), "initial 2");
  EXPECT_EQ(fixture.registry.get(2), &a);
  EXPECT_EQ(fixture.registry.getCurrent(), &a);
  fixture.current = 0;
  EXPECT_EQ(fixture.registry.getCurrent()->name(), "initial 0");
  fixture.current = 2;
  EXPECT_EQ(fixture.registry.resetCurrent(), &a);
  EXPECT_EQ(fixture.registry.getCurrent()->name(), "initial 2");
}

TEST(Registry, AnOutOfRangeCurrentDeviceIsNamedAsSuch) {
  Fixture fixture(2);
  fixture.current = 5;
  EXPECT_EQ(messageOf<std::out_of_range>([&] { fixture.registry.getCurrent(); }),
            "per-device resource registry: the current device 5 is out of range (this "
            "registry has 2 devices: ids 0..1)");
  MallocResource a("a");
  EXPECT_THROW(fixture.registry.setCurrent(&a), std::out_of_range);
  EXPECT_THROW(fixture.registry.resetCurrent(), std::out_of_range);
}

TEST(Registry, ErrorsOfTheCurrentDeviceQueryPropagate) {
  mr::PerDeviceResourceRegistry registry(
      1, [](int device) { return std::make_unique<MallocResource>("i", device); },
      []() -> int { throw std::runtime_error("cuCtxGetDevice failed: no current context"); });
  EXPECT_EQ(messageOf<std::runtime_error>([&] { registry.getCurrent(); }),
            "cuCtxGetDevice failed: no current context");
  EXPECT_EQ(registry.get(0)->name(), "i");  // per-device calls do not need it
}

TEST(Registry, AResourceOfAnotherDeviceIsRefused) {
  Fixture fixture(2);
  MallocResource other("pinned host (device 1)", 1);
  EXPECT_EQ(messageOf<std::invalid_argument>([&] { fixture.registry.set(0, &other); }),
            "per-device resource registry: resource 'pinned host (device 1)' belongs to device "
            "1, not to device 0");
  EXPECT_EQ(fixture.registry.get(0)->name(), "initial 0");  // unchanged
}

TEST(Registry, AFailingFactoryStoresNothingAndIsRetried) {
  int calls = 0;
  mr::PerDeviceResourceRegistry registry(
      1,
      [&calls](int device) -> std::unique_ptr<mr::MemoryResource> {
        if (++calls == 1)
          throw std::runtime_error("cuDeviceGetDefaultMemPool failed");
        return std::make_unique<MallocResource>("second try", device);
      },
      [] { return 0; });
  MallocResource a("a");
  EXPECT_EQ(messageOf<std::runtime_error>([&] { registry.get(0); }),
            "cuDeviceGetDefaultMemPool failed");
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(registry.get(0)->name(), "second try");
  EXPECT_EQ(calls, 2);
}

TEST(Registry, SetFailsAndChangesNothingWhenTheInitialResourceCannotBeMade) {
  bool fail = true;
  mr::PerDeviceResourceRegistry registry(
      1,
      [&fail](int device) -> std::unique_ptr<mr::MemoryResource> {
        if (fail)
          throw std::runtime_error("no pool");
        return std::make_unique<MallocResource>("initial", device);
      },
      [] { return 0; });
  MallocResource a("a");
  EXPECT_THROW(registry.set(0, &a), std::runtime_error);  // the previous one cannot be named
  fail = false;
  EXPECT_EQ(registry.get(0)->name(), "initial");
}

TEST(Registry, TheFactoryMustReturnAResourceOfItsDevice) {
  mr::PerDeviceResourceRegistry empty(
      1, [](int) { return std::unique_ptr<mr::MemoryResource>(); }, [] { return 0; });
  EXPECT_EQ(messageOf<std::runtime_error>([&] { empty.get(0); }),
            "per-device resource registry: the initial-resource factory returned no resource "
            "for device 0");
  mr::PerDeviceResourceRegistry wrong(
      2, [](int) { return std::make_unique<MallocResource>("device pool (device 1)", 1); },
      [] { return 0; });
  EXPECT_EQ(messageOf<std::invalid_argument>([&] { wrong.get(0); }),
            "per-device resource registry: the initial resource 'device pool (device 1)' "
            "belongs to device 1, not to device 0");
}

TEST(Registry, ConstructorArgumentsAreChecked) {
  const auto factory = [](int device) { return std::make_unique<MallocResource>("i", device); };
  const auto current = [] { return 0; };
  EXPECT_EQ(messageOf<std::invalid_argument>(
                [&] { mr::PerDeviceResourceRegistry registry(-1, factory, current); }),
            "per-device resource registry: the device count must not be negative (got -1)");
  EXPECT_EQ(messageOf<std::invalid_argument>(
                [&] { mr::PerDeviceResourceRegistry registry(1, nullptr, current); }),
            "per-device resource registry: an initial-resource factory is required");
  EXPECT_EQ(messageOf<std::invalid_argument>(
                [&] { mr::PerDeviceResourceRegistry registry(1, factory, nullptr); }),
            "per-device resource registry: a current-device query is required");
}

TEST(Registry, OwnsTheInitialResourcesButNotTheOnesThatWereSet) {
  MallocResource kept("kept", 0);
  const int before = MallocResource::destroyed().load();
  {
    Fixture fixture(2);
    fixture.registry.get(0);
    fixture.registry.get(1);
    fixture.registry.set(0, &kept);
  }
  // The two initial resources went with the registry; `kept` did not.
  EXPECT_EQ(MallocResource::destroyed().load() - before, 2);
  void* ptr = kept.allocate(8, nullptr);  // still alive and usable
  kept.deallocate(ptr, 8, nullptr);
}

// Setting for a scope is set() and, at the scope's end, set() of what it returned: overrides
// nest, and each end puts back exactly the resource its own set() replaced. (The sample's
// unwinding path, Resources' destructor, is tested in measure_test.cpp.)
TEST(Registry, SetThenSetBackWhatItReturnedNests) {
  Fixture fixture(2);
  MallocResource a("a", 1), b("b", 1);
  mr::MemoryResource* initial = fixture.registry.get(1);
  mr::MemoryResource* outer = fixture.registry.set(1, &a);
  EXPECT_EQ(outer, initial);
  EXPECT_EQ(fixture.registry.get(1), &a);
  mr::MemoryResource* inner = fixture.registry.set(1, &b);
  EXPECT_EQ(inner, &a);
  EXPECT_EQ(fixture.registry.get(1), &b);
  EXPECT_EQ(fixture.registry.set(1, inner), &b);
  EXPECT_EQ(fixture.registry.get(1), &a);
  EXPECT_EQ(fixture.registry.set(1, outer), &a);
  EXPECT_EQ(fixture.registry.get(1), initial);
}

TEST(Registry, ARefusedSetChangesNothing) {
  Fixture fixture(2);
  MallocResource other("other", 1);
  EXPECT_THROW(fixture.registry.set(0, &other), std::invalid_argument);
  EXPECT_THROW(fixture.registry.set(9, &other), std::out_of_range);
  EXPECT_EQ(fixture.registry.get(0)->name(), "initial 0");
}

// The current device is asked once: a thread that keeps the device setCurrent() answered can
// set the previous resource back there after it moved to another device.
TEST(Registry, SetCurrentOnceThenSetBackOnThatDevice) {
  Fixture fixture(2);
  MallocResource a("a", 1);
  mr::MemoryResource* initial0 = fixture.registry.get(0);
  mr::MemoryResource* initial1 = fixture.registry.get(1);
  fixture.current = 1;
  const int device = fixture.registry.currentDevice();
  EXPECT_EQ(device, 1);
  mr::MemoryResource* previous = fixture.registry.set(device, &a);
  EXPECT_EQ(previous, initial1);
  EXPECT_EQ(fixture.registry.getCurrent(), &a);
  fixture.current = 0;  // the thread moves to another device before it sets back
  fixture.registry.set(device, previous);
  // Device 1 got its previous resource back; device 0 was never touched.
  EXPECT_EQ(fixture.registry.get(1), initial1);
  EXPECT_EQ(fixture.registry.get(0), initial0);
}

TEST(Registry, SetCurrentReturnsThePreviousResourceNotTheInitialOne) {
  Fixture fixture(1);
  MallocResource a("a", 0), b("b", 0);
  fixture.registry.set(0, &a);
  mr::MemoryResource* previous = fixture.registry.setCurrent(&b);
  EXPECT_EQ(previous, &a);
  EXPECT_EQ(fixture.registry.getCurrent(), &b);
  EXPECT_EQ(fixture.registry.setCurrent(previous), &b);
  EXPECT_EQ(fixture.registry.getCurrent(), &a);
  fixture.registry.reset(0);
}

TEST(Registry, SetCurrentChangesNothingWhenTheDeviceIsBad) {
  Fixture fixture(1);
  MallocResource a("a", 0), other("other", 1);
  fixture.current = 4;
  EXPECT_EQ(messageOf<std::out_of_range>([&] { fixture.registry.setCurrent(&a); }),
            messageOf<std::out_of_range>([&] { fixture.registry.currentDevice(); }));
  fixture.current = 0;
  EXPECT_THROW(fixture.registry.setCurrent(&other), std::invalid_argument);
  EXPECT_EQ(fixture.registry.get(0)->name(), "initial 0");
}

// RMM's free functions forward to processResourceRegistry(), which the program defines (the
// sample: perDeviceResource.cpp, with the driver); this test binary defines one with CPU-only
// resources and a thread-local fake current device.
namespace {
thread_local int processCurrentDevice = 0;
}  // namespace

mr::PerDeviceResourceRegistry& mr::processResourceRegistry() {
  static PerDeviceResourceRegistry registry(
      2,
      [](int device) {
        return std::make_unique<MallocResource>("process initial " + std::to_string(device),
                                                device);
      },
      [] { return processCurrentDevice; });
  return registry;
}

TEST(ProcessRegistry, TheFreeFunctionsForwardToTheOneRegistry) {
  MallocResource a("a", 1);
  processCurrentDevice = 1;
  mr::MemoryResource* initial = mr::getCurrentDeviceResource();
  EXPECT_EQ(initial->name(), "process initial 1");
  EXPECT_EQ(mr::getPerDeviceResource(1), initial);
  EXPECT_EQ(mr::setCurrentDeviceResource(&a), initial);
  EXPECT_EQ(mr::getPerDeviceResource(1), &a);
  EXPECT_EQ(mr::resetCurrentDeviceResource(), &a);
  EXPECT_EQ(mr::setPerDeviceResource(1, &a), initial);
  EXPECT_EQ(mr::getCurrentDeviceResource(), &a);
  EXPECT_EQ(mr::resetPerDeviceResource(1), &a);
  EXPECT_EQ(mr::getCurrentDeviceResource(), initial);
  EXPECT_EQ(mr::getPerDeviceResource(0)->name(), "process initial 0");
  EXPECT_EQ(messageOf<std::out_of_range>([] { mr::getPerDeviceResource(2); }),
            "per-device resource registry: device 2 is out of range (this registry has 2 "
            "devices: ids 0..1)");
  processCurrentDevice = 0;
}
