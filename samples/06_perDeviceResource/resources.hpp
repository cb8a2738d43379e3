// The table below is for people and Doxygen alike; reflowed, it would be readable by neither.
// clang-format off
/**
 * @file resources.hpp
 * @brief The five kinds of memory resource of 06_perDeviceResource, and the one function that
 *        makes any of them for a device.
 *
 * | kind | memory | allocate / deallocate | properties | reuses |
 * |---|---|---|---|---|
 * | device | the device's default memory pool | cuMemAllocFromPoolAsync / cuMemFreeAsync | device, stream-ordered | — |
 * | managed | managed memory behind a free-memory guard and a budget | cuMemAllocManaged / cuMemFree | host + device | — |
 * | pinned | page-locked host memory mapped for the device | cuMemHostAlloc(DEVICEMAP) / cuMemFreeHost | host + device | — |
 * | numa | host memory bound to the GPU's nearest NUMA node, then pinned | mmap + mbind + cuMemHostRegister / cuMemHostUnregister + munmap | host + device | 04's NumaBoundHostRange |
 * | vmm | one virtual range striped over physical allocations | cuMemAddressReserve + cuMemCreate + cuMemMap + cuMemSetAccess / cuMemUnmap + cuMemAddressFree | device | 02's StripedVmmRange |
 *
 * Each kind is a small class in resources.cpp that writes its own driver calls.
 * - **Stream.** Only the device pool is stream-ordered. The others allocate at once and, in
 *   deallocate, synchronize the stream before they free (memory_resource.hpp).
 * - **Context.** The device pool belongs to its device. By its own policy (RMM's, not a driver
 *   rule: the pool and a created stream already name the device) it is used while a context of that
 *   device is current and refuses (std::logic_error naming both devices) otherwise. The other kinds
 *   belong to the context they were made for and push it around every driver call they make, so
 *   they work from any thread, whatever is current there; the context must outlive them.
 * - **Tracking.** The other kinds keep the RAII owner of each allocation (owned_allocations.hpp):
 *   a foreign pointer or a wrong size is refused, and what is left is freed with the resource.
 */
// clang-format on
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <ostream>
#include <optional>
#include <string>
#include <vector>

#include "device_setup.hpp"
#include "memory_resource.hpp"
#include "per_device_registry.hpp"
#include "resource_plan.hpp"

namespace memsamples::resource {

/// Why @p kind cannot run on @p device, or empty. Attribute queries only: nothing is made to fail.
std::string unavailableReason(ResourceKind kind, CUdevice device);

/// One resource of one kind for one device, or why there is none, and what the run found.
struct KindResource {
  ResourceKind kind = ResourceKind::Device;  ///< The kind.
  MemoryResource* resource = nullptr;        ///< The resource to use; null when unavailable.
  std::unique_ptr<MemoryResource> owned;     ///< resource, or (device kind) what timed points to.
  /// What the latency table times, when not resource: for the device kind the same pool without
  /// its current-device policy (a check of the resource's, not the driver's).
  MemoryResource* timed = nullptr;
  std::string detail;               ///< What it chose: threshold, budget, node, stripes.
  std::string whyNot;               ///< Why resource is null (or replaced, step 5).
  CUmemoryPool pool = nullptr;      ///< The device pool's pool (the latency table).
  VectorAddCheck verified;          ///< The vector add on its memory.
  std::optional<bool> contextFree;  ///< usableWithoutCurrentContext(), where asked.
  MemoryResource* previous = nullptr;     ///< What set returned when this resource was set.
  MemoryResource* removed = nullptr;      ///< What reset returned afterwards.
  std::vector<MemoryResource*> answers;   ///< What getCurrentDeviceResource() gave each thread.
};

/// Warnings (the NUMA binding's) from any thread, printed with the verdict.
class WarningLog {
 public:
  /// A function that adds one warning; the log must outlive it.
  std::function<void(const std::string&)> sink() {
    return [this](const std::string& text) {
      std::lock_guard<std::mutex> lock(mutex_);
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
 * The error path of steps 4 and 5: every entry of @p entries that was set (its previous is
 * recorded) and is still registered for its device gets that previous resource back, so that no
 * resource is destroyed while registered (what a ScopedResourceOverride does for a scope). On the
 * good path each was reset already, and nothing changes. Errors are swallowed: it runs in
 * unwinding.
 */
inline void restorePreviousResources(const std::vector<KindResource>& entries) noexcept {
  for (const KindResource& entry : entries) {
    if (entry.previous == nullptr || entry.resource == nullptr)
      continue;
    try {
      const int device = entry.resource->ownerDevice().value_or(0);
      if (getPerDeviceResource(device) == entry.resource)
        setPerDeviceResource(device, entry.previous);
    } catch (...) {
      // The registry accepted this device and this resource before; nothing to report here.
    }
  }
}

/// Step 3's resources: one per kind for the chosen device, one per device for step 5.
struct Resources {
  Resources() = default;
  /// Takes over @p other's resources.
  Resources(Resources&& other) = default;
  /// A step that threw between a set and its reset left a resource registered: it gets what
  /// was there before back, before any kind is destroyed.
  ~Resources() {
    restorePreviousResources(kinds);
    restorePreviousResources(perDevice);
  }

  std::unique_ptr<WarningLog> warnings;  ///< Declared first: the kinds warn into it.
  std::vector<KindResource> kinds;       ///< One per kind asked for, in the order of the kinds.
  std::vector<KindResource> perDevice;   ///< Device d's resource (empty with one device).
  std::string refusal;  ///< What another device's pool said when used here (2+ devices).
};

/**
 * Step 3: makes each of the kinds of @p devices for its chosen device (when they were listed
 * with `--resources`, a kind the device lacks waives the run), tries every context-bound kind
 * on a thread without a current context, makes step 5's resource of every device (2+ devices:
 * the kind assignKindsToDevices() gives it, else its pool, and whyNot says why), and asks
 * another device's pool to allocate here (it must refuse). @throws WaivedError; CudaError.
 */
Resources makeResources(const Devices& devices, int vmmStripes);

}  // namespace memsamples::resource
