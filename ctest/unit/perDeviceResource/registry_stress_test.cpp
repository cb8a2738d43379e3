// Eight threads get, set and reset the resources of four devices at the same time (CI runs this
// under ThreadSanitizer). Invariants:
// - every answer is a resource of that device: its initial one or one set for it;
// - the initial resource of each device is made exactly once, although the first calls race;
// - no update is lost: every set/reset returns the resource it replaced, so per device the
//   replacements form one chain from the initial resource to the final one. Counting, for each
//   resource X, how often it was put in (`in`) and taken out (`out`):
//   in[X] - out[X] = [X is the final resource] - [X is the initial resource];
// - the memory each thread allocates through the resource it got is all given back.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "per_device_registry.hpp"
#include "test_resources.hpp"

namespace mr = memsamples::resource;
using mr::testing::MallocResource;

namespace {

constexpr int kThreads = 8;
constexpr int kDevices = 4;
constexpr int kResourcesPerDevice = 3;
constexpr int kIterations = 20000;

// The fake "current context" of each thread.
thread_local int currentDevice = 0;

struct Counts {
  std::map<const mr::MemoryResource*, long> in, out;
  long wrongAnswers = 0;
};

}  // namespace

TEST(RegistryStress, EightThreadsGetSetAndResetWithoutLosingAnUpdate) {
  std::atomic<int> factoryCalls[kDevices] = {};
  mr::PerDeviceResourceRegistry registry(
      kDevices,
      [&factoryCalls](int device) {
        ++factoryCalls[device];
        return std::make_unique<MallocResource>("initial " + std::to_string(device), device);
      },
      [] { return currentDevice; });

  std::vector<std::vector<std::unique_ptr<MallocResource>>> resources(kDevices);
  for (int d = 0; d < kDevices; ++d) {
    for (int r = 0; r < kResourcesPerDevice; ++r) {
      resources[static_cast<std::size_t>(d)].push_back(std::make_unique<MallocResource>(
          "device " + std::to_string(d) + " resource " + std::to_string(r), d));
    }
  }
  // What a thread may see for device d: known only after the initial resources exist, so the
  // threads check membership against the set resources plus "owned by the registry".
  const auto isSetResource = [&](int device, const mr::MemoryResource* resource) {
    for (const auto& candidate : resources[static_cast<std::size_t>(device)]) {
      if (candidate.get() == resource)
        return true;
    }
    return false;
  };

  std::vector<Counts> counts(kThreads);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Counts& mine = counts[static_cast<std::size_t>(t)];
      std::mt19937 random(static_cast<unsigned>(1234 + t));
      // Start together, so that the first get of each device races with the others.
      ++ready;
      while (ready.load() < kThreads)
        std::this_thread::yield();
      for (int i = 0; i < kIterations; ++i) {
        const int device = static_cast<int>(random() % kDevices);
        currentDevice = device;
        const int op = static_cast<int>(random() % 5);
        const mr::MemoryResource* answer = nullptr;
        if (op == 0 || op == 1) {
          // get / getCurrent, and use what came back.
          mr::MemoryResource* got = op == 0 ? registry.get(device) : registry.getCurrent();
          answer = got;
          void* ptr = got->allocate(64, nullptr);
          static_cast<unsigned char*>(ptr)[63] = static_cast<unsigned char>(i);
          got->deallocate(ptr, 64, nullptr);
        } else if (op == 2 || op == 3) {
          MallocResource* next = resources[static_cast<std::size_t>(device)]
                                          [static_cast<std::size_t>(random() % kResourcesPerDevice)]
                                              .get();
          answer = op == 2 ? registry.set(device, next) : registry.setCurrent(next);
          ++mine.in[next];
          ++mine.out[answer];
        } else {
          answer = registry.reset(device);
          ++mine.in[registry.initial(device)];
          ++mine.out[answer];
        }
        const bool fromThisDevice = answer->ownerDevice() == device &&
                                    (isSetResource(device, answer) ||
                                     answer->name() == "initial " + std::to_string(device));
        if (!fromThisDevice)
          ++mine.wrongAnswers;
      }
    });
  }
  for (std::thread& thread : threads)
    thread.join();

  long wrongAnswers = 0;
  std::map<const mr::MemoryResource*, long> in, out;
  for (const Counts& c : counts) {
    wrongAnswers += c.wrongAnswers;
    for (const auto& [resource, n] : c.in)
      in[resource] += n;
    for (const auto& [resource, n] : c.out)
      out[resource] += n;
  }
  EXPECT_EQ(wrongAnswers, 0);

  for (int d = 0; d < kDevices; ++d) {
    EXPECT_EQ(factoryCalls[d].load(), 1) << "device " << d;
    const mr::MemoryResource* initial = registry.initial(d);
    const mr::MemoryResource* final = registry.get(d);
    std::vector<const mr::MemoryResource*> all = {initial};
    for (const auto& resource : resources[static_cast<std::size_t>(d)])
      all.push_back(resource.get());
    long transitions = 0;
    for (const mr::MemoryResource* resource : all) {
      const long expected = (resource == final ? 1 : 0) - (resource == initial ? 1 : 0);
      EXPECT_EQ(in[resource] - out[resource], expected)
          << "device " << d << ", " << resource->name() << ": an update was lost or duplicated";
      transitions += in[resource];
    }
    EXPECT_GT(transitions, 0) << "device " << d << " was never changed";
  }
  for (const auto& perDevice : resources) {
    for (const auto& resource : perDevice)
      EXPECT_EQ(resource->outstanding(), 0) << resource->name();
  }
  for (int d = 0; d < kDevices; ++d) {
    auto* initial = dynamic_cast<MallocResource*>(registry.initial(d));
    ASSERT_NE(initial, nullptr);
    EXPECT_EQ(initial->outstanding(), 0);
  }
}

TEST(RegistryStress, SetAndSetBackOnDifferentDevicesDoNotInterfere) {
  mr::PerDeviceResourceRegistry registry(
      kThreads, [](int device) { return std::make_unique<MallocResource>("initial", device); },
      [] { return currentDevice; });
  std::atomic<long> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      MallocResource mine("thread " + std::to_string(t), t);
      currentDevice = t;
      for (int i = 0; i < kIterations / 4; ++i) {
        mr::MemoryResource* previous = registry.set(t, &mine);
        if (registry.getCurrent() != &mine || previous != registry.initial(t))
          ++wrong;
        registry.set(t, previous);
      }
      if (registry.get(t) != registry.initial(t))
        ++wrong;
    });
  }
  for (std::thread& thread : threads)
    thread.join();
  EXPECT_EQ(wrong.load(), 0);
}
