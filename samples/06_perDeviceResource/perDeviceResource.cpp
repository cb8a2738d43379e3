/**
 * @file perDeviceResource.cpp
 * @brief RMM's per-device memory resources on the CUDA driver API: a thread-safe registry that
 *        answers "which memory resource does this device use?", and five kinds of memory behind it.
 *
 * The core region of runPerDeviceResource() is one resource's whole life (steps 2-5); the registry
 * it calls is per_device_registry.hpp, whole in its core-b region.
 *
 * 1. Set the devices up as 01 does (setUpDevices(), resources.cpp): **cuInit**, a context per
 *    GPU that may take part (**cuCtxCreate**), the kernel, a stream, pinned staging; push the
 *    chosen device's context (**cuCtxPushCurrent**): the registry's current device is its device.
 * 2. Build one resource: a PinnedHostResource (pinned_host_resource.hpp): allocate is
 *    **cuMemHostAlloc** (DEVICEMAP), deallocate **cuMemFreeHost**.
 * 3. Set it for the current device; set returns the previous one, the device's initial resource.
 * 4. Get it, allocate A, B and C through it, run C = A + B on their device addresses
 *    (**cuMemHostGetDevicePointer**, **cuLaunchKernel**), check C exactly, deallocate.
 * 5. Three more threads at once (4 in all, with this one) get it and allocate and free through
 *    it; reset the device's slot, then destroy the resource. (If a step throws, the catch resets
 *    the slot first.)
 * 6. Every kind in turn the same way (makeResources(), resources.cpp: device pool, managed,
 *    pinned host, NUMA-bound host, striped VMM; a kind this machine lacks is waived), with
 *    `--threads` threads at once; with 2+ GPUs, one thread per device sets its own device's.
 * 7. Report and judge (reportRun(), perDeviceResource_measure.cpp): what steps 1-6 returned,
 *    checked against RMM's rules, and every kind's allocate / free latency.
 * 8. Release, each answer checked: the resources, the pushed context (**cuCtxPopCurrent**), then
 *    every device as 01 releases it (releaseDevice()), its context last.
 */
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <future>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "memsamples.hpp"
#include "perDeviceResource_measure.hpp"
#include "pinned_host_resource.hpp"

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

/// @name Seeds of the vector adds' inputs
/// A and B are pseudo-random, made from a seed (fillVectorAddInputs()). Any values do; each vector
/// add gets a seed of its own, so that no two check the same numbers.
/// @{
constexpr std::uint32_t kCoreInputSeed = 605;          ///< The core's vector add (step 4).
constexpr std::uint32_t kFirstKindInputSeed = 607;     ///< Step 6's first kind; one more per kind.
constexpr std::uint32_t kFirstDeviceInputSeed = 7000;  ///< Step 6, per device: plus the index.
/// @}

/// Runs work(0) .. work(count - 1), each on a thread of its own, all at once, waits for them and
/// returns what each returned, in order: step 6's threads (mr::Thread, resources.hpp: a
/// std::thread whose join() rethrows). If a thread throws, join() rethrows it, and every other
/// thread is still joined (its destructor) before anything they use is freed.
template <typename Work>
auto onThreads(std::size_t count, const Work& work) {
  std::vector<decltype(work(0))> results(count);
  std::vector<mr::Thread> threads;
  for (std::size_t t = 0; t < count; ++t)
    threads.emplace_back([&results, &work, t] { results[t] = work(static_cast<int>(t)); });
  for (mr::Thread& thread : threads)
    thread.join();
  return results;
}

/// Step 6's scratch buffers, beside the vectors: @p threads threads at once ask the registry for
/// the current device's resource, then allocate, fill and free mr::kScratchPerThread short-lived
/// buffers through it. Returns what each thread was answered.
std::vector<mr::MemoryResource*> useScratchBuffers(const mr::DeviceSetup& setup, int threads) {
  const CUstream stream = setup.stream.get();
  return onThreads(threads, [&](int t) {
    ms::ScopedContext current(setup.context.get());  // the registry's current device
    mr::MemoryResource* resource = mr::getCurrentDeviceResource();
    for (int i = 0; i < mr::kScratchPerThread; ++i) {
      mr::ResourceAllocation scratch(*resource, mr::kScratchBytes, stream);
      mr::fillBuffer(scratch, static_cast<unsigned char>(t + i), stream);
      scratch.release();
    }
    return resource;
  });
}

/// Step 6 for one kind that makeResources() made: the core's steps 3 to 5 for a resource that
/// lives on (the latency table times it in step 7), with --threads threads asking the registry at
/// once. What each call returned goes into @p entry for step 7; if a call throws, Resources'
/// destructor puts the previous resource back.
void runKind(mr::KindResource& entry, const mr::DeviceSetup& setup, int threads,
             std::uint32_t seed) {
  entry.previous = mr::setCurrentDeviceResource(entry.resource);
  entry.answers = useScratchBuffers(setup, threads);

  mr::Vectors vectors = mr::allocateVectors(*mr::getCurrentDeviceResource(), setup);
  entry.verified = mr::launchVectorAddAndCheck(setup, vectors, seed);
  mr::releaseVectors(vectors, setup.stream.get());
  entry.removed = mr::resetCurrentDeviceResource();
}

/// Step 6 with 2+ GPUs used: one thread per device at once, each with its own device's context
/// current, so "the current device" differs per thread. Each sets its device's resource,
/// allocates through getCurrentDeviceResource(), checks its vector add and resets its device.
void runPerDevice(mr::Resources& resources, const mr::Devices& devices) {
  const std::vector<mr::MemoryResource*> answers =
      onThreads(resources.perDevice.size(), [&](int d) {
        mr::KindResource& entry = resources.perDevice[d];
        const mr::DeviceSetup& mine = *devices.setups[d];
        ms::ScopedContext current(mine.context.get());

        entry.previous = mr::setPerDeviceResource(mine.ordinal, entry.resource);
        mr::MemoryResource* answer = mr::getCurrentDeviceResource();
        mr::Vectors vectors = mr::allocateVectors(*answer, mine);
        entry.verified = mr::launchVectorAddAndCheck(
            mine, vectors, kFirstDeviceInputSeed + static_cast<unsigned>(d));
        mr::releaseVectors(vectors, mine.stream.get());
        entry.removed = mr::resetPerDeviceResource(mine.ordinal);
        return answer;
      });
  for (std::size_t d = 0; d < answers.size(); ++d)
    resources.perDevice[d].answers = {answers[d]};
}

/// The lesson: one resource's whole life with the registry (the core), then every kind in turn,
/// the report and the release.
ms::Verdict runPerDeviceResource(const Options& options, ms::Report& report) {
  // 1. Set the devices up as 01 does, leaving out a GPU beside the chosen one that its
  // compute mode or its memory forbids. The registry's "current device" is the device of
  // this thread's current context: push the chosen one's.
  mr::Devices devices = mr::setUpDevices(options.common.device, options.devices,
                                         options.sizeBytes, options.resources, report);
  const mr::DeviceSetup& setup = devices.chosenSetup();
  const CUstream stream = setup.stream.get();
  ms::check(cuCtxPushCurrent(setup.context.get()), "cuCtxPushCurrent");

  mr::RunRecord record(report);  // what the steps return, reported in step 7
  record.threads = options.threads;

  // The core's resource and its threads' error path stand out here, out of the way of the core:
  // see the catch below.
  std::unique_ptr<mr::PinnedHostResource> pinned;
  try {
    //! [core]
    // 2. Build one resource: pinned host memory for the chosen device; this code owns it.
    // allocate = cuMemHostAlloc(..., CU_MEMHOSTALLOC_DEVICEMAP), deallocate = cuStreamSynchronize
    // + cuMemFreeHost, kernelAddress = cuMemHostGetDevicePointer (pinned_host_resource.hpp).
    pinned = std::make_unique<mr::PinnedHostResource>(setup.context.get());

    // 3. Make it the current device's resource; set returns the previous (initial) one, for step 7.
    mr::MemoryResource* previous = mr::setCurrentDeviceResource(pinned.get());

    // 4. Any code on this thread now gets it from the registry and allocates through it.
    const std::size_t bytes = setup.vectorBytes;
    unsigned long long count = bytes / sizeof(float);
    mr::MemoryResource* resource = mr::getCurrentDeviceResource();
    auto* a = static_cast<float*>(resource->allocate(bytes, stream));
    auto* b = static_cast<float*>(resource->allocate(bytes, stream));
    auto* c = static_cast<float*>(resource->allocate(bytes, stream));

    // Use it: the CPU writes A and B in place (from any seed), C starts as NaN so that a kernel
    // that writes nothing fails; the kernel takes their device addresses.
    ms::fillVectorAddInputs(a, b, count, kCoreInputSeed);
    std::fill(c, c + count, std::numeric_limits<float>::quiet_NaN());
    CUdeviceptr x = resource->kernelAddress(a);
    CUdeviceptr y = resource->kernelAddress(b);
    CUdeviceptr z = resource->kernelAddress(c);
    void* args[] = {&x, &y, &z, &count};
    ms::check(cuLaunchKernel(setup.kernel, setup.grid, 1, 1, mr::DeviceSetup::kBlockSize, 1, 1,
                             0, stream, args, nullptr),
              "cuLaunchKernel");
    ms::check(cuStreamSynchronize(stream), "cuStreamSynchronize");
    const ms::VectorAddCheck verified = ms::checkVectorAdd(a, b, c, count);

    resource->deallocate(a, bytes, stream);
    resource->deallocate(b, bytes, stream);
    resource->deallocate(c, bytes, stream);

    // 5. The registry is thread-safe: three more threads (4 in all, with this one) get the
    // current device's resource at once and allocate and free through it. A new thread has no
    // current device: each pushes the context. Wait for all three before the slot is reset.
    std::vector<std::future<mr::MemoryResource*>> threads;
    for (int t = 0; t < 3; ++t)
      threads.push_back(std::async(std::launch::async, [&] {
        ms::ScopedContext current(setup.context.get());  // cuCtxPushCurrent; pop at the end
        mr::MemoryResource* mine = mr::getCurrentDeviceResource();
        void* vector = mine->allocate(bytes, stream);
        mine->deallocate(vector, bytes, stream);
        return mine;
      }));
    for (std::future<mr::MemoryResource*>& thread : threads)
      thread.wait();

    // Give back: reset the slot (it returns what it removed, for step 7), then destroy that.
    mr::MemoryResource* removed = mr::resetCurrentDeviceResource();
    pinned.reset();
    //! [core]

    // For step 7: what this thread and each of the three got. get() rethrows what a thread threw.
    std::vector<mr::MemoryResource*> answers = {resource};
    for (std::future<mr::MemoryResource*>& thread : threads)
      answers.push_back(thread.get());
    record.core = {previous, answers, verified, removed};
  } catch (...) {
    // The error path of steps 2-5. Any thread still running was waited for as the core's
    // futures ended. The slot is reset while the resource still lives (a resource never built
    // or never set changes nothing), and no queued work may still use its memory: then `pinned`
    // ends and frees what the resource still holds (A, B, C or a thread's vector).
    mr::restoreIfRegistered(setup.ordinal, pinned.get(), nullptr);  // set(nullptr): a reset
    static_cast<void>(cuStreamSynchronize(stream));  // its error is not this path's to report
    throw;
  }

  // 6. Every kind in turn the same way, each made by makeResources() (a kind this machine
  // cannot make is waived there, with the reason); with 2+ GPUs used, one resource per device.
  mr::Resources resources = mr::makeResources(devices, options.vmmStripes);
  std::uint32_t seed = kFirstKindInputSeed;
  for (mr::KindResource& entry : resources.kinds) {
    if (entry.resource != nullptr)
      runKind(entry, setup, options.threads, seed++);
  }
  runPerDevice(resources, devices);

  // 7. Report what steps 1-6 returned, checked against RMM's rules and the registry's own
  // answers, and measure each kind's allocate / free latency (perDeviceResource_measure.cpp).
  mr::askRegistry(record, devices);
  record.latency.largeBytes = options.largeBytes.value_or(record.latency.largeBytes);
  record.latency.iterations = options.common.iterations;
  record.latency.warmup = options.common.warmup;
  record.skipLatency = options.noLatency;
  const ms::Verdict verdict = mr::reportRun(record, devices, resources);

  // 8. Release in reverse order, each answer checked: the resources first (each kind frees
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
      "comma-separated resource kinds step 6 runs: device, managed, pinned, numa, "
      "vmm (default: all this machine supports; a listed kind it lacks waives)",
      options.resources, "LIST");
  commandLine.addIntegerList(
      "devices",
      "GPUs that step 6 uses beside the chosen one, e.g. 1,2 (default: every GPU whose compute "
      "mode and free memory allow; a listed GPU that cannot be used waives the run)",
      options.devices, 0, std::numeric_limits<int>::max());

  commandLine.addInteger(
      "threads",
      "host threads that ask the registry at once and allocate scratch buffers through it, per "
      "kind in step 6 (default 4)",
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
