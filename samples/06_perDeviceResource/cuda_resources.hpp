// The table below is for people and Doxygen alike; reflowed, it would be readable by neither.
// clang-format off
/**
 * @file cuda_resources.hpp
 * @brief The driver-backed memory resources of 06_perDeviceResource and the process-wide
 *        per-device registry with its free functions (getPerDeviceResource() and friends).
 *
 * | resource | memory | allocate / deallocate | properties |
 * |---|---|---|---|
 * | DeviceMemoryResource | the device's default memory pool | cuMemAllocFromPoolAsync / cuMemFreeAsync | device, stream-ordered |
 * | ManagedMemoryResource | managed memory (03's ManagedBuffer: guard + budget) | cuMemAllocManaged / cuMemFree | host + device |
 * | PinnedHostResource | page-locked host memory mapped for the device | cuMemHostAlloc(DEVICEMAP) / cuMemFreeHost | host + device |
 * | NumaHostResource (numa_resource.hpp) | host memory bound to the GPU's nearest NUMA node (04) | mmap + mbind + cuMemHostRegister / cuMemHostUnregister + munmap | host + device |
 * | StripedVmmResource | a striped VMM range (02's StripedVmmRange) | cuMemAddressReserve + cuMemCreate + cuMemMap + cuMemSetAccess / cuMemUnmap + cuMemAddressFree | device |
 *
 * Only the device pool is stream-ordered. The others allocate at once (allocate ignores the
 * stream) and, in deallocate, synchronize the stream before freeing, so that memory still used by
 * work queued on that stream is never freed under it (memory_resource.hpp; one helper does it for
 * all: synchronizeThenTake()).
 *
 * **Contexts.** Each resource belongs to one device. The ones that allocate in a context (managed,
 * pinned, NUMA-bound, VMM) are given that context at construction and push it around every driver
 * call (ScopedContext: allocate, deallocate, kernelAddress and the destructor), so they work from
 * any thread, whatever context is current there; the context must outlive the resource. The
 * device pool belongs to the device, not to a context: it checks instead that a context of its
 * device is current and refuses with std::logic_error otherwise.
 *
 * The process-wide registry is the one deliberate global of the collection: it *is* the feature
 * (one answer to "which resource does device d use" for the whole process, as in RMM). It is made
 * on first use, after cuInit, with cuDeviceGetCount devices, a DeviceMemoryResource as each
 * device's initial resource, and cuCtxGetDevice as "the current device".
 */
// clang-format on
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "managed_buffer.hpp"
#include "memory_resource.hpp"
#include "memsamples.hpp"
#include "owned_allocations.hpp"
#include "per_device_registry.hpp"
#include "striped_vmm.hpp"

namespace memsamples::resource {

/**
 * Stream-ordered device memory from @p device's default memory pool: cuMemAllocFromPoolAsync and
 * cuMemFreeAsync. The initial resource of every device in the process-wide registry.
 *
 * cuMemAllocAsync would allocate from the pool *current* to the stream's device; naming the pool
 * makes the resource's memory independent of the stream and of cuDeviceSetMemPool. Allocations
 * are not tracked (the pool does that): each must be returned with deallocate (ResourceAllocation
 * does it). Two resources on the same pool are equal. The pool is the device's, not a context's,
 * so the resource holds no context; allocate and deallocate check that a context of its device is
 * current (cuCtxGetDevice) and throw std::logic_error naming both devices otherwise.
 */
class DeviceMemoryResource final : public MemoryResource {
 public:
  /// Looks up the default pool when the device supports memory pools; otherwise allocate()
  /// throws a message saying so. Needs no context. @throws CudaError.
  explicit DeviceMemoryResource(CUdevice device);
  /// The pool (null when the device has no memory pools).
  CUmemoryPool pool() const noexcept { return pool_; }

 private:
  // allocate and deallocate: @throws std::logic_error naming both devices when the current
  // context belongs to another device; CudaError when no context is current.
  void requireOwnDevice(const char* operation) const;
  void* doAllocate(std::size_t bytes, CUstream stream) override;
  void doDeallocate(void* ptr, std::size_t bytes, CUstream stream) override;
  bool doIsEqual(const MemoryResource& other) const noexcept override;
  ResourceProperties doProperties() const noexcept override;
  std::optional<int> doOwnerDevice() const noexcept override { return ordinal_; }
  std::string doName() const override;

  CUdevice device_;
  int ordinal_;  // what the registry and people call the device
  CUmemoryPool pool_ = nullptr;
};

/**
 * Sets a pool's CU_MEMPOOL_ATTR_RELEASE_THRESHOLD for the lifetime of this object, then puts the
 * old value back and trims the pool to it (cuMemPoolTrimTo), so that the memory it kept is
 * returned. With the default threshold 0 the pool gives its free memory back to the system at
 * every synchronization; a high threshold keeps it for the next allocation.
 */
class ScopedPoolReleaseThreshold {
 public:
  /// @throws CudaError naming cuMemPoolGetAttribute or cuMemPoolSetAttribute.
  ScopedPoolReleaseThreshold(CUmemoryPool pool, std::uint64_t threshold);
  /// Restores the old threshold; errors are ignored.
  ~ScopedPoolReleaseThreshold();
  ScopedPoolReleaseThreshold(const ScopedPoolReleaseThreshold&) = delete;
  ScopedPoolReleaseThreshold& operator=(const ScopedPoolReleaseThreshold&) = delete;
  /// The threshold that was in force before.
  std::uint64_t previous() const noexcept { return previous_; }

 private:
  CUmemoryPool pool_;
  std::uint64_t previous_ = 0;
};

/// CU_MEMPOOL_ATTR_RELEASE_THRESHOLD of @p pool. @throws CudaError.
std::uint64_t poolReleaseThreshold(CUmemoryPool pool);

// ------------------------------------------------------------------------------------------------
/// @name What the context-bound resources share
/// @{

/// A context and its device, as a context-bound resource keeps them.
struct ResourceContext {
  CUcontext context = nullptr;  ///< Pushed around every driver call of the resource.
  CUdevice device = 0;          ///< The context's device.
  int ordinal = 0;              ///< The device's ordinal, as the registry and people name it.
};

/**
 * @p context with its device (cuCtxGetDevice_v2, which asks without making it current).
 * @throws std::invalid_argument for a null context; CudaError (e.g. a destroyed context).
 */
ResourceContext describeContext(CUcontext context);

/**
 * The deallocate rule of every resource that frees at once: synchronizes @p stream (so that work
 * queued on it that may still use the memory has finished), then takes the owner of @p ptr out of
 * @p allocations. Destroying the returned owner frees the memory.
 * @throws CudaError naming cuStreamSynchronize (nothing is taken then); what
 *         OwnedAllocations::take() throws.
 */
template <typename Owner>
Owner synchronizeThenTake(OwnedAllocations<Owner>& allocations, void* ptr, std::size_t bytes,
                          CUstream stream) {
  check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  return allocations.take(ptr, bytes);
}

/**
 * Frees what @p allocations still holds with @p context pushed: for the destructor of a
 * context-bound resource, whose members would otherwise be freed in whatever context is current.
 * If the push fails, nothing is freed here and the table's own destructor frees the rest.
 */
template <typename Owner>
void freeRemainingInContext(CUcontext context, OwnedAllocations<Owner>& allocations) noexcept {
  try {
    ScopedContext scope(context);
    allocations.clear();
  } catch (...) {
    // A destructor reports nothing (as DriverHandle); see above for what happens then.
  }
}

/// @}

/**
 * Managed memory through 03's ManagedBuffer: the free-memory guard (one cuMemGetInfo) runs before
 * every cuMemAllocManaged, and a ManagedMemoryBudget of the resource keeps the *sum* of its live
 * allocations within @p budgetBytes (see managed_buffer.hpp for why both are needed). allocate
 * touches no page: managed pages are created on first touch, by whoever uses the memory.
 */
class ManagedMemoryResource final : public MemoryResource {
 public:
  /// @param context the context that allocates (its device's free memory is what the guard
  ///        reads); must outlive the resource.
  /// @param budgetBytes the most managed memory this resource keeps allocated at once.
  /// @throws what describeContext() throws.
  ManagedMemoryResource(CUcontext context, std::uint64_t budgetBytes);
  /// Frees what is still allocated, in the resource's context.
  ~ManagedMemoryResource() override;
  /// The budget (its reserved() is the live managed memory of this resource).
  const managed::ManagedMemoryBudget& budget() const noexcept { return budget_; }

 private:
  void* doAllocate(std::size_t bytes, CUstream stream) override;
  void doDeallocate(void* ptr, std::size_t bytes, CUstream stream) override;
  ResourceProperties doProperties() const noexcept override;
  std::optional<int> doOwnerDevice() const noexcept override { return context_.ordinal; }
  std::string doName() const override;

  ResourceContext context_;
  managed::ManagedMemoryBudget budget_;  // declared first: the buffers give their bytes back to it
  OwnedAllocations<managed::ManagedBuffer> allocations_;
};

/**
 * Page-locked host memory mapped into the device's address space: cuMemHostAlloc with
 * CU_MEMHOSTALLOC_DEVICEMAP. Not PORTABLE: it is pinned for the context that allocated it,
 * which is what "belongs to its device" means for host memory. kernelAddress() is
 * cuMemHostGetDevicePointer in that context.
 */
class PinnedHostResource final : public MemoryResource {
 public:
  /// @param context the context that allocates and maps the memory; must outlive the resource.
  /// @throws what describeContext() throws.
  explicit PinnedHostResource(CUcontext context);
  /// Frees what is still allocated, in the resource's context.
  ~PinnedHostResource() override;

 private:
  void* doAllocate(std::size_t bytes, CUstream stream) override;
  void doDeallocate(void* ptr, std::size_t bytes, CUstream stream) override;
  ResourceProperties doProperties() const noexcept override;
  CUdeviceptr doKernelAddress(void* ptr) const override;
  std::optional<int> doOwnerDevice() const noexcept override { return context_.ordinal; }
  std::string doName() const override;

  ResourceContext context_;
  OwnedAllocations<OwnedPinnedHostMemory> allocations_;
};

/**
 * Each allocation is one of 02's StripedVmmRange: @p stripes physical allocations (at least one
 * per backing device) on the device and on every peer it can access that supports VMM
 * (vmm::discoverBackingDevices), mapped read-write for the device only. Sizes are rounded up to
 * stripes x granularity (2 MiB x stripes on an H200), so small allocations waste a lot: VMM is
 * for large, long-lived buffers. Each allocation also queries the granularity again
 * (vmm::stripedGranularity: one cuMemGetAllocationGranularity per backing and per mapping
 * device) instead of reusing the one read here, so the latency table's "vmm striped +
 * granularity query" row still measures what it says.
 */
class StripedVmmResource final : public MemoryResource {
 public:
  /// Reads the topology (vmm::queryDeviceTopology) and the granularity once, for the name and
  /// the table. @param context the context that builds and frees the ranges; must outlive the
  /// resource. @param stripes stripes per allocation (raised to one per backing device).
  /// @throws std::runtime_error when the device does not support VMM; CudaError.
  StripedVmmResource(CUcontext context, int stripes);
  /// Frees what is still allocated, in the resource's context.
  ~StripedVmmResource() override;
  /// The devices whose memory backs the stripes.
  const std::vector<int>& backingDevices() const noexcept { return backing_; }
  /// Stripes per allocation.
  int stripes() const noexcept { return stripes_; }
  /// The granularity every stripe respects.
  std::uint64_t granularity() const noexcept { return granularity_; }

 private:
  void* doAllocate(std::size_t bytes, CUstream stream) override;
  void doDeallocate(void* ptr, std::size_t bytes, CUstream stream) override;
  ResourceProperties doProperties() const noexcept override;
  std::optional<int> doOwnerDevice() const noexcept override { return context_.ordinal; }
  std::string doName() const override;

  ResourceContext context_;
  std::vector<int> backing_;
  int stripes_ = 1;
  std::uint64_t granularity_ = 0;
  OwnedAllocations<vmm::StripedVmmRange> allocations_;
};

// ------------------------------------------------------------------------------------------------
/// @name The process-wide registry
/// RMM's per-device resource functions for the CUDA driver API. "Current device" is the device of
/// the calling thread's current context (cuCtxGetDevice). Every function throws std::out_of_range
/// for a device id outside [0, cuDeviceGetCount()); see per_device_registry.hpp for the rest.
/// @{

/// The registry (made on first use; requires cuInit). @throws CudaError from cuDeviceGetCount.
PerDeviceResourceRegistry& processResourceRegistry();

/// The ordinal of the device of the calling thread's current context (cuCtxGetDevice, then
/// memsamples::deviceOrdinal). @throws CudaError (e.g. no current context).
int currentContextDevice();

/// The resource of device @p ordinal. Devices are named by ordinal, as RMM's cuda_device_id
/// does; a CUdevice handle is converted with memsamples::deviceOrdinal().
MemoryResource* getPerDeviceResource(int ordinal);
/// Sets the resource of device @p ordinal (null: reset); returns the previous one.
MemoryResource* setPerDeviceResource(int ordinal, MemoryResource* resource);
/// Puts back the initial resource of device @p ordinal; returns the previous one.
MemoryResource* resetPerDeviceResource(int ordinal);
/// The resource of the current device.
MemoryResource* getCurrentDeviceResource();
/// Sets the resource of the current device (null: reset); returns the previous one.
MemoryResource* setCurrentDeviceResource(MemoryResource* resource);
/// Puts back the current device's initial resource; returns the previous one.
MemoryResource* resetCurrentDeviceResource();

/// @}

}  // namespace memsamples::resource
