/**
 * @file per_device_registry.hpp
 * @brief Which memory resource each device uses: RMM's per-device resource registry
 *        (rmm/mr/per_device_resource.hpp), get / set / reset per device and for the current
 *        device, thread-safe, in one header.
 *
 * The rules, RMM's, each stated again at its function:
 * - Every device starts on its **initial** resource, made the first time it is needed (once per
 *   device) and owned by the registry. In 06 it is the device's default memory pool.
 * - **set** makes a resource the device's and returns the previous one; set(nullptr) and
 *   **reset** put the initial one back and return the previous one.
 * - The **current device** is what the query given to the constructor answers; in 06 it is
 *   cuCtxGetDevice, the device of the calling thread's current context.
 * - **Thread-safe**: one mutex guards every slot, the initial resources' creation included, so
 *   concurrent calls leave a valid state; their order is the order they take the lock in.
 * - The registry **does not own** what is set: a resource must outlive its registration (reset
 *   the device, or set back what set() returned, before destroying the resource).
 *
 * Where RMM leaves behaviour undefined, this registry throws instead: a device id outside
 * [0, deviceCount()) gets std::out_of_range naming the id and the count, and a resource that
 * belongs to another device (MemoryResource::ownerDevice()) gets std::invalid_argument naming
 * both devices; nothing changes then.
 *
 * CUDA-free: the count, the initial resource and the current device come from the constructor,
 * so the unit tests run it with CPU-only resources under ThreadSanitizer.
 */
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "memory_resource.hpp"

namespace memsamples::resource {

/// One memory resource per device. Neither copyable nor movable: threads hold references to it.
class PerDeviceResourceRegistry {
 public:
  /// Makes device d's initial resource, a resource of device d; called at most once per device,
  /// under the registry's lock (so it must not call the registry).
  using InitialResourceFactory = std::function<std::unique_ptr<MemoryResource>(int device)>;
  /// Names the calling thread's current device; may throw.
  using CurrentDeviceQuery = std::function<int()>;

  /// Devices 0 .. @p deviceCount - 1 (none for 0). @throws std::invalid_argument for a negative
  /// count or an empty function.
  PerDeviceResourceRegistry(int deviceCount, InitialResourceFactory makeInitial,
                            CurrentDeviceQuery currentDevice)
      : slots_(deviceCount > 0 ? static_cast<std::size_t>(deviceCount) : 0),
        makeInitial_(std::move(makeInitial)),
        currentDevice_(std::move(currentDevice)) {
    if (deviceCount < 0)
      throw error<std::invalid_argument>("the device count must not be negative (got " +
                                         std::to_string(deviceCount) + ")");
    if (!makeInitial_)
      throw error<std::invalid_argument>("an initial-resource factory is required");
    if (!currentDevice_)
      throw error<std::invalid_argument>("a current-device query is required");
  }
  PerDeviceResourceRegistry(const PerDeviceResourceRegistry&) = delete;
  PerDeviceResourceRegistry& operator=(const PerDeviceResourceRegistry&) = delete;

  /// The number of devices.
  int deviceCount() const noexcept { return static_cast<int>(slots_.size()); }

  // [get-set]
  /// Device @p device's resource: the one set, else its initial one. Never null.
  /// @throws std::out_of_range for a bad id; what the factory throws (nothing is stored then and
  ///         the next call tries again); std::runtime_error for a factory that returns null.
  MemoryResource* get(int device) {
    Slot& slot = slotOf(device);
    std::lock_guard<std::mutex> lock(mutex_);
    return slot.current != nullptr ? slot.current : initialLocked(device, slot);
  }

  /// Makes @p resource device @p device's resource (nullptr: its initial one) and returns the
  /// previous one, never null. The caller keeps @p resource alive while it is registered.
  /// @throws std::out_of_range; std::invalid_argument for a resource of another device; what
  ///         get() throws. Nothing changes when it throws.
  MemoryResource* set(int device, MemoryResource* resource) {
    Slot& slot = slotOf(device);
    if (resource != nullptr)
      requireOwner(*resource, device, "resource");
    std::lock_guard<std::mutex> lock(mutex_);
    MemoryResource* initial = initialLocked(device, slot);
    MemoryResource* previous = slot.current != nullptr ? slot.current : initial;
    slot.current = resource == initial ? nullptr : resource;
    return previous;
  }

  // [get-set]
  /// Puts device @p device's initial resource back and returns the previous one.
  /// @throws what set() throws.
  MemoryResource* reset(int device) { return set(device, nullptr); }

  /// Device @p device's initial resource (made now if needed). @throws what get() throws.
  MemoryResource* initial(int device) {
    Slot& slot = slotOf(device);
    std::lock_guard<std::mutex> lock(mutex_);
    return initialLocked(device, slot);
  }

  /// The calling thread's current device. @throws std::out_of_range naming it as the current
  /// device when it is not one of this registry's; what the query throws.
  int currentDevice() const {
    const int device = currentDevice_();
    requireDevice(device, "the current device ");
    return device;
  }
  /// get() of the current device.
  MemoryResource* getCurrent() { return get(currentDevice()); }
  /// set() of the current device.
  MemoryResource* setCurrent(MemoryResource* resource) { return set(currentDevice(), resource); }
  /// reset() of the current device.
  MemoryResource* resetCurrent() { return reset(currentDevice()); }

 private:
  struct Slot {
    std::unique_ptr<MemoryResource> initial;  // made on first use, owned here
    MemoryResource* current = nullptr;        // what was set; null means the initial one
  };

  template <typename Error>
  static Error error(const std::string& text) {
    return Error("per-device resource registry: " + text);
  }
  // Throws std::out_of_range when @p device is not one of this registry's ids.
  void requireDevice(int device, const char* what) const {
    if (device >= 0 && device < deviceCount())
      return;
    std::string range = "this registry has no devices";
    if (deviceCount() == 1)
      range = "this registry has 1 device: id 0";
    else if (deviceCount() > 1)
      range = "this registry has " + std::to_string(deviceCount()) + " devices: ids 0.." +
              std::to_string(deviceCount() - 1);
    throw error<std::out_of_range>(what + std::to_string(device) + " is out of range (" + range +
                                   ")");
  }
  // The slots are made once and never resized; their contents are used under the lock only.
  Slot& slotOf(int device) {
    requireDevice(device, "device ");
    return slots_[static_cast<std::size_t>(device)];
  }
  static void requireOwner(const MemoryResource& resource, int device, const char* what) {
    const std::optional<int> owner = resource.ownerDevice();
    if (owner && *owner != device)
      throw error<std::invalid_argument>(std::string(what) + " '" + resource.name() +
                                         "' belongs to device " + std::to_string(*owner) +
                                         ", not to device " + std::to_string(device));
  }
  MemoryResource* initialLocked(int device, Slot& slot) {
    if (!slot.initial) {
      std::unique_ptr<MemoryResource> made = makeInitial_(device);
      if (!made)
        throw error<std::runtime_error>(
            "the initial-resource factory returned no resource for device " +
            std::to_string(device));
      requireOwner(*made, device, "the initial resource");
      slot.initial = std::move(made);
    }
    return slot.initial.get();
  }

  std::vector<Slot> slots_;  // one per device, never resized
  const InitialResourceFactory makeInitial_;
  const CurrentDeviceQuery currentDevice_;
  std::mutex mutex_;
};

/// @name The process-wide registry and RMM's free functions
/// One answer for the whole process is the feature, so this is the collection's one deliberate
/// global. The program defines processResourceRegistry() once, with its driver's device count,
/// initial resource and current device (06: resources.cpp); devices are ordinals, as
/// RMM's cuda_device_id.
/// @{

/// The process-wide registry, defined by the program.
PerDeviceResourceRegistry& processResourceRegistry();
/// The resource of device @p device (RMM: get_per_device_resource).
inline MemoryResource* getPerDeviceResource(int device) {
  return processResourceRegistry().get(device);
}
/// Sets the resource of device @p device, returns the previous one (set_per_device_resource).
inline MemoryResource* setPerDeviceResource(int device, MemoryResource* resource) {
  return processResourceRegistry().set(device, resource);
}
/// Puts back device @p device's initial resource, returns the previous one.
inline MemoryResource* resetPerDeviceResource(int device) {
  return processResourceRegistry().reset(device);
}
/// The resource of the current device (get_current_device_resource).
inline MemoryResource* getCurrentDeviceResource() {
  return processResourceRegistry().getCurrent();
}
/// Sets the current device's resource, returns the previous one (set_current_device_resource).
inline MemoryResource* setCurrentDeviceResource(MemoryResource* resource) {
  return processResourceRegistry().setCurrent(resource);
}
/// Puts back the current device's initial resource, returns the previous one.
inline MemoryResource* resetCurrentDeviceResource() {
  return processResourceRegistry().resetCurrent();
}

/// @}

}  // namespace memsamples::resource
