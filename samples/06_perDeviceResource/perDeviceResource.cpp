/**
 * @file perDeviceResource.cpp
 * @brief RMM's per-device memory resources on the CUDA driver API: a thread-safe
 *        registry that answers "which memory resource does this device use?", and five
 *        interchangeable kinds of memory behind it, each used by the same vector add.
 *
 * Code that needs memory asks the registry and allocates from what it answers; which
 * kind of memory that is gets decided in one place, at run time, with one call.
 * runPerDeviceResource() makes every registry call of the program, in order, in its
 * core region:
 *
 * 1. Load the driver (**cuInit**, in setUpDevices()) and set every device up as 01
 *    does: a context of its own (**cuCtxCreate**), the kernel, a stream and pinned
 *    staging, one vector size that fits the smallest device (resources.cpp). The
 *    chosen device's context is pushed (**cuCtxPushCurrent**): the registry's
 *    "current device" is the device of this thread's current context.
 * 2. Ask the registry: getCurrentDeviceResource() answers the current device's initial
 *    resource (its default memory pool, made on first use), getPerDeviceResource() of
 *    the same device the same one, and an id that does not exist gets
 *    std::out_of_range.
 * 3. Make one resource of each kind for the device, and one for every other device
 *    (resources.cpp): device pool, managed, pinned host, NUMA-bound host, striped VMM.
 * 4. Each kind in turn for the current device: setCurrentDeviceResource() returns the
 *    previous resource; `--threads` threads ask getCurrentDeviceResource() and allocate
 *    A, B and C through it; C = A + B is checked exactly; resetCurrentDeviceResource()
 *    returns the kind.
 * 5. A resource per device (2+ GPUs): one thread per device sets its device's resource
 *    with setPerDeviceResource(), allocates through getCurrentDeviceResource() with its
 *    device's context current, checks its vector add, and resetPerDeviceResource() puts
 *    the pool back.
 * 6. Measure the allocate / free latency of every kind the same way, and give the
 *    verdict: reportStep() (perDeviceResource_measure.cpp) prints each step's lines as
 *    the step ends and checks its answers against RMM's rules.
 * 7. Release, each answer checked: the resources (each frees what it still holds), the
 *    pushed context (**cuCtxPopCurrent**), then per device the stream once idle
 *    (**cuStreamSynchronize**, **cuStreamDestroy**), the staging (**cuMemFreeHost**), the
 *    module (**cuModuleUnload**), and its context last (**cuCtxDestroy**).
 */
#include <future>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "memsamples.hpp"
#include "perDeviceResource_measure.hpp"

namespace ms = memsamples;
namespace mr = memsamples::resource;

namespace {

/// The sample's options.
struct Options {
  ms::CommonOptions common;
  std::optional<std::uint64_t> sizeBytes;
  std::optional<std::uint64_t> largeBytes;
  std::string resources;
  int threads = 4;
  int vmmStripes = 2;
  bool noLatency = false;
};

mr::Vectors allocateFromThreads(const mr::DeviceSetup& setup, std::uint64_t bytes,
                                int threads, std::vector<mr::MemoryResource*>& answers);

/// The lesson: the registry calls in the order a program makes them. The threads of
/// step 4 ask get in allocateFromThreads(), below; reportStep()'s checks ask it too.
ms::Verdict runPerDeviceResource(const Options& options, ms::Report& report) {
  // What the steps find, printed and checked as each step ends (perDeviceResource_measure.cpp).
  mr::RunRecord record(report);
  record.latency.largeBytes = options.largeBytes.value_or(record.latency.largeBytes);
  record.latency.iterations = options.common.iterations;
  record.latency.warmup = options.common.warmup;
  record.skipLatency = options.noLatency;
  record.threads = options.threads;

  //! [core]
  // 1. Load the driver (cuInit) and set every device up as 01 does. The registry's
  // "current device" is the device of this thread's current context: push the chosen one's.
  mr::Devices devices = mr::setUpDevices(options.common.device, options.sizeBytes,
                                         options.resources, report);
  const mr::DeviceSetup& setup = *devices.setups[devices.chosen];
  ms::check(cuCtxPushCurrent(setup.context.get()), "cuCtxPushCurrent");
  mr::reportStep(1, record, devices);

  // 2. Ask the registry: a device starts on its initial resource, made on first use. Per
  // device and for the current device the answer is the same; an id that does not exist is
  // a clear error here (RMM leaves it undefined).
  record.initial = mr::getCurrentDeviceResource();
  record.perDeviceAnswer = mr::getPerDeviceResource(devices.chosen);

  try {
    mr::getPerDeviceResource(devices.count);  // ids are 0 .. count - 1
  } catch (const std::out_of_range& error) {
    record.outOfRange = error.what();
  }
  mr::reportStep(2, record, devices);

  // 3. Make one resource of each kind for this device (the device kind is the registry's
  // own pool) and, with 2+ GPUs, one per device for step 5.
  mr::Resources resources = mr::makeResources(devices, options.vmmStripes);
  mr::reportStep(3, record, devices, &resources);

  // 4. Each kind in turn for the current device: set returns the previous resource, the
  // threads allocate through what get answers, reset returns the one it removed.
  std::uint32_t seed = 606;  // any value: each vector add gets inputs of its own
  for (mr::KindResource& entry : resources.kinds) {
    if (entry.resource == nullptr)
      continue;  // this machine lacks the kind: step 3 says why

    entry.previous = mr::setCurrentDeviceResource(entry.resource);
    mr::Vectors vectors =
        allocateFromThreads(setup, devices.bytes, options.threads, entry.answers);
    entry.verified = mr::addAndVerify(setup, vectors, ++seed);
    entry.removed = mr::resetCurrentDeviceResource();
    mr::reportStep(4, record, devices, &resources, &entry);
  }

  // 5. A resource per device, one thread per device at once (none with one device).
  // Each thread makes its device's context current: "current" differs per thread.
  // A std::async future waits for its thread when destroyed: if get() rethrows,
  // every thread has still finished before anything is freed.
  std::vector<std::future<void>> workers;
  for (std::size_t d = 0; d < resources.perDevice.size(); ++d) {
    workers.push_back(std::async(std::launch::async, [&, d] {
      mr::KindResource& entry = resources.perDevice[d];
      const mr::DeviceSetup& mine = *devices.setups[d];
      ms::ScopedContext scope(mine.context.get());

      entry.previous = mr::setPerDeviceResource(mine.ordinal, entry.resource);
      mr::MemoryResource* got = mr::getCurrentDeviceResource();
      entry.answers = {got};

      const CUstream stream = mine.stream.get();
      mr::Vectors vectors{mr::ResourceAllocation(*got, devices.bytes, stream),
                          mr::ResourceAllocation(*got, devices.bytes, stream),
                          mr::ResourceAllocation(*got, devices.bytes, stream)};
      entry.verified = mr::addAndVerify(mine, vectors, 7000u + static_cast<unsigned>(d));
      entry.removed = mr::resetPerDeviceResource(mine.ordinal);
    }));
  }
  for (std::future<void>& worker : workers)
    worker.get();  // waits for the thread, and rethrows what it threw
  mr::reportStep(5, record, devices, &resources);

  // 6. Measure each kind's latency, and give the verdict of every check of steps 2-5.
  const ms::Verdict verdict = mr::reportStep(6, record, devices, &resources);

  // 7. Release in reverse order, each answer checked: the resources first (each kind frees
  // what it still holds, in its own context), the pushed context, then per device what 01
  // releases (the stream once idle, the staging, the module), and its context last.
  resources.kinds.clear();
  resources.perDevice.clear();

  CUcontext popped = nullptr;
  ms::check(cuCtxPopCurrent(&popped), "cuCtxPopCurrent");
  for (const std::unique_ptr<mr::DeviceSetup>& each : devices.setups) {
    ms::check(cuCtxPushCurrent(each->context.get()), "cuCtxPushCurrent");
    ms::check(cuStreamSynchronize(each->stream.get()), "cuStreamSynchronize");
    ms::check(cuStreamDestroy(each->stream.release()), "cuStreamDestroy");
    ms::check(cuMemFreeHost(each->staging.release()), "cuMemFreeHost");
    ms::check(cuModuleUnload(each->module.release()), "cuModuleUnload");
    ms::check(cuCtxPopCurrent(&popped), "cuCtxPopCurrent");
    ms::check(cuCtxDestroy(each->context.release()), "cuCtxDestroy");
  }
  //! [core]

  return verdict;
}

// [threads]
/// Thread t makes the device's context current, asks getCurrentDeviceResource() (the
/// answer is recorded for step 4's checks) and allocates vectors t, t + threads, ... of
/// A, B, C through it, and the scratch buffers that it fills and frees at once.
mr::Vectors allocateFromThreads(const mr::DeviceSetup& setup, std::uint64_t bytes,
                                int threads,
                                std::vector<mr::MemoryResource*>& answers) {
  mr::Vectors vectors;
  std::vector<std::future<void>> workers;  // declared after the vectors: they wait first

  answers.assign(threads, nullptr);
  for (int t = 0; t < threads; ++t) {
    workers.push_back(std::async(std::launch::async, [&, t] {
      // cuCtxPushCurrent now, cuCtxPopCurrent at the end: this thread's current device.
      ms::ScopedContext scope(setup.context.get());
      mr::MemoryResource* resource = mr::getCurrentDeviceResource();
      answers[t] = resource;

      for (int v = t; v < 3; v += threads)
        vectors[v] = mr::ResourceAllocation(*resource, bytes, setup.stream.get());

      mr::useScratch(*resource, setup, t);
    }));
  }
  for (std::future<void>& worker : workers)
    worker.get();  // waits for the thread, and rethrows what it threw
  return vectors;
}
// [threads]

}  // namespace

/// Parses the options and hands the lesson to runSample(), which owns output and exit
/// codes.
int main(int argc, char** argv) {
  Options options;
  ms::CommandLine commandLine(
      "perDeviceResource",
      "Registers a different memory resource (device pool, managed, pinned host, NUMA-bound "
      "host, striped VMM) per device in a thread-safe per-device registry, allocates through "
      "it from several host threads, verifies a vector add on every kind and measures "
      "allocate / free latency.");
  commandLine.addCommonOptions(options.common);
  constexpr std::uint64_t kMaxVectorBytes = 1ull << 40;  // 1T: more than any GPU holds
  commandLine.addSize("size", "bytes per vector, a multiple of 4, at most 1T (default 64M)",
                      options.sizeBytes, sizeof(float), kMaxVectorBytes, sizeof(float));
  commandLine.addString(
      "resources",
      "comma-separated resource kinds to run: device, managed, pinned, numa, "
      "vmm (default: all this machine supports; a listed kind it lacks waives)",
      options.resources, "LIST");

  commandLine.addInteger("threads",
                         "host threads that allocate through the registry (default 4)",
                         options.threads, 1, 64);
  commandLine.addSize("large-size", "largest size of the latency table (default 64M)",
                      options.largeBytes, 1, std::uint64_t{1} << 34);
  commandLine.addInteger(
      "vmm-stripes",
      "stripes per VMM allocation (default 2; at least one per backing device)",
      options.vmmStripes, 1, 64);
  commandLine.addFlag("no-latency", "skip the latency table", options.noLatency);

  return ms::runSample(
      commandLine, options.common, argc, argv,
      [&](ms::Report& report) { return runPerDeviceResource(options, report); });
}
