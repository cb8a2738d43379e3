/**
 * @file perDeviceResource.cpp
 * @brief Interchangeable memory resources behind a thread-safe per-device registry: the same
 *        vector add on device-pool, managed, pinned host, NUMA-bound host and striped VMM memory,
 *        allocated from several host threads, verified exactly, and the allocate / free latency
 *        of each kind measured.
 *
 * Code that needs memory asks the registry "which resource does this device use?" and allocates
 * from it; which kind of memory that is gets decided in one place, at run time. This is RMM's
 * per-device resource design rebuilt on the CUDA driver API (README: the comparison with RMM and
 * the lifetime rules). The steps:
 *
 * 1. **cuInit**, pick the device (`--device N` or the fastest), make a context
 *    (**cuCtxCreate**), load `vectorAdd_kernel.fatbin`, create a stream. With two or more GPUs,
 *    the same for every device (step 5 uses them all), and the vector size is chosen from the
 *    *smallest* free memory of the devices used (**cuMemGetInfo** in each context). Each context
 *    is made current only for the code that uses it (**cuCtxPushCurrent** / **cuCtxPopCurrent**,
 *    ms::ScopedContext); the chosen device's context is current for the whole run.
 * 2. **The registry, live.** The process-wide registry is made on first use with
 *    **cuDeviceGetCount** devices. getCurrentDeviceResource() (current device =
 *    **cuCtxGetDevice**) returns the initial resource, the device's default memory pool
 *    (**cuDeviceGetDefaultMemPool**); setCurrentDeviceResource() returns the previous resource;
 *    resetCurrentDeviceResource() puts the initial one back and returns what was set; an
 *    out-of-range device id is a clear std::out_of_range, not undefined behaviour.
 * 3. **The resources of the device**, each reusing one earlier sample: stream-ordered pool memory
 *    (**cuMemAllocFromPoolAsync** / **cuMemFreeAsync**), managed memory (03's ManagedBuffer:
 *    **cuMemAllocManaged** behind the free-memory guard and a budget), pinned mapped host memory
 *    (**cuMemHostAlloc** DEVICEMAP), host memory bound to the GPU's nearest NUMA node (04's
 *    NumaBoundHostRange + **cuMemHostRegister**), and striped VMM ranges (02's StripedVmmRange:
 *    **cuMemAddressReserve**, **cuMemCreate**, **cuMemMap**, **cuMemSetAccess**). Each is given
 *    its device's context (**cuCtxGetDevice_v2** names the device) and pushes it around its own
 *    driver calls. A kind this machine cannot provide is left out with the reason.
 * 4. **Each kind in turn on the device.** A ScopedResourceOverride sets it for the device; then
 *    `--threads` host threads push the context, ask getCurrentDeviceResource() (every thread must
 *    get the kind just set), allocate A, B and C and a few scratch buffers each, which they fill
 *    and free at once. The main thread fills A and B (directly for host-accessible memory, else
 *    through **cuMemcpyHtoDAsync**), launches the kernel on each resource's kernel address
 *    (**cuMemHostGetDevicePointer** for mapped host memory), reads C back and compares every
 *    element exactly. Every kind but the pool is also used from a thread that has no current
 *    context (**cuCtxGetCurrent** answers null): it must push its own. The override ends, and the
 *    registry must answer the initial resource again.
 * 5. **A different resource per device** (2 or more GPUs): first, another device's pool used
 *    while this device's context is current must throw std::logic_error. Then device i gets the
 *    kind `kinds[(i + 1) % n]`; one thread per device pushes that device's context, sets the
 *    resource for the current device (a ScopedResourceOverride, which stands for
 *    setCurrentDeviceResource() and restores the previous resource on every path), allocates
 *    through getCurrentDeviceResource() (which must answer *its* device's resource while the
 *    other threads set theirs), runs the vector add on its device, verifies, and
 *    resetCurrentDeviceResource().
 * 6. **Latency**, measured the same way for every kind, with the host clock (steady_clock; these
 *    are host-side calls): for 4 KiB, 64 KiB and `--large-size`, batches of N allocations: the N
 *    allocate calls back to back, then one **cuStreamSynchronize**; then the N deallocate calls,
 *    then one cuStreamSynchronize. Reported per allocation (batch time / N, median over the
 *    batches): the calls alone and the calls with the synchronize, next to an idle-stream
 *    synchronize and a **cuMemGetInfo** (the managed guard) measured in the same run. For the
 *    stream-ordered pool the calls only enqueue, so the "+sync" columns are the ones that count
 *    the work; the ratio column compares those. The pool is measured twice: with its release
 *    threshold as it is (default 0: freed memory goes back to the system at every
 *    synchronization) and with the threshold at its maximum (**cuMemPoolSetAttribute**; freed
 *    memory stays in the pool).
 * 7. The verdict: PASS when every vector add is exact and every registry answer was the expected
 *    one. Every resource is released on every path (RAII), and the registry is left as it was.
 */
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <iomanip>
#include <iostream>
#include <limits>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cuda_resources.hpp"
#include "memsamples.hpp"
#include "numa_resource.hpp"
#include "resource_plan.hpp"

namespace ms = memsamples;
namespace mr = memsamples::resource;

namespace {

constexpr std::uint64_t kDefaultVectorBytes = 64ull << 20;
constexpr std::uint64_t kDefaultLargeBytes = 64ull << 20;
constexpr std::size_t kScratchBytes = 64 << 10;  // per scratch allocation of step 4
constexpr int kScratchPerThread = 8;
constexpr const char* kReferenceRow = "device pool";
constexpr int kBlockSize = 256;  // threads per block of the VecAdd_kernel launches

struct Options {
  ms::CommonOptions common;
  std::optional<std::uint64_t> sizeBytes;
  std::optional<std::uint64_t> largeBytes;
  std::string resources;
  int threads = 4;
  int vmmStripes = 2;
  bool noLatency = false;
};

// What went wrong, for the verdict; every check is recorded, not thrown, so all are reported.
class Checks {
 public:
  void expect(bool ok, const std::string& what) {
    ++count_;
    if (!ok)
      failures_.push_back(what);
  }
  void merge(const Checks& other) {
    count_ += other.count_;
    failures_.insert(failures_.end(), other.failures_.begin(), other.failures_.end());
  }
  int count() const noexcept { return count_; }
  const std::vector<std::string>& failures() const noexcept { return failures_; }

 private:
  int count_ = 0;
  std::vector<std::string> failures_;
};

// Warnings from resources (the NUMA binding), collected from any thread and printed by main.
class WarningLog {
 public:
  void add(const std::string& text) {
    std::lock_guard<std::mutex> lock(mutex_);
    lines_.push_back(text);
  }
  std::vector<std::string> take() {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::exchange(lines_, {});
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> lines_;
};

// Everything one device needs for the vector add, made and released in the device's own context.
// The constructor leaves the calling thread's current context as it found it: cuCtxCreate pushes
// the new context, which is popped again once the module and stream exist. Code that uses the
// device pushes its context for a scope (ms::ScopedContext).
class DeviceSetup {
 public:
  explicit DeviceSetup(CUdevice device) : device_(device), ordinal_(ms::deviceOrdinal(device)) {
    ms::check(cuCtxCreate(context_.out(), nullptr, 0, device), "cuCtxCreate");
    CUcontext created = nullptr;
    ms::check(cuCtxPopCurrent(&created), "cuCtxPopCurrent");
    if (created != context_.get())
      throw std::logic_error("cuCtxCreate did not leave its new context on top of the stack");
    ms::ScopedContext scope(context_.get());
    auto objects = std::make_unique<ContextObjects>();  // released in scope if the next throw
    const std::vector<char> fatbin =
        ms::readBinaryFile(ms::locateFatbin("vectorAdd_kernel.fatbin"));
    ms::check(cuModuleLoadData(objects->module.out(), fatbin.data()), "cuModuleLoadData");
    ms::check(cuStreamCreate(objects->stream.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    ms::check(cuModuleGetFunction(&kernel_, objects->module.get(), "VecAdd_kernel"),
              "cuModuleGetFunction");
    grid_ = ms::residentGridSize(kernel_, device, kBlockSize);
    objects_ = std::move(objects);
  }
  // The stream, module and staging memory go in their own context, the context itself last.
  ~DeviceSetup() {
    try {
      ms::ScopedContext scope(context_.get());
      objects_.reset();
    } catch (...) {
      // The push failed: the member destructors release the objects instead (their release
      // calls take the handles; answers are ignored, as in every destructor here).
    }
  }
  DeviceSetup(const DeviceSetup&) = delete;
  DeviceSetup& operator=(const DeviceSetup&) = delete;

  CUdevice device() const noexcept { return device_; }
  int ordinal() const noexcept { return ordinal_; }
  CUcontext context() const noexcept { return context_.get(); }
  CUfunction kernel() const noexcept { return kernel_; }
  unsigned int grid() const noexcept { return grid_; }
  CUstream stream() const noexcept { return objects_->stream.get(); }
  void synchronize() const {
    ms::check(cuStreamSynchronize(objects_->stream.get()), "cuStreamSynchronize");
  }
  // The device's free memory now (cuMemGetInfo answers for the current context's device).
  std::uint64_t freeMemory() const {
    ms::ScopedContext scope(context_.get());
    std::size_t freeBytes = 0, totalBytes = 0;
    ms::check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
    return freeBytes;
  }
  // Pinned host copies of A, B and C for resources whose memory the CPU cannot touch; made once
  // the vector size is known, pinned for this context (the copies run in it).
  void allocateStaging(std::uint64_t vectorBytes) {
    ms::ScopedContext scope(context_.get());
    ms::check(cuMemHostAlloc(objects_->staging.out(), 3 * vectorBytes, 0), "cuMemHostAlloc");
    vectorBytes_ = vectorBytes;
  }
  float* staging(int vector) const noexcept {
    return static_cast<float*>(objects_->staging.get()) +
           static_cast<std::size_t>(vector) * (vectorBytes_ / sizeof(float));
  }

 private:
  struct ContextObjects {
    ms::OwnedModule module;
    ms::OwnedStream stream;
    ms::OwnedPinnedHostMemory staging;
  };

  CUdevice device_;
  int ordinal_;
  ms::OwnedContext context_;
  std::unique_ptr<ContextObjects> objects_;  // made and released with context_ pushed
  CUfunction kernel_ = nullptr;
  unsigned int grid_ = 0;
  std::uint64_t vectorBytes_ = 0;
};

// One resource of one device, ready to be registered. The owned resources free what they still
// hold in their own context when destroyed, so a vector of these needs no special order.
struct KindResource {
  mr::ResourceKind kind = mr::ResourceKind::Device;
  mr::MemoryResource* resource = nullptr;     // the one used
  std::unique_ptr<mr::MemoryResource> owned;  // null for the device pool (owned by the registry)
  std::string detail;                         // what was chosen: node, stripes, budget...
};

// ------------------------------------------------------------------- step 3: the resources

// Why @p kind cannot run on @p device, or empty. Only attribute queries: nothing is made to fail.
std::string unavailableReason(mr::ResourceKind kind, CUdevice device) {
  const auto lacks = [device](CUdevice_attribute attribute) {
    return ms::deviceAttribute(device, attribute) == 0;
  };
  switch (kind) {
    case mr::ResourceKind::Device:
      if (lacks(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED))
        return "no stream-ordered memory pools (CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 0)";
      break;
    case mr::ResourceKind::Managed:
      if (lacks(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY))
        return "no managed memory (CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY = 0)";
      // The threads and the CPU checks touch managed memory while other work may run.
      if (lacks(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS))
        return "no concurrent managed access (CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS = 0)";
      break;
    case mr::ResourceKind::Pinned:
      if (lacks(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY))
        return "cannot map host memory (CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY = 0)";
      break;
    case mr::ResourceKind::Numa:
      if (lacks(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY))
        return "cannot map host memory (CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY = 0)";
      if (lacks(CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED))
        return "no cuMemHostRegister (CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED = 0)";
      break;
    case mr::ResourceKind::Vmm:
      if (lacks(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)) {
        return "no virtual memory management "
               "(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 0)";
      }
      break;
  }
  return {};
}

// Makes the resource of @p kind for the device of @p setup, bound to its context. Returns a
// KindResource without resource, and the reason in @p whyNot, when it cannot be made.
KindResource makeKindResource(mr::ResourceKind kind, const DeviceSetup& setup,
                              const Options& options, WarningLog& warnings, std::string& whyNot) {
  KindResource made;
  made.kind = kind;
  whyNot = unavailableReason(kind, setup.device());
  if (!whyNot.empty())
    return made;
  switch (kind) {
    case mr::ResourceKind::Device: {
      made.resource = mr::processResourceRegistry().initial(setup.ordinal());
      const auto& pool = dynamic_cast<const mr::DeviceMemoryResource&>(*made.resource);
      made.detail = "default pool, release threshold " +
                    ms::formatBytes(mr::poolReleaseThreshold(pool.pool())) +
                    " (the registry's initial resource)";
      break;
    }
    case mr::ResourceKind::Managed: {
      const std::uint64_t freeBytes = setup.freeMemory();
      made.owned = std::make_unique<mr::ManagedMemoryResource>(setup.context(), freeBytes);
      made.detail = "budget " + ms::formatBytes(freeBytes) + " (the free memory now)";
      break;
    }
    case mr::ResourceKind::Pinned:
      made.owned = std::make_unique<mr::PinnedHostResource>(setup.context());
      made.detail = "cuMemHostAlloc(CU_MEMHOSTALLOC_DEVICEMAP)";
      break;
    case mr::ResourceKind::Numa: {
      mr::NumaResourceResult numa = mr::makeNumaHostResource(
          setup.context(), [&warnings](const std::string& text) { warnings.add(text); });
      if (!numa.resource) {
        whyNot = numa.unavailableReason;
        return made;
      }
      made.owned = std::move(numa.resource);
      made.detail = numa.description + ", soft binding";
      break;
    }
    case mr::ResourceKind::Vmm: {
      auto vmm = std::make_unique<mr::StripedVmmResource>(setup.context(), options.vmmStripes);
      made.detail = "backing devices " + ms::vmm::formatDeviceList(vmm->backingDevices()) +
                    ", granularity " + ms::formatBytes(vmm->granularity());
      made.owned = std::move(vmm);
      break;
    }
  }
  if (made.owned)
    made.resource = made.owned.get();
  return made;
}

// ------------------------------------------------------------ step 4: allocate from threads

struct Vectors {
  mr::ResourceAllocation a, b, c;
};

// Joins every thread, then rethrows the first error any of them had.
void joinAll(std::vector<std::thread>& threads, const std::vector<std::exception_ptr>& errors) {
  for (std::thread& thread : threads)
    thread.join();
  for (const std::exception_ptr& error : errors) {
    if (error)
      std::rethrow_exception(error);
  }
}

// Writes @p value into every byte of @p scratch where its memory is.
void touch(const mr::ResourceAllocation& scratch, unsigned char value, CUstream stream) {
  if (scratch.resource()->properties().hostAccessible) {
    std::memset(scratch.get(), value, scratch.size());
  } else {
    ms::check(cuMemsetD8Async(scratch.kernelAddress(), value, scratch.size(), stream),
              "cuMemsetD8Async");
  }
}

// Gives A, B and C back now, so that a failing deallocate is reported (the destructors would
// ignore it).
void releaseAll(Vectors& vectors) {
  vectors.a.release();
  vectors.b.release();
  vectors.c.release();
}

/**
 * @p threads host threads push @p setup's context and allocate through
 * getCurrentDeviceResource(): thread t allocates vectors t, t + threads, ... of A, B, C and
 * kScratchPerThread scratch buffers that it fills and frees again at once (stream-ordered frees
 * follow the fill in the stream; the others synchronize the stream first).
 * @throws std::runtime_error when a thread gets another resource than @p expected.
 */
Vectors allocateFromThreads(const DeviceSetup& setup, const mr::MemoryResource& expected,
                            std::uint64_t bytes, int threads) {
  std::vector<mr::ResourceAllocation> vectors(3);
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(threads));
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      try {
        ms::ScopedContext scope(setup.context());  // "current device" = this context's device
        mr::MemoryResource* resource = mr::getCurrentDeviceResource();
        if (resource != &expected) {
          throw std::runtime_error("thread " + std::to_string(t) +
                                   ": getCurrentDeviceResource() returned '" + resource->name() +
                                   "', expected '" + expected.name() + "'");
        }
        for (int v = t; v < 3; v += threads)
          vectors[static_cast<std::size_t>(v)] =
              mr::ResourceAllocation(*resource, bytes, setup.stream());
        for (int i = 0; i < kScratchPerThread; ++i) {
          mr::ResourceAllocation scratch(*resource, kScratchBytes, setup.stream());
          touch(scratch, static_cast<unsigned char>(t + i), setup.stream());
          scratch.release();
        }
      } catch (...) {
        errors[static_cast<std::size_t>(t)] = std::current_exception();
      }
    });
  }
  joinAll(workers, errors);
  return Vectors{std::move(vectors[0]), std::move(vectors[1]), std::move(vectors[2])};
}

/**
 * Allocates, asks the kernel address of, and frees kScratchBytes of @p resource on a new thread
 * that has no current context at all: a context-bound resource must push its own context. Not
 * for the device pool, which needs a current context of its device (the failing cuCtxGetDevice
 * would count as an error under compute-sanitizer).
 * @return true when the thread really had no current context and everything worked.
 */
bool usableWithoutCurrentContext(mr::MemoryResource& resource) {
  bool hadNoContext = false;
  std::exception_ptr error;
  std::thread worker([&] {
    try {
      CUcontext current = nullptr;
      ms::check(cuCtxGetCurrent(&current), "cuCtxGetCurrent");
      hadNoContext = current == nullptr;
      // The null stream: deallocate synchronizes the resource's context's legacy stream.
      mr::ResourceAllocation allocation(resource, kScratchBytes, nullptr);
      if (allocation.kernelAddress() == 0)
        throw std::runtime_error(resource.name() + ": kernel address 0");
      allocation.release();
    } catch (...) {
      error = std::current_exception();
    }
  });
  worker.join();
  if (error)
    std::rethrow_exception(error);
  return hadNoContext;
}

// Fills A and B, runs C = A + B on the vectors' kernel addresses and compares C exactly.
ms::VectorAddCheck addAndVerify(const DeviceSetup& setup, const Vectors& vectors,
                                std::uint32_t seed) {
  const std::uint64_t bytes = vectors.a.size();
  const std::size_t count = bytes / sizeof(float);
  const CUstream stream = setup.stream();
  const bool hostAccessible = vectors.a.resource()->properties().hostAccessible;
  // C starts as NaN: a kernel that wrote nothing can never pass.
  constexpr unsigned int kNaNBits = 0x7FC00000u;
  float* a = hostAccessible ? vectors.a.as<float>() : setup.staging(0);
  float* b = hostAccessible ? vectors.b.as<float>() : setup.staging(1);
  float* c = hostAccessible ? vectors.c.as<float>() : setup.staging(2);
  ms::fillVectorAddInputs(a, b, count, seed);
  if (hostAccessible) {
    std::fill(c, c + count, std::numeric_limits<float>::quiet_NaN());
  } else {
    ms::check(cuMemcpyHtoDAsync(vectors.a.kernelAddress(), a, bytes, stream), "cuMemcpyHtoDAsync");
    ms::check(cuMemcpyHtoDAsync(vectors.b.kernelAddress(), b, bytes, stream), "cuMemcpyHtoDAsync");
    ms::check(cuMemsetD32Async(vectors.c.kernelAddress(), kNaNBits, count, stream),
              "cuMemsetD32Async");
  }
  CUdeviceptr x = vectors.a.kernelAddress(), y = vectors.b.kernelAddress(),
              z = vectors.c.kernelAddress();
  unsigned long long n = count;  // the kernel's parameter types, exactly
  void* args[] = {&x, &y, &z, &n};
  ms::check(cuLaunchKernel(setup.kernel(), setup.grid(), 1, 1, kBlockSize, 1, 1, 0, stream, args,
                           nullptr),
            "cuLaunchKernel");
  if (!hostAccessible)
    ms::check(cuMemcpyDtoHAsync(c, vectors.c.kernelAddress(), bytes, stream), "cuMemcpyDtoHAsync");
  setup.synchronize();
  return ms::checkVectorAdd(a, b, c, count);
}

// --------------------------------------------------------------------------- step 6: latency

// Host time on purpose, not CUDA events: what is measured are host-side API calls (most of them
// synchronous), and a stream-ordered allocation's enqueue has no GPU work an event could bracket.
using Clock = std::chrono::steady_clock;

double millisecondsBetween(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double, std::milli>(end - start).count();
}

void synchronizeStream(CUstream stream) {
  ms::check(cuStreamSynchronize(stream), "cuStreamSynchronize");
}

// Median host time of one call of @p call, after @p warmup untimed calls: the baselines.
template <typename Call>
ms::TimingStats timeHostCall(int warmup, int repetitions, Call&& call) {
  std::vector<double> times;
  for (int i = 0; i < warmup + repetitions; ++i) {
    const Clock::time_point start = Clock::now();
    call();
    const Clock::time_point end = Clock::now();
    if (i >= warmup)
      times.push_back(millisecondsBetween(start, end));
  }
  return ms::summarizeTimings(std::move(times));
}

/**
 * The latency of @p resource at @p bytes, measured the same way for every kind: per batch, the N
 * allocate calls back to back, one cuStreamSynchronize, the N deallocate calls, one
 * cuStreamSynchronize (@p warmup untimed batches first). Every time is per allocation (batch
 * time / N); the row holds the medians over the batches. The stream is idle before each batch.
 */
mr::LatencyRow measureLatency(const std::string& label, mr::MemoryResource& resource,
                              std::uint64_t bytes, int warmup, const mr::LatencyBatches& plan,
                              CUstream stream) {
  const double perAllocation = 1.0 / plan.batchSize;
  std::vector<mr::ResourceAllocation> batch(static_cast<std::size_t>(plan.batchSize));
  std::vector<double> allocateMs, allocateSyncMs, freeMs, freeSyncMs;
  for (int b = 0; b < warmup + plan.batches; ++b) {
    const Clock::time_point start = Clock::now();
    for (mr::ResourceAllocation& allocation : batch)
      allocation = mr::ResourceAllocation(resource, static_cast<std::size_t>(bytes), stream);
    const Clock::time_point allocated = Clock::now();
    synchronizeStream(stream);
    const Clock::time_point allocatedSynced = Clock::now();
    for (mr::ResourceAllocation& allocation : batch)
      allocation.release();
    const Clock::time_point freed = Clock::now();
    synchronizeStream(stream);
    const Clock::time_point freedSynced = Clock::now();
    if (b >= warmup) {
      allocateMs.push_back(millisecondsBetween(start, allocated) * perAllocation);
      allocateSyncMs.push_back(millisecondsBetween(start, allocatedSynced) * perAllocation);
      freeMs.push_back(millisecondsBetween(allocatedSynced, freed) * perAllocation);
      freeSyncMs.push_back(millisecondsBetween(allocatedSynced, freedSynced) * perAllocation);
    }
  }
  mr::LatencyRow row;
  row.resource = label;
  row.bytes = bytes;
  row.batchSize = plan.batchSize;
  row.allocate = ms::summarizeTimings(std::move(allocateMs));
  row.allocateSync = ms::summarizeTimings(std::move(allocateSyncMs));
  row.deallocate = ms::summarizeTimings(std::move(freeMs));
  row.deallocateSync = ms::summarizeTimings(std::move(freeSyncMs));
  return row;
}

// The table's row labels say what a row includes beyond the bare allocation; the lines under the
// table explain them.
const char* rowLabel(mr::ResourceKind kind) {
  switch (kind) {
    case mr::ResourceKind::Device:
      return kReferenceRow;
    case mr::ResourceKind::Managed:
      return "managed: guard + alloc, untouched";
    case mr::ResourceKind::Pinned:
      return "pinned host";
    case mr::ResourceKind::Numa:
      return "numa host";
    case mr::ResourceKind::Vmm:
      return "vmm striped + granularity query";
  }
  return "?";
}

std::string microseconds(const ms::TimingStats& stats) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(1) << stats.medianMs * 1000.0 << " us";
  return text.str();
}

// ------------------------------------------------------------------------------------ the run

ms::Verdict runPerDeviceResource(const Options& options, ms::Report& report) {
  std::ostream& out = report.out();
  ms::JsonObject& json = report.json();
  Checks checks;
  WarningLog warnings;

  const bool kindsGiven = !options.resources.empty();
  const std::vector<mr::ResourceKind> kinds =
      kindsGiven ? mr::parseResourceKinds(options.resources, "--resources")
                 : mr::allResourceKinds();

  // 1. Driver, device, context, kernel, stream.
  ms::checkDriverInit(cuInit(0));
  const CUdevice device = ms::selectDevice(options.common.device);
  const int ordinal = ms::deviceOrdinal(device);
  int deviceCount = 0;
  ms::check(cuDeviceGetCount(&deviceCount), "cuDeviceGetCount");
  out << "Device " << ordinal << ": " << ms::deviceName(device) << " (" << deviceCount
      << (deviceCount == 1 ? " device" : " devices") << " in this machine)\n";

  const std::string whyNoPool = unavailableReason(mr::ResourceKind::Device, device);
  if (!whyNoPool.empty())
    throw ms::WaivedError("device " + std::to_string(ordinal) + " has " + whyNoPool +
                          ": its initial resource cannot allocate");

  // One setup per device that takes part: the chosen one, and with 2+ GPUs every device (step 5
  // runs the vector add on all of them). Their buffers all have the same size, so it is chosen
  // from the smallest free memory among them.
  std::vector<std::unique_ptr<DeviceSetup>> setups(static_cast<std::size_t>(deviceCount));
  setups[static_cast<std::size_t>(ordinal)] = std::make_unique<DeviceSetup>(device);
  DeviceSetup& setup = *setups[static_cast<std::size_t>(ordinal)];
  if (deviceCount >= 2) {
    for (int d = 0; d < deviceCount; ++d) {
      auto& slot = setups[static_cast<std::size_t>(d)];
      if (!slot) {
        CUdevice handle = 0;
        ms::check(cuDeviceGet(&handle, d), "cuDeviceGet");
        slot = std::make_unique<DeviceSetup>(handle);
      }
    }
  }
  std::vector<mr::DeviceFreeMemory> freeMemory;
  for (const auto& slot : setups) {
    if (slot)
      freeMemory.push_back({slot->ordinal(), slot->freeMemory()});
  }
  const mr::DeviceFreeMemory smallest = mr::smallestFreeMemory(freeMemory);
  const std::string sizedFor = freeMemory.size() == 1
                                   ? "the device"
                                   : "device " + std::to_string(smallest.device) +
                                         " (the least free memory of the " +
                                         std::to_string(freeMemory.size()) + " devices used)";
  const std::uint64_t bytes = ms::chooseBufferBytes(options.sizeBytes, kDefaultVectorBytes,
                                                    smallest.freeBytes, 3, sizeof(float), sizedFor);
  for (const auto& slot : setups) {
    if (slot)
      slot->allocateStaging(bytes);
  }
  // The chosen device's context is current for the rest of the run (popped before the setups
  // are destroyed, which are declared earlier).
  ms::ScopedContext current(setup.context());
  out << "Vectors: " << bytes / sizeof(float) << " floats (" << ms::formatBytes(bytes)
      << ") each, allocated by " << options.threads << " host threads";
  if (freeMemory.size() > 1) {
    out << "; sized for the smallest free memory of the " << freeMemory.size() << " devices used ("
        << ms::formatBytes(smallest.freeBytes) << " on device " << smallest.device << ")";
  }
  out << '\n';
  json.set("device", ordinal)
      .set("deviceName", ms::deviceName(device))
      .set("deviceCount", deviceCount)
      .set("bytesPerVector", static_cast<std::uint64_t>(bytes))
      .set("sizedForDevice", smallest.device)
      .set("sizedForFreeBytes", smallest.freeBytes)
      .set("threads", options.threads);

  // 2. The registry, live, on the current device.
  mr::PerDeviceResourceRegistry& registry = mr::processResourceRegistry();
  out << "\n[2] The process-wide registry (" << registry.deviceCount() << " device"
      << (registry.deviceCount() == 1 ? "" : "s")
      << "; current device = cuCtxGetDevice = " << mr::currentContextDevice() << ")\n";
  mr::MemoryResource* initial = mr::getCurrentDeviceResource();
  out << "  getCurrentDeviceResource()        -> " << initial->name() << " ["
      << mr::describeProperties(initial->properties()) << "]\n";
  checks.expect(initial == registry.initial(ordinal),
                "the first getCurrentDeviceResource() must be the initial resource");
  checks.expect(mr::getPerDeviceResource(ordinal) == initial,
                "getPerDeviceResource(ordinal) must equal getCurrentDeviceResource()");
  {
    // A ScopedResourceOverride of the current device is setCurrentDeviceResource() with a
    // guarantee: when it ends it puts the previous resource back on the device it captured, also
    // on an error, so `demo` (declared first, destroyed last) is never left registered.
    mr::PinnedHostResource demo(setup.context());
    mr::ScopedResourceOverride override(registry, demo);
    mr::MemoryResource* previous = override.previous();
    mr::MemoryResource* now = mr::getCurrentDeviceResource();
    mr::MemoryResource* removed = mr::resetCurrentDeviceResource();
    out << "  setCurrentDeviceResource(&pinned) -> returned " << previous->name()
        << " (the previous one; called by a ScopedResourceOverride, which captured device "
        << override.device() << ")\n"
        << "  getCurrentDeviceResource()        -> " << now->name() << '\n'
        << "  resetCurrentDeviceResource()      -> returned " << removed->name() << "; now "
        << mr::getCurrentDeviceResource()->name() << '\n';
    checks.expect(override.device() == ordinal,
                  "the override must be for the current device, " + std::to_string(ordinal));
    checks.expect(previous == initial, "setCurrentDeviceResource must return the initial resource");
    checks.expect(now == &demo, "getCurrentDeviceResource must return the resource just set");
    checks.expect(removed == &demo,
                  "resetCurrentDeviceResource must return the resource it removed");
    checks.expect(mr::getCurrentDeviceResource() == initial,
                  "after the reset the initial resource must be current again");
  }
  bool outOfRange = false;
  try {
    mr::getPerDeviceResource(deviceCount);
  } catch (const std::out_of_range& error) {
    outOfRange = true;
    out << "  getPerDeviceResource(" << deviceCount
        << ")          -> std::out_of_range: " << error.what() << '\n';
  }
  checks.expect(outOfRange, "getPerDeviceResource(" + std::to_string(deviceCount) +
                                ") must throw std::out_of_range");

  // 3. The resources of the device.
  out << "\n[3] Resources of device " << ordinal << '\n';
  std::vector<KindResource> resources;
  ms::JsonArray kindsJson;
  for (const mr::ResourceKind kind : kinds) {
    std::string whyNot;
    KindResource made = makeKindResource(kind, setup, options, warnings, whyNot);
    if (!made.resource) {
      if (kindsGiven) {
        throw ms::WaivedError(std::string("resource '") + mr::kindName(kind) +
                              "' is not available on device " + std::to_string(ordinal) + ": " +
                              whyNot);
      }
      out << "  " << std::left << std::setw(8) << mr::kindName(kind) << std::right
          << "left out: " << whyNot << '\n';
      kindsJson.addRaw(ms::JsonObject()
                           .set("kind", mr::kindName(kind))
                           .set("available", false)
                           .set("reason", whyNot)
                           .dump());
      continue;
    }
    out << "  " << std::left << std::setw(8) << mr::kindName(kind) << std::setw(36)
        << made.resource->name() << std::setw(26)
        << mr::describeProperties(made.resource->properties()) << made.detail << '\n'
        << std::right;
    resources.push_back(std::move(made));
  }

  // 4. Each kind in turn on this device, from several threads.
  out << "\n[4] Each resource in turn on device " << ordinal << ": " << options.threads
      << " threads allocate A, B, C and " << kScratchPerThread << " x "
      << ms::formatBytes(kScratchBytes) << " scratch each via getCurrentDeviceResource()\n";
  std::uint32_t seed = 606;
  for (const KindResource& entry : resources) {
    mr::ScopedResourceOverride override(registry, ordinal, *entry.resource);
    Vectors vectors = allocateFromThreads(setup, *entry.resource, bytes, options.threads);
    const ms::VectorAddCheck verified = addAndVerify(setup, vectors, ++seed);
    releaseAll(vectors);  // the non-stream-ordered kinds synchronize the stream first
    setup.synchronize();
    const std::string label = mr::kindName(entry.kind);
    checks.expect(verified.mismatches == 0, label + ": " + ms::describeMismatch(verified));
    out << "  " << std::left << std::setw(8) << label << std::right << "C = A + B on "
        << entry.resource->name() << ": "
        << (verified.mismatches == 0
                ? "all " + std::to_string(bytes / sizeof(float)) + " elements exact"
                : ms::describeMismatch(verified));
    if (entry.kind != mr::ResourceKind::Device) {
      const bool contextFree = usableWithoutCurrentContext(*entry.resource);
      checks.expect(contextFree, label + ": the thread without a context had one current");
      out << "; used from a thread without a current context: " << (contextFree ? "ok" : "FAILED");
    }
    out << '\n';
    kindsJson.addRaw(ms::JsonObject()
                         .set("kind", mr::kindName(entry.kind))
                         .set("available", true)
                         .set("resource", entry.resource->name())
                         .set("properties", mr::describeProperties(entry.resource->properties()))
                         .set("detail", entry.detail)
                         .set("mismatches", static_cast<std::uint64_t>(verified.mismatches))
                         .dump());
  }
  checks.expect(mr::getCurrentDeviceResource() == initial,
                "after the overrides the initial resource must be current again");
  json.set("kinds", kindsJson);

  // 5. A different resource per device.
  ms::JsonArray perDeviceJson;
  if (deviceCount < 2) {
    out << "\n[5] A different resource per device: skipped (this machine has one device)\n";
  } else {
    std::vector<mr::ResourceKind> available;
    for (const KindResource& entry : resources)
      available.push_back(entry.kind);
    const std::vector<mr::ResourceKind> assignment =
        mr::assignKindsToDevices(available, deviceCount);
    out << "\n[5] A different resource per device, one thread per device "
           "(setCurrentDeviceResource / getCurrentDeviceResource / resetCurrentDeviceResource)\n";
    // One resource per device, bound to that device's context (made in step 1).
    std::vector<KindResource> perDevice(static_cast<std::size_t>(deviceCount));
    for (int d = 0; d < deviceCount; ++d) {
      const DeviceSetup& slot = *setups[static_cast<std::size_t>(d)];
      mr::ResourceKind kind = assignment[static_cast<std::size_t>(d)];
      std::string whyNot;
      KindResource made = makeKindResource(kind, slot, options, warnings, whyNot);
      if (!made.resource) {
        out << "  device " << d << ": " << mr::kindName(kind) << " is not available (" << whyNot
            << "); it keeps the device pool\n";
        made = makeKindResource(mr::ResourceKind::Device, slot, options, warnings, whyNot);
        if (!made.resource)
          throw ms::WaivedError("device " + std::to_string(d) + " has " + whyNot);
      }
      perDevice[static_cast<std::size_t>(d)] = std::move(made);
    }

    // The device pool of another device, used while this device's context is current, is refused
    // before any driver call is made (cuCtxGetDevice succeeds; nothing fails on purpose).
    const int other = (ordinal + 1) % deviceCount;
    if (unavailableReason(mr::ResourceKind::Device,
                          setups[static_cast<std::size_t>(other)]->device())
            .empty()) {
      std::string refusal;
      try {
        mr::ResourceAllocation wrong(*registry.initial(other), kScratchBytes, setup.stream());
      } catch (const std::logic_error& error) {
        refusal = error.what();
      }
      checks.expect(!refusal.empty(), "the device pool of device " + std::to_string(other) +
                                          " must refuse to allocate while device " +
                                          std::to_string(ordinal) + "'s context is current");
      out << "  device pool of device " << other << " used with device " << ordinal
          << "'s context current -> std::logic_error: " << refusal << '\n';
    }

    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(deviceCount));
    std::vector<std::string> results(static_cast<std::size_t>(deviceCount));
    std::vector<Checks> threadChecks(static_cast<std::size_t>(deviceCount));
    std::vector<std::thread> workers;
    for (int d = 0; d < deviceCount; ++d) {
      workers.emplace_back([&, d] {
        const std::size_t index = static_cast<std::size_t>(d);
        try {
          const DeviceSetup& mine = *setups[index];
          mr::MemoryResource& resource = *perDevice[index].resource;
          Checks& local = threadChecks[index];
          ms::ScopedContext scope(mine.context());  // this thread's current device is d
          // setCurrentDeviceResource(&resource), undone on every path (the device is captured
          // now); resetCurrentDeviceResource() below is the normal way back.
          mr::ScopedResourceOverride override(registry, resource);
          local.expect(
              override.device() == d,
              "device " + std::to_string(d) + ": the current device must be " + std::to_string(d));
          local.expect(override.previous() == registry.initial(d),
                       "device " + std::to_string(d) +
                           ": setCurrentDeviceResource must return the initial resource");
          mr::MemoryResource* got = mr::getCurrentDeviceResource();
          local.expect(got == &resource, "device " + std::to_string(d) +
                                             ": getCurrentDeviceResource returned '" + got->name() +
                                             "'");
          Vectors vectors{mr::ResourceAllocation(*got, bytes, mine.stream()),
                          mr::ResourceAllocation(*got, bytes, mine.stream()),
                          mr::ResourceAllocation(*got, bytes, mine.stream())};
          const ms::VectorAddCheck verified =
              addAndVerify(mine, vectors, 7000u + static_cast<std::uint32_t>(d));
          releaseAll(vectors);
          mine.synchronize();
          local.expect(verified.mismatches == 0,
                       "device " + std::to_string(d) + ": " + ms::describeMismatch(verified));
          local.expect(mr::resetCurrentDeviceResource() == &resource,
                       "device " + std::to_string(d) +
                           ": resetCurrentDeviceResource must return the resource it removed");
          results[index] = got->name() + ": " +
                           (verified.mismatches == 0 ? "exact" : ms::describeMismatch(verified));
        } catch (...) {
          errors[index] = std::current_exception();
        }
      });
    }
    joinAll(workers, errors);
    for (int d = 0; d < deviceCount; ++d) {
      const std::size_t index = static_cast<std::size_t>(d);
      checks.merge(threadChecks[index]);
      out << "  device " << d << ": " << results[index] << '\n';
      perDeviceJson.addRaw(ms::JsonObject()
                               .set("device", d)
                               .set("kind", mr::kindName(perDevice[index].kind))
                               .set("result", results[index])
                               .dump());
      checks.expect(registry.get(d) == registry.initial(d),
                    "device " + std::to_string(d) + " must be back on its initial resource");
    }
  }
  json.set("perDevice", perDeviceJson);

  // 6. Latency of each kind on this device, every row measured the same way.
  if (!options.noLatency) {
    const std::vector<std::uint64_t> sizes =
        mr::latencySizes(options.largeBytes.value_or(kDefaultLargeBytes));
    const int warmup = options.common.warmup;
    // As many repetitions as a small row has allocations (10 x --iterations).
    const int baselineRepetitions = mr::latencyRepetitions(1, options.common.iterations);
    out << "\n[6] Allocate / free latency on device " << ordinal
        << ": host time (steady_clock), every row measured the same way\n"
           "  per batch: N allocate calls, one cuStreamSynchronize, N deallocate calls, one "
           "cuStreamSynchronize\n"
           "  times are per allocation (batch time / N), median over the batches; 'alloc' and "
           "'free' are the N calls alone, '+sync' includes the one synchronize\n"
           "  the device pool only enqueues (stream-ordered), so its '+sync' columns count the "
           "work; the other kinds allocate at once,\n"
           "  and their deallocate synchronizes the stream itself, once per call; the ratio "
           "compares alloc+sync\n";
    // Baselines from this run, for reading the table: an idle-stream synchronize, and the
    // managed guard's cuMemGetInfo (this context's device, as in ManagedBuffer).
    const ms::TimingStats syncBaseline =
        timeHostCall(warmup, baselineRepetitions, [&] { synchronizeStream(setup.stream()); });
    const ms::TimingStats guardBaseline = timeHostCall(warmup, baselineRepetitions, [] {
      std::size_t freeBytes = 0, totalBytes = 0;
      ms::check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
    });
    out << "  baselines (median of " << baselineRepetitions
        << "): cuStreamSynchronize of the idle stream " << microseconds(syncBaseline)
        << "; cuMemGetInfo (the managed guard) " << microseconds(guardBaseline) << '\n';

    std::vector<mr::LatencyRow> rows;
    bool hasManaged = false, hasVmm = false;
    for (const KindResource& entry : resources) {
      hasManaged = hasManaged || entry.kind == mr::ResourceKind::Managed;
      hasVmm = hasVmm || entry.kind == mr::ResourceKind::Vmm;
      mr::ScopedResourceOverride override(registry, ordinal, *entry.resource);
      mr::MemoryResource& resource = *mr::getCurrentDeviceResource();
      const auto measureAll = [&](const std::string& label) {
        for (const std::uint64_t size : sizes) {
          const mr::LatencyBatches plan =
              mr::planLatencyBatches(size, mr::latencyRepetitions(size, options.common.iterations));
          rows.push_back(measureLatency(label, resource, size, warmup, plan, setup.stream()));
        }
      };
      measureAll(rowLabel(entry.kind));
      if (entry.kind == mr::ResourceKind::Device) {
        const auto& pool = dynamic_cast<const mr::DeviceMemoryResource&>(resource);
        mr::ScopedPoolReleaseThreshold keep(pool.pool(), std::numeric_limits<std::uint64_t>::max());
        measureAll("device pool, keeps memory");
      }
    }
    out << mr::formatLatencyTable(rows, kReferenceRow);
    if (!rows.empty() && rows.front().resource == kReferenceRow) {
      out << "  device pool: release threshold as found (0: freed memory goes back to the system "
             "at each synchronization); keeps memory: threshold at its maximum, freed memory "
             "stays in the pool\n";
    }
    if (hasManaged) {
      out << "  managed: 03's ManagedBuffer, i.e. its free-memory guard (one cuMemGetInfo per "
             "allocation, see the baseline) + cuMemAllocManaged; no page is touched, so no page "
             "is created: not the cost of managed memory in use\n";
    }
    if (hasVmm) {
      out << "  vmm: every allocation also queries cuMemGetAllocationGranularity again (02's "
             "StripedVmmRange, once per backing and mapping device)\n";
    }
    ms::JsonArray latencyJson;
    for (const mr::LatencyRow& row : rows) {
      ms::JsonObject entry;
      entry.set("resource", row.resource)
          .set("bytes", row.bytes)
          .set("batchSize", row.batchSize)
          .set("batches", row.allocate.samples)
          .set("allocateUs", row.allocate.medianMs * 1000.0)
          .set("allocateWithSyncUs", row.allocateSync.medianMs * 1000.0)
          .set("freeUs", row.deallocate.medianMs * 1000.0)
          .set("freeWithSyncUs", row.deallocateSync.medianMs * 1000.0);
      if (const auto ratio = mr::allocateRatio(rows, row, kReferenceRow))
        entry.set("allocateWithSyncOverDevicePool", *ratio);
      latencyJson.addRaw(entry.dump());
    }
    json.set("latency", latencyJson)
        .set("latencyBaselines", ms::JsonObject()
                                     .set("streamSynchronizeUs", syncBaseline.medianMs * 1000.0)
                                     .set("memGetInfoUs", guardBaseline.medianMs * 1000.0)
                                     .set("repetitions", baselineRepetitions));
  }

  // 7. Verdict.
  for (const std::string& warning : warnings.take())
    out << "Warning: " << warning << '\n';
  checks.expect(registry.get(ordinal) == registry.initial(ordinal),
                "device " + std::to_string(ordinal) + " must end on its initial resource");
  out << "\nChecks: " << checks.count() - static_cast<int>(checks.failures().size()) << " of "
      << checks.count() << " passed\n";
  for (const std::string& failure : checks.failures())
    out << "  FAILED: " << failure << '\n';
  json.set("checks", checks.count())
      .set("failedChecks", static_cast<int>(checks.failures().size()));
  return checks.failures().empty() ? ms::Verdict::Pass : ms::Verdict::Fail;
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
