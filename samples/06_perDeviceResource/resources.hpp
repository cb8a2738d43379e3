// The table below is for people and Doxygen alike; reflowed, it would be readable by neither.
// clang-format off
/**
 * @file resources.hpp
 * @brief The scaffolding under 06_perDeviceResource's lesson: every device set up as in 01, the
 *        five kinds of memory resource and makeResources(), which makes them, and the vector add
 *        on memory of any resource.
 *
 * | kind | memory | allocate / deallocate | properties | reuses |
 * |---|---|---|---|---|
 * | device | the device's default memory pool | cuMemAllocFromPoolAsync / cuMemFreeAsync | device, stream-ordered | — |
 * | managed | managed memory behind a free-memory guard and a budget | cuMemAllocManaged / cuMemFree | host + device | — |
 * | pinned | page-locked host memory mapped for the device | cuMemHostAlloc(DEVICEMAP) / cuMemFreeHost | host + device | — |
 * | numa | host memory bound to the GPU's nearest NUMA node, then pinned | mmap + mbind + cuMemHostRegister / cuMemHostUnregister + munmap | host + device | 04's NumaBoundHostRange |
 * | vmm | one virtual range striped over physical allocations | cuMemAddressReserve + cuMemCreate + cuMemMap + cuMemSetAccess / cuMemUnmap + cuMemAddressFree | device | 02's StripedVmmRange |
 *
 * Each kind is a small class that writes its own driver calls: the pinned host kind, which the
 * lesson's core builds itself, and the base it shares with the other context-bound kinds
 * (TrackedResource) are in pinned_host_resource.hpp; the device pool, every device's initial
 * resource, in device_pool_resource.hpp; the others are in resources.cpp, made by
 * makeResources().
 * - **Stream.** Only the device pool is stream-ordered. The others allocate at once and, in
 *   deallocate, synchronize the stream before they free (memory_resource.hpp).
 * - **Context.** The device pool belongs to its device. By its own policy (RMM's, not a driver
 *   rule: the pool and a created stream already name the device) it is used while a context of that
 *   device is current and refuses (std::logic_error naming both devices) while another device's
 *   context is current; with none current, cuCtxGetDevice fails (CudaError). The other kinds
 *   belong to the context they were made for and push it around every driver call they make, so
 *   they work from any thread, whatever is current there; the context must outlive them.
 * - **Tracking.** The other kinds keep the RAII owner of each allocation (OwnedAllocations, at the
 *   end of this header): a foreign pointer or a wrong size is refused, and what is left is freed
 *   with the resource.
 *
 * Also here: what the lesson sets up on every device (DeviceSetup, as in 01_vectorAddDrv), the
 * vector add it runs on memory of any resource (launchVectorAddAndCheck(), fillBuffer()), the
 * threads it starts (Thread: a std::thread whose join() rethrows), what its core returns
 * (RegistryRun) and what keeps the registry right on an error path (restoreIfRegistered()).
 */
// clang-format on
#pragma once

#include <cuda.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "memory_resource.hpp"
#include "memsamples.hpp"
#include "per_device_registry.hpp"
#include "resource_plan.hpp"
#include "support/text_format.hpp"
#include "support/vector_add.hpp"

namespace memsamples::resource {

/**
 * What one device needs for the vector add, as in 01_vectorAddDrv: a context of its own
 * (cuCtxCreate), the kernel (cuModuleLoadData, cuModuleGetFunction), a stream, and pinned host
 * copies of A, B and C for the kinds whose memory the CPU cannot touch. cuCtxCreate makes the
 * context current; it is popped at once and pushed (ScopedContext) wherever it is used. What was
 * made in it is released in it, the context itself last (releaseDevice()).
 */
struct DeviceSetup {
  /// Takes over @p created, a context of @p handle made by createContext(), and makes everything
  /// but the staging copies in it. @throws CudaError; what the fatbin lookup throws.
  DeviceSetup(CUdevice handle, OwnedContext created);
  /// With the context pushed: waits for and destroys the stream, then releases the staging
  /// copies and the module.
  ~DeviceSetup();
  DeviceSetup(const DeviceSetup&) = delete;
  DeviceSetup& operator=(const DeviceSetup&) = delete;
  /// The pinned copy of vector @p index (0: A, 1: B, 2: C).
  float* stagingVector(int index) const {
    return static_cast<float*>(staging.get()) + index * (vectorBytes / sizeof(float));
  }

  CUdevice device;                ///< The device.
  int ordinal;                    ///< Its ordinal.
  OwnedContext context;           ///< Its own context.
  OwnedModule module;             ///< vectorAdd_kernel.fatbin, loaded in it.
  CUfunction kernel = nullptr;    ///< VecAdd_kernel.
  unsigned int grid = 0;          ///< Resident blocks for kBlockSize threads.
  OwnedPinnedHostMemory staging;  ///< A, B and C, one after the other.
  std::uint64_t vectorBytes = 0;  ///< The size of each.
  OwnedStream stream;  ///< A non-blocking stream of the context; declared after what it uses.
  static constexpr int kBlockSize = 256;  ///< Threads per block of VecAdd_kernel.
};

/// The free memory of the current context's device: cuMemGetInfo answers for the context
/// current on the calling thread (the managed guard's call, and how the vectors are sized).
/// @throws CudaError.
inline std::size_t currentFreeMemory() {
  std::size_t freeBytes = 0;
  std::size_t totalBytes = 0;
  check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
  return freeBytes;
}

/// Every device the run uses set up, the GPUs left out, and the vectors' size.
struct Devices {
  std::vector<std::unique_ptr<DeviceSetup>> setups;  ///< The devices used, in ordinal order.
  std::vector<int> used;               ///< Their ordinals, in the same order.
  std::vector<LeftOutDevice> leftOut;  ///< GPUs of this machine left out, and why.
  int chosen = 0;             ///< The device the run is about (`--device`, or the fastest).
  std::string chosenName;     ///< Its name.
  std::uint64_t bytes = 0;    ///< Bytes per vector, the same on every device.
  DeviceFreeMemory smallest;  ///< The device whose free memory sized the vectors.
  int count = 0;              ///< The number of devices of this machine (the registry's).
  ResourceKindList kinds;     ///< The kinds to make (`--resources`, parsed before cuInit).

  /// The chosen device's setup. @throws std::logic_error when it has none.
  const DeviceSetup& chosenSetup() const {
    for (const std::unique_ptr<DeviceSetup>& setup : setups)
      if (setup->ordinal == chosen)
        return *setup;
    throw std::logic_error("the chosen device " + std::to_string(chosen) + " was not set up");
  }
  /// The device used after the chosen one (wrapping around): whose pool step 6 tries here.
  int nextUsedDevice() const {
    const auto at = std::find(used.begin(), used.end(), chosen);
    if (at == used.end() || used.size() < 2)
      return chosen;
    return std::next(at) == used.end() ? used.front() : *std::next(at);
  }
};

/**
 * Step 1: parses @p resources (a `--resources` value; empty: every kind) before any driver call,
 * cuInit (Common's checkDriverInit() waives a driver of an older CUDA major version), picks
 * the device (Common's selectDevice()), waives when it has no memory pools (its initial resource
 * could not allocate) or cannot map host memory (the core's pinned host resource could not), and
 * sets it up. Then every other GPU that may take part in step 6's
 * resource per device (@p named, `--devices`, or else all of them): a GPU whose compute mode
 * forbids a context gets none, one that refuses cuCtxCreate as busy is noted, and
 * chooseDevices() decides which are used and how large the vectors are (they fit the chosen and
 * the named devices, and the host memory their pinned staging takes); the others are left out
 * with the reason and released (releaseDevice()). Allocates the staging copies and reports the
 * "Device" line.
 * @throws WaivedError; UsageError for a size that does not fit or a device that does not exist;
 *         CudaError.
 */
Devices setUpDevices(const std::optional<long long>& device, const std::vector<int>& named,
                     const std::optional<std::uint64_t>& requestedBytes,
                     const std::string& resources, Report& report);

/// Releases @p setup as 01 does, each answer checked, with its context pushed: the stream once
/// idle (cuStreamSynchronize, cuStreamDestroy), the staging (cuMemFreeHost), the module
/// (cuModuleUnload); then its context (cuCtxDestroy). Each owner lets go only after its call
/// succeeded, so a failure leaves the rest to the owners. @throws CudaError.
void releaseDevice(DeviceSetup& setup);

/// A, B and C of the vector add, in that order, each one allocation of a resource.
using Vectors = std::array<ResourceAllocation, 3>;

/**
 * The interface at work, on A, B and C (@p vectors, each of @p setup's vector size, allocated by
 * the resource beside it in @p resources): fills A and B where the CPU may write them (the memory
 * itself when the resource is host-accessible, else the pinned staging copies and
 * cuMemcpyHtoDAsync), launches VecAdd_kernel (cuLaunchKernel) on each vector's
 * MemoryResource::kernelAddress() (mapped host memory may have its own), reads C back and
 * compares it exactly. The vectors stay allocated: the caller deallocates them.
 * @throws CudaError.
 */
VectorAddCheck launchVectorAddAndCheck(const DeviceSetup& setup,
                                       const std::array<MemoryResource*, 3>& resources,
                                       const std::array<void*, 3>& vectors, std::uint32_t seed);

/// launchVectorAddAndCheck() on A, B and C held by their owners (step 6).
/// @throws CudaError; std::logic_error for an empty one.
VectorAddCheck launchVectorAddAndCheck(const DeviceSetup& setup, const Vectors& vectors,
                                       std::uint32_t seed);

/// Deallocates A, B and C (ResourceAllocation::release(), so that a failing deallocate is
/// reported), then waits for @p stream: a stream-ordered resource's frees are queued there.
/// @throws CudaError; what deallocate throws.
void releaseVectors(Vectors& vectors, CUstream stream);

/// Step 6's scratch buffers: each thread allocates, fills and frees this many of this size.
inline constexpr int kScratchPerThread = 8;
/// The size of one scratch buffer (64 KiB).
inline constexpr std::size_t kScratchBytes = 64 << 10;

/// A, B and C of @p setup's vector size from @p resource, on @p setup's stream (step 6).
/// @throws what the resource throws; nothing stays allocated then.
inline Vectors allocateVectors(MemoryResource& resource, const DeviceSetup& setup) {
  const CUstream stream = setup.stream.get();
  return {ResourceAllocation(resource, setup.vectorBytes, stream),
          ResourceAllocation(resource, setup.vectorBytes, stream),
          ResourceAllocation(resource, setup.vectorBytes, stream)};
}

/// Step 6's use of a short-lived buffer: fills @p buffer with @p value, by the CPU where its
/// memory is host-accessible, else with cuMemsetD8Async on @p stream. A stream-ordered free
/// queued on @p stream afterwards follows the fill; the other kinds synchronize the stream
/// before they free. @throws CudaError.
void fillBuffer(const ResourceAllocation& buffer, unsigned char value, CUstream stream);

/// Why @p kind cannot run on @p device, or empty: kindUnavailableReason() with this build's NUMA
/// support and @p device's attributes. Attribute queries only: nothing is made to fail, and a
/// failing query throws (CudaError) instead of waiving the kind.
std::string unavailableReason(ResourceKind kind, CUdevice device);

/// Not a resource itself: one resource of one kind for one device (or why there is none), and
/// what the run recorded about it.
struct KindResource {
  ResourceKind kind = ResourceKind::Device;  ///< The kind.
  MemoryResource* resource = nullptr;        ///< The resource to use; null when unavailable.
  std::unique_ptr<MemoryResource> owned;     ///< resource, or (device kind) what timed points to.
  /// What the latency table times, when not resource: for the device kind the same pool without
  /// its current-device policy (a check of the resource's, not the driver's).
  MemoryResource* timed = nullptr;
  std::string detail;                    ///< What it chose: threshold, budget, node, stripes.
  std::string whyNot;                    ///< Why resource is null (or replaced, per device).
  CUmemoryPool pool = nullptr;           ///< The device pool's pool (the latency table).
  VectorAddCheck verified;               ///< The vector add on its memory.
  std::optional<bool> contextFree;       ///< usableWithoutCurrentContext(), where asked.
  MemoryResource* previous = nullptr;    ///< What set returned when this resource was set.
  MemoryResource* removed = nullptr;     ///< What reset returned afterwards.
  std::vector<MemoryResource*> answers;  ///< What getCurrentDeviceResource() gave each thread.
};

/// Warnings (the NUMA binding's) from any thread, printed with the verdict. Each distinct text is
/// kept once: every allocation of a NUMA resource repeats the same binding decision.
class WarningLog {
 public:
  /// A function that adds one warning; the log must outlive it.
  std::function<void(const std::string&)> sink() {
    return [this](const std::string& text) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (std::find(lines_.begin(), lines_.end(), text) == lines_.end())
        lines_.push_back(text);
    };
  }
  /// One "Warning: ..." line each, in the order they came.
  void print(std::ostream& out) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const std::string& line : lines_)
      out << "Warning: " << line << '\n';
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> lines_;
};

/**
 * A std::thread whose function may throw: join() waits for the thread and rethrows what the
 * function threw (a plain std::thread would call std::terminate), and the destructor joins a
 * thread nobody joined (an error path), so that no thread outlives what it uses. Step 6's
 * threads are these. Movable, not copyable.
 */
class Thread {
 public:
  /// Starts a thread that runs @p function().
  template <typename Function>
  explicit Thread(Function function)
      : thrown_(std::make_unique<std::exception_ptr>()),
        thread_([function = std::move(function), thrown = thrown_.get()]() mutable {
          try {
            function();
          } catch (...) {
            *thrown = std::current_exception();
          }
        }) {}
  /// Takes over @p other's thread.
  Thread(Thread&& other) noexcept = default;
  Thread& operator=(Thread&&) = delete;
  Thread(const Thread&) = delete;
  Thread& operator=(const Thread&) = delete;
  /// Joins the thread if nobody did (an error path); what it threw is dropped then.
  ~Thread() {
    if (thread_.joinable())
      thread_.join();
  }

  /// Waits for the thread, then rethrows what its function threw, if anything.
  /// @throws what the function threw; std::system_error when joined already.
  void join() {
    thread_.join();
    if (*thrown_)
      std::rethrow_exception(*thrown_);
  }

 private:
  std::unique_ptr<std::exception_ptr> thrown_;  // made first: the thread writes into it
  std::thread thread_;
};

/// If @p resource is still @p device's resource, puts @p previous back (what set returned when
/// @p resource was set; null: the device's initial resource, a reset): an error path's way to
/// keep the registry from pointing at a resource that is about to be destroyed (the catch around
/// the lesson's core; Resources' destructor). A null @p resource is never registered: nothing
/// changes. Errors are swallowed: it runs on an error path.
inline void restoreIfRegistered(int device, const MemoryResource* resource,
                                MemoryResource* previous) noexcept {
  try {
    if (getPerDeviceResource(device) == resource)
      setPerDeviceResource(device, previous);
  } catch (...) {
    // The registry accepted this device and this resource before; nothing to report here.
  }
}

/// What the lesson's core saw (steps 3-5), checked in step 7. The resource it built is destroyed
/// by then: these pointers are compared as addresses only, never used.
struct RegistryRun {
  MemoryResource* previous = nullptr;    ///< What set returned: the device's initial resource.
  std::vector<MemoryResource*> answers;  ///< What getCurrentDeviceResource() gave each thread.
  VectorAddCheck verified;               ///< C = A + B on the resource's memory.
  MemoryResource* removed = nullptr;     ///< What reset returned: the resource that was set.
};

/// Step 6's resources: one per kind for the chosen device, one per device for the per-device part.
struct Resources {
  Resources() = default;
  /// Takes over @p other's resources.
  Resources(Resources&& other) = default;
  /// The error path of step 6: an entry that was set (its previous is recorded) and is still
  /// registered for its device gets that previous resource back before any kind is destroyed
  /// (restoreIfRegistered()). On the good path each was reset already, and nothing changes.
  ~Resources() {
    for (const std::vector<KindResource>* entries : {&kinds, &perDevice}) {
      for (const KindResource& entry : *entries) {
        if (entry.previous != nullptr && entry.resource != nullptr)
          restoreIfRegistered(entry.resource->ownerDevice().value_or(0), entry.resource,
                              entry.previous);
      }
    }
  }

  std::unique_ptr<WarningLog> warnings;  ///< Declared first: the kinds warn into it.
  std::vector<KindResource> kinds;       ///< One per kind asked for, in the order of the kinds.
  std::vector<KindResource> perDevice;   ///< Per device used, in order (empty with one device).
  std::string refusal;  ///< What another device's pool said when used here (2+ devices).
};

/**
 * Step 6's resources: makes each of the kinds of @p devices for its chosen device (when they were
 * listed with `--resources`, a kind the device lacks waives the run), tries every context-bound
 * kind on a thread without a current context, makes the per-device resource of every device (2+
 * devices: the kind assignKindsToDevices() gives it, else its pool, and whyNot says why), and
 * asks another device's pool to allocate here (it must refuse). @throws WaivedError; CudaError.
 */
Resources makeResources(const Devices& devices, int vmmStripes);

/*
 * OwnedAllocations: the thread-safe table in which a resource keeps the RAII owner of each
 * allocation it handed out (an OwnedDeviceMemory, a StripedVmmRange, a bound host range...).
 * The driver-backed resources of samples 02, 03 and 04 are RAII classes: each allocation is an
 * object that frees its memory when destroyed. A memory resource hands out raw pointers instead,
 * so it keeps those objects here, keyed by pointer, until deallocate() takes them back. That
 * also gives every such resource the same checks: a pointer it did not allocate, or a size that
 * is not the allocated one, is refused with a message instead of freeing the wrong thing. What is
 * still in the table when the resource is destroyed is freed then, so nothing leaks.
 *
 * CUDA-free; unit tested with a fake owner.
 */

/**
 * A table from pointer to (size, owner), safe to use from many threads.
 * @tparam Owner a movable type whose destructor frees the allocation.
 */
template <typename Owner>
class OwnedAllocations {
 public:
  /// @param resourceName names the resource in error messages.
  explicit OwnedAllocations(std::string resourceName) : resourceName_(std::move(resourceName)) {}

  /**
   * Stores @p owner of the allocation at @p ptr of @p bytes.
   * @throws std::logic_error when @p ptr is already in the table (the allocator handed out one
   *         address twice); @p owner is then destroyed, i.e. its memory freed.
   */
  void add(void* ptr, std::size_t bytes, Owner owner) {
    std::lock_guard<std::mutex> lock(mutex_);
    const bool inserted = entries_.try_emplace(ptr, Entry{bytes, std::move(owner)}).second;
    if (!inserted)
      throw std::logic_error(resourceName_ + ": address " + text(ptr) + " was handed out twice");
  }

  /**
   * Removes and returns the owner of @p ptr; destroying it frees the memory.
   * @throws std::invalid_argument (and leaves the table unchanged) when @p ptr is not in the
   *         table or @p bytes is not the allocated size.
   */
  Owner take(void* ptr, std::size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto found = entries_.find(ptr);
    if (found == entries_.end())
      throw std::invalid_argument(resourceName_ + ": deallocate of " + text(ptr) +
                                  ", which this resource did not allocate (or freed already)");
    if (found->second.bytes != bytes) {
      throw std::invalid_argument(resourceName_ + ": deallocate of " + text(ptr) + " with " +
                                  std::to_string(bytes) + " bytes, but it was allocated with " +
                                  std::to_string(found->second.bytes) + " bytes");
    }
    Owner owner = std::move(found->second.owner);
    entries_.erase(found);
    return owner;
  }

  /// Frees every allocation still in the table now (the owners are destroyed after the lock is
  /// released); for a resource destructor that must free in a particular context.
  void clear() noexcept {
    std::unordered_map<void*, Entry> entries;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      entries.swap(entries_);
    }
  }

 private:
  struct Entry {
    std::size_t bytes;
    Owner owner;
  };
  static std::string text(void* ptr) { return hex(reinterpret_cast<std::uintptr_t>(ptr)); }

  std::string resourceName_;
  std::mutex mutex_;
  std::unordered_map<void*, Entry> entries_;
};

}  // namespace memsamples::resource
