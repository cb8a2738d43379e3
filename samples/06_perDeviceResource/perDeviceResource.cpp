/**
 * @file perDeviceResource.cpp
 * @brief RMM's per-device memory resources on the CUDA driver API: a thread-safe registry that
 *        answers "which memory resource does this device use?", and five interchangeable kinds
 *        of memory behind it, each used by the same vector add.
 *
 * Code that needs memory asks the registry and allocates from what it answers; which kind of
 * memory that is gets decided in one place, at run time, with one call. The registry is
 * per_device_registry.hpp, whole in its core-b region: a mutex, one slot per device, get / set /
 * reset, and the initial resource each device starts on. runPerDeviceResource() uses it in its
 * core region: threads get their device's resource, allocate through it, use and free.
 *
 * 1. Set the devices up as 01 does (setUpDevices(), resources.cpp): **cuInit**, and for the
 *    chosen device and every GPU beside it that may take part a context (**cuCtxCreate**), the
 *    kernel, a stream and pinned staging. A GPU beside the chosen one is left out, with the
 *    reason, where its compute mode forbids a context, it refuses one, or it lacks the memory,
 *    unless `--devices` names it. The chosen device's context is pushed
 *    (**cuCtxPushCurrent**): the registry's "current device" is the device of this thread's
 *    current context.
 * 2. Ask the registry: getCurrentDeviceResource() answers the current device's initial
 *    resource (its default memory pool, made on first use), getPerDeviceResource() of the same
 *    device the same one, and an id that does not exist gets std::out_of_range.
 * 3. Make one resource of each kind for the device, and one for every other device used
 *    (resources.cpp): device pool, managed, pinned host, NUMA-bound host, striped VMM. A kind
 *    this machine cannot make is waived, named with the reason.
 * 4. Each kind in turn for the current device: setCurrentDeviceResource() returns the previous
 *    resource; `--threads` threads ask getCurrentDeviceResource(), allocate A, B and C through
 *    it and use and free scratch buffers; C = A + B is checked exactly, which frees the
 *    vectors; resetCurrentDeviceResource() returns the kind.
 * 5. A resource per device (2+ GPUs used): one thread per device sets its device's resource
 *    with setPerDeviceResource(), allocates through getCurrentDeviceResource() with its
 *    device's context current, checks its vector add, and resetPerDeviceResource() puts the
 *    pool back.
 * 6. Report and judge (reportRun(), perDeviceResource_measure.cpp): what steps 1-5 found,
 *    checked against RMM's rules, and the allocate / free latency of every kind, measured the
 *    same way.
 * 7. Release, each answer checked: the resources (each frees what it still holds), the pushed
 *    context (**cuCtxPopCurrent**), then every device as 01 releases it (releaseDevice()): the
 *    stream once idle, the staging, the module, and its context last.
 */
#include <cstddef>
#include <future>
#include <limits>
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
  std::vector<int> devices;
  int threads = 4;
  int vmmStripes = 2;
  bool noLatency = false;
};

/// Runs work(0) .. work(count - 1), each on a thread of its own, all at once, and waits for
/// them. A std::async future waits for its thread when destroyed: if get() rethrows what one
/// thread threw, every thread has still finished before anything they use is freed.
template <typename Work>
void onThreads(std::size_t count, const Work& work) {
  std::vector<std::future<void>> threads;
  for (std::size_t t = 0; t < count; ++t)
    threads.push_back(std::async(std::launch::async, work, static_cast<int>(t)));
  for (std::future<void>& thread : threads)
    thread.get();
}

/// The lesson: the registry at work, in the order a program uses it.
ms::Verdict runPerDeviceResource(const Options& options, ms::Report& report) {
  // 1. Set the devices up as 01 does, leaving out a GPU beside the chosen one that its
  // compute mode or its memory forbids. The registry's "current device" is the device of
  // this thread's current context: push the chosen one's.
  mr::Devices devices = mr::setUpDevices(options.common.device, options.devices,
                                         options.sizeBytes, options.resources, report);
  const mr::DeviceSetup& setup = devices.chosenSetup();
  const CUstream stream = setup.stream.get();
  ms::check(cuCtxPushCurrent(setup.context.get()), "cuCtxPushCurrent");

  mr::RunRecord record(report);  // what the steps find, reported in step 6
  record.threads = options.threads;
  std::uint32_t seed = 606;  // any value: each vector add gets inputs of its own

  //! [core]
  // 2. Ask the registry: a device starts on its initial resource, made on first use; an id
  // that does not exist is a clear error here (RMM leaves it undefined).
  record.initial = mr::getCurrentDeviceResource();
  record.perDeviceAnswer = mr::getPerDeviceResource(devices.chosen);
  try {
    mr::getPerDeviceResource(devices.count);  // ids are 0 .. count - 1
  } catch (const std::out_of_range& error) {
    record.outOfRange = error.what();
  }

  // 3. One resource of each kind for this device; with 2+ GPUs used, one per device.
  mr::Resources resources = mr::makeResources(devices, options.vmmStripes);

  // 4. Each kind in turn: set returns the previous resource; every thread makes the context
  // current, asks get, allocates through the answer, uses and frees; reset returns the kind.
  for (mr::KindResource& entry : resources.kinds) {
    if (entry.resource == nullptr)
      continue;  // waived in step 3, with the reason
    entry.previous = mr::setCurrentDeviceResource(entry.resource);

    mr::Vectors vectors;  // A, B and C, shared out between the threads
    entry.answers.assign(options.threads, nullptr);
    onThreads(options.threads, [&](int t) {
      ms::ScopedContext current(setup.context.get());
      mr::MemoryResource* resource = mr::getCurrentDeviceResource();
      entry.answers[t] = resource;
      for (int v = t; v < 3; v += options.threads)
        vectors[v] = mr::ResourceAllocation(*resource, devices.bytes, stream);

      for (int i = 0; i < mr::kScratchPerThread; ++i) {  // short-lived buffers
        mr::ResourceAllocation scratch(*resource, mr::kScratchBytes, stream);
        mr::fillBuffer(scratch, static_cast<unsigned char>(t + i), stream);
        scratch.release();
      }
    });

    entry.verified = mr::addAndVerify(setup, vectors, ++seed);  // C = A + B; frees A, B, C
    entry.removed = mr::resetCurrentDeviceResource();
  }

  // 5. A resource per device, one thread per device at once: "current" differs per thread.
  onThreads(resources.perDevice.size(), [&](int d) {
    mr::KindResource& entry = resources.perDevice[d];
    const mr::DeviceSetup& mine = *devices.setups[d];
    ms::ScopedContext current(mine.context.get());

    entry.previous = mr::setPerDeviceResource(mine.ordinal, entry.resource);
    entry.answers = {mr::getCurrentDeviceResource()};
    mr::Vectors vectors = mr::allocateVectors(*entry.answers[0], mine);
    entry.verified = mr::addAndVerify(mine, vectors, 7000u + static_cast<unsigned>(d));
    entry.removed = mr::resetPerDeviceResource(mine.ordinal);
  });
  //! [core]

  // 6. Report what steps 1-5 found, checked against RMM's rules, and measure each kind's
  // allocate / free latency (perDeviceResource_measure.cpp).
  record.latency.largeBytes = options.largeBytes.value_or(record.latency.largeBytes);
  record.latency.iterations = options.common.iterations;
  record.latency.warmup = options.common.warmup;
  record.skipLatency = options.noLatency;
  const ms::Verdict verdict = mr::reportRun(record, devices, resources);

  // 7. Release in reverse order, each answer checked: the resources first (each kind frees
  // what it still holds, in its own context), the pushed context, then every device as 01
  // releases it (the stream once idle, the staging, the module), its context last.
  resources.kinds.clear();
  resources.perDevice.clear();

  CUcontext popped = nullptr;
  ms::check(cuCtxPopCurrent(&popped), "cuCtxPopCurrent");
  for (const std::unique_ptr<mr::DeviceSetup>& each : devices.setups)
    mr::releaseDevice(*each);
  return verdict;
}

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
  commandLine.addIntegerList(
      "devices",
      "GPUs that step 5 uses beside the chosen one, e.g. 1,2 (default: every GPU whose compute "
      "mode and free memory allow; a listed GPU that cannot be used waives the run)",
      options.devices, 0, std::numeric_limits<int>::max());

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
