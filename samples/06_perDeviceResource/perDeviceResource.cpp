/**
 * @file perDeviceResource.cpp
 * @brief Interchangeable memory resources behind a thread-safe per-device registry: the same
 *        vector add on device-pool, managed, pinned host, NUMA-bound host and striped VMM memory,
 *        allocated from several host threads through the registry and verified exactly.
 *
 * Code that needs memory asks the registry "which resource does this device use?" and allocates
 * from it; which kind of memory that is gets decided in one place, at run time: RMM's per-device
 * resources (seed 002) on the CUDA driver API. Read memory_resource.hpp (the interface) and
 * per_device_registry.hpp (the registry) first; this file uses them, step by step:
 *
 * 1. **cuInit**, the device, and for every device a context, the kernel and a stream
 *    (DeviceSetup, as in 01); the vectors fit the smallest free memory of them all.
 * 2. **The registry** (processResourceRegistry() below: **cuDeviceGetCount** devices, each on its
 *    default memory pool first, **cuCtxGetDevice** as "the current device"): get, set, reset for
 *    the current device, and std::out_of_range for a device that does not exist.
 * 3. **One resource per kind** for the device (resources.cpp); a missing kind is left out.
 * 4. **Each kind in turn, from several threads**: set for the device, then `--threads` threads
 *    ask getCurrentDeviceResource() and allocate through it at once; C = A + B is verified.
 * 5. **A resource per device** (2+ GPUs): another device's pool refuses to allocate here; one
 *    thread per device sets, gets and resets the resource of *its* current device at once.
 * 6. **Latency** of every kind, measured the same way (perDeviceResource_measure.cpp).
 * 7. **The verdict**: PASS when every vector add is exact and every registry answer expected.
 */
#include <algorithm>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "memsamples.hpp"
#include "perDeviceResource_measure.hpp"
#include "per_device_registry.hpp"
#include "resources.hpp"

namespace ms = memsamples;
namespace mr = memsamples::resource;

// [process-registry]
// The registry behind getCurrentDeviceResource() and the other free functions: this machine's
// devices, each starting on its default memory pool, and the device of the calling thread's
// current context as "the current device". Made on first use, after cuInit.
mr::PerDeviceResourceRegistry& mr::processResourceRegistry() {
  static PerDeviceResourceRegistry registry(
      [] {
        int count = 0;
        ms::check(cuDeviceGetCount(&count), "cuDeviceGetCount");
        return count;
      }(),
      [](int ordinal) {
        CUdevice device = 0;
        ms::check(cuDeviceGet(&device, ordinal), "cuDeviceGet");
        return makeDevicePoolResource(device);
      },
      [] {
        CUdevice device = 0;  // a handle, not an ordinal: the registry counts ordinals
        ms::check(cuCtxGetDevice(&device), "cuCtxGetDevice");
        return ms::deviceOrdinal(device);
      });
  return registry;
}
// [process-registry]

namespace {

constexpr std::uint64_t kDefaultVectorBytes = 64ull << 20;
constexpr std::size_t kScratchBytes = 64 << 10;  // per scratch allocation of step 4
constexpr int kScratchPerThread = 8;

struct Options {
  ms::CommonOptions common;
  std::optional<std::uint64_t> sizeBytes, largeBytes;
  std::string resources;
  int threads = 4;
  int vmmStripes = 2;
  bool noLatency = false;
};

// Joins every thread, then rethrows the first error any of them had.
void joinAll(std::vector<std::thread>& threads, const std::vector<std::exception_ptr>& errors) {
  for (std::thread& thread : threads)
    thread.join();
  for (const std::exception_ptr& error : errors)
    if (error)
      std::rethrow_exception(error);
}

// [threads]
// Thread t pushes the context and allocates, through getCurrentDeviceResource(), vectors t,
// t + threads, ... of A, B, C and scratch buffers that it fills and frees at once (a
// stream-ordered free follows the fill in the stream; the other kinds synchronize it first).
mr::Vectors allocateFromThreads(const mr::DeviceSetup& setup, const mr::MemoryResource& expected,
                                std::uint64_t bytes, int threads) {
  std::vector<mr::ResourceAllocation> vectors(3);
  std::vector<std::exception_ptr> errors(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      try {
        ms::ScopedContext scope(setup.context.get());  // this thread's current device
        mr::MemoryResource* resource = mr::getCurrentDeviceResource();
        if (resource != &expected)
          throw std::runtime_error("thread " + std::to_string(t) +
                                   ": getCurrentDeviceResource() returned '" + resource->name() +
                                   "', expected '" + expected.name() + "'");
        for (int v = t; v < 3; v += threads)
          vectors[v] = mr::ResourceAllocation(*resource, bytes, setup.stream.get());
        for (int i = 0; i < kScratchPerThread; ++i) {
          mr::ResourceAllocation scratch(*resource, kScratchBytes, setup.stream.get());
          const auto value = static_cast<unsigned char>(t + i);
          if (resource->properties().hostAccessible)
            std::memset(scratch.get(), value, scratch.size());
          else
            ms::check(
                cuMemsetD8Async(scratch.kernelAddress(), value, scratch.size(), setup.stream.get()),
                "cuMemsetD8Async");
          scratch.release();
        }
      } catch (...) {
        errors[t] = std::current_exception();
      }
    });
  }
  joinAll(workers, errors);
  return mr::Vectors{std::move(vectors[0]), std::move(vectors[1]), std::move(vectors[2])};
}
// [threads]

ms::Verdict runPerDeviceResource(const Options& options, ms::Report& report) {
  std::ostream& out = report.out();
  ms::JsonObject& json = report.json();
  mr::Checks checks;
  const bool kindsGiven = !options.resources.empty();
  const std::vector<mr::ResourceKind> kinds =
      kindsGiven ? mr::parseResourceKinds(options.resources, "--resources")
                 : mr::allResourceKinds();

  // 1. The driver, the device, and for every device a context, the kernel and a stream.
  ms::checkDriverInit(cuInit(0));
  const CUdevice device = ms::selectDevice(options.common.device);
  const int ordinal = ms::deviceOrdinal(device);
  int deviceCount = 0;
  ms::check(cuDeviceGetCount(&deviceCount), "cuDeviceGetCount");
  out << "Device " << ordinal << ": " << ms::deviceName(device) << " (" << deviceCount
      << (deviceCount == 1 ? " device" : " devices") << " in this machine)\n";
  if (const std::string why = mr::unavailableReason(mr::ResourceKind::Device, device); !why.empty())
    throw ms::WaivedError("device " + std::to_string(ordinal) + " has " + why +
                          ": its initial resource cannot allocate");
  const std::vector<std::unique_ptr<mr::DeviceSetup>> setups = mr::setUpEveryDevice();
  const mr::DeviceSetup& setup = *setups[ordinal];
  const mr::DeviceFreeMemory smallest = mr::smallestFreeMemory(setups);  // one size for all
  const std::uint64_t deviceBytes =
      ms::chooseBufferBytes(options.sizeBytes, kDefaultVectorBytes, smallest.freeBytes, 3,
                            sizeof(float), mr::describeSizedFor(smallest, setups.size()));
  const std::uint64_t bytes = ms::fitHostMemory(  // each device's staging is 3 pinned vectors
      options.sizeBytes, deviceBytes, 3 * static_cast<int>(setups.size()), sizeof(float));
  for (const auto& each : setups)
    each->allocateStaging(bytes);
  ms::ScopedContext current(setup.context.get());  // the device's context, for the whole run
  mr::reportSetup(out, json, ordinal, ms::deviceName(device), deviceCount, bytes, smallest,
                  setups.size(), options.threads);

  // [registry]
  // 2. The registry: get, set and reset for the current device, and an id that does not exist.
  mr::PerDeviceResourceRegistry& registry = mr::processResourceRegistry();
  out << "\n[2] The process-wide registry (" << deviceCount
      << (deviceCount == 1 ? " device" : " devices")
      << "; current device = cuCtxGetDevice = " << registry.currentDevice() << ")\n";
  mr::MemoryResource* initial = mr::getCurrentDeviceResource();
  out << "  getCurrentDeviceResource()        -> " << initial->name() << " ["
      << mr::describeProperties(initial->properties()) << "]\n";
  checks.expect(initial == registry.initial(ordinal), "the first get must answer the initial one");
  checks.expect(mr::getPerDeviceResource(ordinal) == initial, "get per device must answer it too");
  {
    mr::KindResource pinned =
        mr::makeKindResource(mr::ResourceKind::Pinned, setup.context.get(), *initial, {});
    if (!pinned.resource)
      throw ms::WaivedError("device " + std::to_string(ordinal) + ": " + pinned.whyNot);
    // setCurrentDeviceResource(&pinned) in the form that puts the previous resource back when
    // it ends, on an error too: `pinned`, declared first, is never destroyed while registered.
    mr::ScopedResourceOverride override(registry, *pinned.resource);
    mr::MemoryResource* now = mr::getCurrentDeviceResource();
    mr::MemoryResource* removed = mr::resetCurrentDeviceResource();
    out << "  setCurrentDeviceResource(&pinned) -> returned " << override.previous()->name()
        << " (the previous one; called by a ScopedResourceOverride, which captured device "
        << override.device() << ")\n  getCurrentDeviceResource()        -> " << now->name()
        << "\n  resetCurrentDeviceResource()      -> returned " << removed->name() << "; now "
        << mr::getCurrentDeviceResource()->name() << '\n';
    checks.expect(override.device() == ordinal, "the override must be for the current device");
    checks.expect(override.previous() == initial, "set must return the initial resource");
    checks.expect(now == pinned.resource, "get must answer the resource just set");
    checks.expect(removed == pinned.resource, "reset must return the resource it removed");
    checks.expect(mr::getCurrentDeviceResource() == initial, "reset must restore the initial one");
  }
  bool outOfRange = false;
  try {
    mr::getPerDeviceResource(deviceCount);  // ids are 0 .. deviceCount - 1
  } catch (const std::out_of_range& error) {
    outOfRange = true;
    out << "  getPerDeviceResource(" << deviceCount
        << ")          -> std::out_of_range: " << error.what() << '\n';
  }
  checks.expect(outOfRange, "a device id that does not exist must get std::out_of_range");
  // [registry]

  // 3. The resources of the device, one per kind.
  out << "\n[3] Resources of device " << ordinal << '\n';
  mr::WarningLog warnings;
  const mr::ResourceSettings settings{options.vmmStripes, warnings.sink()};
  std::vector<mr::KindResource> resources;
  for (const mr::ResourceKind kind : kinds) {
    mr::KindResource made = mr::makeKindResource(kind, setup.context.get(), *initial, settings);
    if (!made.resource && kindsGiven)
      throw ms::WaivedError(std::string("resource '") + mr::kindName(kind) +
                            "' is not available on device " + std::to_string(ordinal) + ": " +
                            made.whyNot);
    mr::printResource(out, made);
    resources.push_back(std::move(made));
  }

  // [each-kind]
  // 4. Each kind in turn on this device, allocated from several threads through the registry.
  mr::printKindsHeading(out, ordinal, options.threads, kScratchPerThread, kScratchBytes);
  std::uint32_t seed = 606;
  for (mr::KindResource& entry : resources) {
    if (!entry.resource)
      continue;
    mr::ScopedResourceOverride override(registry, ordinal, *entry.resource);
    mr::Vectors vectors = allocateFromThreads(setup, *entry.resource, bytes, options.threads);
    entry.verified = mr::addAndVerify(setup, vectors, ++seed);
    const std::string label = mr::kindName(entry.kind);
    checks.expect(entry.verified.mismatches == 0,
                  label + ": " + ms::describeMismatch(entry.verified));
    if (entry.kind != mr::ResourceKind::Device) {  // the pool needs a context of its device
      entry.contextFree = mr::usableWithoutCurrentContext(*entry.resource, kScratchBytes);
      checks.expect(*entry.contextFree, label + ": the thread without a context had one current");
    }
    mr::printKindResult(out, entry, bytes);
  }
  // [each-kind]
  checks.expect(mr::getCurrentDeviceResource() == initial, "the overrides must restore the pool");
  mr::recordKinds(json, resources);

  // 5. A different resource per device, one thread per device.
  std::vector<mr::KindResource> perDevice =
      mr::makePerDeviceResources(resources, setups, registry, settings);
  mr::printPerDeviceHeading(out, perDevice);
  if (!perDevice.empty()) {
    // [refuse-other-device]
    // Another device's pool, used while this device's context is current, refuses before any
    // driver call fails: cuCtxGetDevice answers, and the pool compares that device with its own.
    const int other = (ordinal + 1) % deviceCount;
    std::string refusal;
    try {
      mr::ResourceAllocation wrong(*registry.initial(other), kScratchBytes, setup.stream.get());
    } catch (const std::logic_error& error) {
      refusal = error.what();
    }
    // [refuse-other-device]
    checks.expect(!refusal.empty(), "another device's pool must refuse to allocate here");
    out << "  device pool of device " << other << " used with device " << ordinal
        << "'s context current -> std::logic_error: " << refusal << '\n';
  }
  // [per-device-threads]
  const int devicesUsed = static_cast<int>(perDevice.size());  // 0 with one device
  std::vector<std::exception_ptr> errors(perDevice.size());
  std::vector<std::thread> workers;
  for (int d = 0; d < devicesUsed; ++d) {
    workers.emplace_back([&, d] {
      const std::string which = "device " + std::to_string(d) + ": ";
      try {
        const mr::DeviceSetup& mine = *setups[d];
        mr::MemoryResource& resource = *perDevice[d].resource;
        ms::ScopedContext scope(mine.context.get());  // this thread's current device is d
        // setCurrentDeviceResource(&resource), put back on every path; the reset below is the
        // normal way back.
        mr::ScopedResourceOverride override(registry, resource);
        checks.expect(override.device() == d, which + "the override must be for this device");
        checks.expect(override.previous() == registry.initial(d),
                      which + "set must return the initial resource");
        mr::MemoryResource* got = mr::getCurrentDeviceResource();
        checks.expect(got == &resource, which + "get answered '" + got->name() + "'");
        mr::Vectors vectors{mr::ResourceAllocation(*got, bytes, mine.stream.get()),
                            mr::ResourceAllocation(*got, bytes, mine.stream.get()),
                            mr::ResourceAllocation(*got, bytes, mine.stream.get())};
        perDevice[d].verified =
            mr::addAndVerify(mine, vectors, 7000u + static_cast<std::uint32_t>(d));
        checks.expect(perDevice[d].verified.mismatches == 0,
                      which + ms::describeMismatch(perDevice[d].verified));
        checks.expect(mr::resetCurrentDeviceResource() == &resource,
                      which + "reset must return the resource it removed");
      } catch (...) {
        errors[d] = std::current_exception();
      }
    });
  }
  joinAll(workers, errors);
  // [per-device-threads]
  for (int d = 0; d < devicesUsed; ++d)
    checks.expect(registry.get(d) == registry.initial(d),
                  "device " + std::to_string(d) + " must be back on its initial resource");
  mr::reportPerDevice(out, json, perDevice);

  // 6. The latency of each kind on this device, every row measured the same way.
  if (!options.noLatency)
    mr::reportLatency(resources, ordinal, setup.stream.get(),
                      {options.largeBytes.value_or(kDefaultVectorBytes), options.common.iterations,
                       options.common.warmup},
                      out, json);

  // 7. The verdict.
  warnings.print(out);
  checks.expect(registry.get(ordinal) == registry.initial(ordinal),
                "device " + std::to_string(ordinal) + " must end on its initial resource");
  return checks.report(out, json);
}

}  // namespace

/// Parses the options and hands the sample to runSample(), which owns output and exit codes.
int main(int argc, char** argv) {
  Options options;
  ms::CommandLine commandLine(
      "perDeviceResource",
      "Registers a different memory resource (device pool, managed, pinned host, NUMA-bound host, "
      "striped VMM) per device in a thread-safe per-device registry, allocates through it from "
      "several host threads, verifies a vector add on every kind and measures allocate / free "
      "latency.");
  commandLine.addCommonOptions(options.common);
  commandLine.addSize("size", "bytes per vector, a multiple of 4 (default 64M)", options.sizeBytes,
                      4);
  commandLine.addString("resources",
                        "comma-separated resource kinds to run: device, managed, pinned, numa, "
                        "vmm (default: all this machine supports; a listed kind it lacks waives)",
                        options.resources, "LIST");
  commandLine.addInteger("threads", "host threads that allocate through the registry (default 4)",
                         options.threads, 1, 64);
  commandLine.addSize("large-size", "largest size of the latency table (default 64M)",
                      options.largeBytes, 1, std::uint64_t{1} << 34);
  commandLine.addInteger("vmm-stripes",
                         "stripes per VMM allocation (default 2; at least one per backing device)",
                         options.vmmStripes, 1, 64);
  commandLine.addFlag("no-latency", "skip the latency table", options.noLatency);
  return ms::runSample(commandLine, options.common, argc, argv,
                       [&](ms::Report& report) { return runPerDeviceResource(options, report); });
}
