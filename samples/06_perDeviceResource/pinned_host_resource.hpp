/**
 * @file pinned_host_resource.hpp
 * @brief The memory resource the lesson's core builds, PinnedHostResource (page-locked host memory
 *        mapped for the device), and TrackedResource, the base it shares with the other
 *        context-bound kinds of resources.cpp (managed, NUMA-bound host, striped VMM).
 *
 * Kept apart from resources.hpp because it makes driver calls inline: the unit tests that link
 * the sample's report against a fake driver include resources.hpp, never this header.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "memory_resource.hpp"
#include "memsamples.hpp"
#include "resources.hpp"

namespace memsamples::resource {

// ---------------------------------------------------------- what the context-bound kinds share

/// What host memory mapped for the device can be used for: by the CPU and by kernels.
inline constexpr ResourceProperties kHostAndDeviceMemory{true, true, false};
/// TrackedResource's flag for host memory mapped for the device, by name.
inline constexpr bool kMappedHost = true;

/**
 * The base of the managed, pinned, NUMA and VMM kinds: each is made for one context (its device
 * comes from cuCtxGetDevice_v2, which asks without making the context current), makes every
 * driver call with that context pushed, and keeps the RAII owner of each allocation (an
 * OwnedDeviceMemory, a StripedVmmRange...) in a table: a foreign pointer or a wrong size is
 * refused, and what is left is freed with the resource, in its context. What differs between the
 * kinds is only how they allocate and free: the name, the properties and the kernel address are
 * the base's.
 * @tparam Owner the RAII owner of one allocation; destroying it frees the memory.
 */
template <typename Owner>
class TrackedResource : public MemoryResource {
 public:
  /// Frees what the table still holds, with the resource's context pushed.
  ~TrackedResource() override {
    try {
      ScopedContext scope(context_);
      allocations_.clear();
    } catch (...) {
      // The push failed: the table's own destructor frees what is left, in whatever is current.
    }
  }

 protected:
  /// @p mappedHost: host memory mapped for the device, whose kernel address the driver gives
  /// (cuMemHostGetDevicePointer); otherwise the pointer itself is the kernel address.
  TrackedResource(CUcontext context, const std::string& kind, ResourceProperties properties,
                  bool mappedHost = false)
      : context_(context),
        ordinal_(ordinalOf(context)),
        allocations_(onDevice(kind, ordinal_)),
        name_(onDevice(kind, ordinal_)),
        properties_(properties),
        mappedHost_(mappedHost) {}

  /// The deallocate rule of every kind that frees at once: work queued on @p stream may still
  /// use the memory, so wait for it; then take the owner out of the table (destroying it frees).
  /// @throws CudaError; what OwnedAllocations::take() throws.
  Owner takeBack(void* ptr, std::size_t bytes, CUstream stream) {
    check(cuStreamSynchronize(stream), "cuStreamSynchronize");
    return allocations_.take(ptr, bytes);
  }

  const CUcontext context_;               ///< The context every driver call is made in.
  const int ordinal_;                     ///< Its device's ordinal.
  OwnedAllocations<Owner> allocations_;   ///< The owner of every live allocation.
  std::string name_;  ///< "pinned host (device 0)"; a kind may say more (its node, its stripes).

 private:
  static int ordinalOf(CUcontext context) {
    if (context == nullptr)
      throw std::invalid_argument("a context-bound memory resource needs a context (got null)");
    CUdevice device = 0;
    check(cuCtxGetDevice_v2(&device, context), "cuCtxGetDevice_v2");
    return deviceOrdinal(device);
  }
  void doDeallocate(void* ptr, std::size_t bytes, CUstream stream) override {
    ScopedContext scope(context_);
    takeBack(ptr, bytes, stream);  // the owner is destroyed here: it frees
  }
  // Where every device can use host pointers of registered memory the device address of mapped
  // host memory is the same value; the sample never assumes so.
  CUdeviceptr doKernelAddress(void* ptr) const override {
    if (!mappedHost_)
      return toDevicePointer(ptr);
    ScopedContext scope(context_);
    CUdeviceptr address = 0;
    check(cuMemHostGetDevicePointer(&address, ptr, 0), "cuMemHostGetDevicePointer");
    return address;
  }
  ResourceProperties doProperties() const noexcept override { return properties_; }
  std::optional<int> doOwnerDevice() const noexcept override { return ordinal_; }
  std::string doName() const override { return name_; }

  const ResourceProperties properties_;
  const bool mappedHost_;
};

// ------------------------------------------------------------------------------------ pinned host

// [pinned-host]
/// Page-locked host memory mapped for the device: the resource the lesson's core builds. It is
/// cuMemHostAlloc(DEVICEMAP), not PORTABLE. With unified addressing every context can still reach
/// the memory (cuda.h: all cuMemHostAlloc memory is mapped into every context); without PORTABLE
/// only this context treats it as pinned. It "belongs to its device" by bookkeeping: allocated,
/// freed and asked for its device address in this context.
class PinnedHostResource final : public TrackedResource<OwnedPinnedHostMemory> {
 public:
  /// A resource for @p context's device, which must outlive it. @throws std::invalid_argument
  /// for a null context; CudaError.
  explicit PinnedHostResource(CUcontext context)
      : TrackedResource(context, "pinned host", kHostAndDeviceMemory, kMappedHost) {}

 private:
  // Allocate: page-locked host memory, mapped into the device's address space (DEVICEMAP). Its
  // owner goes into the table, which refuses a foreign pointer or a wrong size at deallocate.
  void* doAllocate(std::size_t bytes, CUstream) override {
    ScopedContext scope(context_);
    OwnedPinnedHostMemory buffer;
    check(cuMemHostAlloc(buffer.out(), bytes, CU_MEMHOSTALLOC_DEVICEMAP), "cuMemHostAlloc");
    void* ptr = buffer.get();
    allocations_.add(ptr, bytes, std::move(buffer));
    return ptr;
  }

  // Deallocate: work queued on the stream may still use the memory, so wait for it; take the
  // owner out of the table, then free. The owner gives the memory up only after cuMemFreeHost
  // succeeded (if it fails, its destructor tries again).
  void doDeallocate(void* ptr, std::size_t bytes, CUstream stream) override {
    ScopedContext scope(context_);
    check(cuStreamSynchronize(stream), "cuStreamSynchronize");
    OwnedPinnedHostMemory buffer = allocations_.take(ptr, bytes);
    check(cuMemFreeHost(buffer.get()), "cuMemFreeHost");
    buffer.release();
  }

  // The kernel address is the base's doKernelAddress() (kMappedHost): cuMemHostGetDevicePointer,
  // asked in this context.
};
// [pinned-host]

}  // namespace memsamples::resource
