/**
 * @file per_device_registry.hpp
 * @brief Which memory resource each device uses: RMM 26.04's per-device resource registry
 *        (rmm/mr/per_device_resource.hpp, non-owning) on the driver API. The core-b region below
 *        is the whole registry: a mutex, one slot per device, get / set / reset.
 *
 * - Every device starts on its **initial** resource, made the first time the device is asked
 *   about and owned here (in 06: the device's default memory pool).
 * - **set** returns the previous resource; set(nullptr) and **reset** put the initial one back.
 * - The **current device** is what the constructor's query answers (in 06: cuCtxGetDevice).
 * - One mutex guards every slot. The registry **does not own** what is set: reset the slot
 *   before destroying the resource.
 * Where RMM leaves behaviour undefined, this one throws and changes nothing (RegistryChecks, at
 * the end). The constructor makes no driver call, so the unit tests run it without a GPU;
 * fromDriver(), right after the class, is how the program makes it from the driver's answers.
 */
#pragma once

#include <cuda.h>

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "memory_resource.hpp"
#include "memsamples.hpp"

namespace memsamples::resource {

/// The registry's checks (defined at the end of this file): every bad input is refused here.
struct RegistryChecks;

/// Device @p ordinal's initial resource in the process-wide registry: a DevicePoolResource on its
/// default memory pool (device_pool_resource.hpp), defined in resources.cpp, called by
/// PerDeviceResourceRegistry::fromDriver(). @throws CudaError.
std::unique_ptr<MemoryResource> defaultPoolResource(int ordinal);

/// One memory resource per device. Neither copyable nor movable: threads hold references to it.
class PerDeviceResourceRegistry {
 public:
  /// Makes device d's initial resource. Called once per device, under the lock.
  using InitialResourceFactory = std::function<std::unique_ptr<MemoryResource>(int device)>;
  /// Names the calling thread's current device.
  using CurrentDeviceQuery = std::function<int()>;

  /// Devices 0 .. @p deviceCount - 1, each starting on what @p makeInitial makes for it.
  /// @throws std::invalid_argument for a negative count or an empty function.
  PerDeviceResourceRegistry(int deviceCount, InitialResourceFactory makeInitial,
                            CurrentDeviceQuery currentDevice);
  PerDeviceResourceRegistry(const PerDeviceResourceRegistry&) = delete;
  PerDeviceResourceRegistry& operator=(const PerDeviceResourceRegistry&) = delete;

  /// Device @p device's initial resource, made now if it was never needed (RMM has no such
  /// call: the sample's checks ask it). @throws what get() throws.
  MemoryResource* initial(int device);

  /// The calling thread's current device. @throws std::out_of_range naming it as the current
  /// device when it is not one of this registry's; what the query throws.
  int currentDevice() const;
  /// The number of devices.
  int deviceCount() const noexcept { return static_cast<int>(slots_.size()); }

  /// How this program makes its registry (defined right after the class);
  /// processResourceRegistry() (resources.cpp) calls it once. @throws CudaError.
  static PerDeviceResourceRegistry fromDriver();

  //! [core-b]
  // What the lesson's core calls: mr::setCurrentDeviceResource(r), a free function after this
  // class, calls processResourceRegistry().setCurrent(r), which calls set(currentDevice(), r);
  // get and reset go the same way. Bad input throws before anything changes (RegistryChecks).
  /// get() of the calling thread's current device.
  MemoryResource* getCurrent() { return get(currentDevice()); }
  /// set() of the calling thread's current device.
  MemoryResource* setCurrent(MemoryResource* resource) { return set(currentDevice(), resource); }
  /// reset() of the calling thread's current device.
  MemoryResource* resetCurrent() { return reset(currentDevice()); }

  /// Device @p device's resource: the one set for it, else its initial resource. Never null.
  MemoryResource* get(int device) {
    std::lock_guard<std::mutex> lock(mutex_);
    Slot& slot = slotOf(device);
    return slot.current != nullptr ? slot.current : initialOf(device, slot);
  }

  /// Makes @p resource device @p device's (nullptr: its initial one) and returns the previous
  /// one, never null. The caller keeps @p resource alive while it is registered.
  MemoryResource* set(int device, MemoryResource* resource) {
    std::lock_guard<std::mutex> lock(mutex_);
    Slot& slot = slotOf(device, resource);
    MemoryResource* initial = initialOf(device, slot);
    MemoryResource* previous = slot.current != nullptr ? slot.current : initial;

    // The slot stores null for "the initial resource": set(nullptr), reset() and set(initial)
    // all put the device back on it.
    slot.current = (resource == initial) ? nullptr : resource;
    return previous;
  }

  /// Puts device @p device's initial resource back and returns the previous one.
  MemoryResource* reset(int device) { return set(device, nullptr); }

 private:
  // A device's slot: what was set for it (null: its initial one), and that initial resource,
  // made the first time the device is asked about (initialOf(), right after this region).
  struct Slot {
    MemoryResource* current = nullptr;
    std::unique_ptr<MemoryResource> initial;
  };

  std::mutex mutex_;         // one lock for every slot
  std::vector<Slot> slots_;  // one per device, never resized
  const InitialResourceFactory makeInitial_;  // makes a device's initial resource (06: its pool)
  const CurrentDeviceQuery currentDevice_;    // the calling thread's device (06: cuCtxGetDevice)
  //! [core-b]

  // Made the first time the device is asked about, under the lock, and owned by the slot.
  MemoryResource* initialOf(int device, Slot& slot) {
    if (slot.initial == nullptr)
      slot.initial = checkedInitial(makeInitial_(device), device);
    return slot.initial.get();
  }
  // The checks (RegistryChecks, at the end of the file): a bad device id, a resource of another
  // device, a factory that made nothing are refused; slotOf() then returns the slot.
  Slot& slotOf(int device, const MemoryResource* resource = nullptr);
  std::unique_ptr<MemoryResource> checkedInitial(std::unique_ptr<MemoryResource>, int device);
};

// How this program makes its registry: one slot per device of this machine, each starting on
// its default memory pool, and "the current device" read from the calling thread's context.
inline PerDeviceResourceRegistry PerDeviceResourceRegistry::fromDriver() {
  int deviceCount = 0;
  check(cuDeviceGetCount(&deviceCount), "cuDeviceGetCount");

  // The device of the calling thread's current context, as an ordinal.
  const auto currentDevice = [] {
    CUdevice device = 0;
    check(cuCtxGetDevice(&device), "cuCtxGetDevice");
    return deviceOrdinal(device);
  };

  // A DevicePoolResource on cuDeviceGetDefaultMemPool (resources.cpp), made on first use.
  return PerDeviceResourceRegistry(deviceCount, defaultPoolResource, currentDevice);
}

/// @name The process-wide registry and RMM's free functions
/// One answer for the whole process is the feature, so this is the collection's one deliberate
/// global. The program defines processResourceRegistry() once (06: resources.cpp, a static made
/// by PerDeviceResourceRegistry::fromDriver(); a unit test: one with CPU-only resources); devices
/// are ordinals, as RMM's cuda_device_id.
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

/**
 * Every check of the registry, in one place; each throws before anything changes:
 * - the constructor's arguments: std::invalid_argument for a negative count or an empty function;
 * - a device id outside [0, count): std::out_of_range naming the id ("device 2", or "the current
 *   device 5") and the ids that exist;
 * - a resource of another device (set, or what the factory made): std::invalid_argument naming
 *   both devices; a factory that made nothing: std::runtime_error.
 * A factory that throws: get(), set() and reset() pass its exception on and store nothing; the
 * next call asks the factory again.
 */
struct RegistryChecks {
  /// The constructor's arguments.
  static void arguments(int deviceCount, bool hasFactory, bool hasQuery) {
    if (deviceCount < 0)
      throw error<std::invalid_argument>("the device count must not be negative (got " +
                                         std::to_string(deviceCount) + ")");
    if (!hasFactory)
      throw error<std::invalid_argument>("an initial-resource factory is required");
    if (!hasQuery)
      throw error<std::invalid_argument>("a current-device query is required");
  }

  /// @p device is one of @p count ids; @p role says what it is in the message.
  static void deviceId(int device, int count, const char* role) {
    if (device >= 0 && device < count)
      return;
    std::string range = "this registry has no devices";
    if (count == 1)
      range = "this registry has 1 device: id 0";
    else if (count > 1)
      range = "this registry has " + std::to_string(count) + " devices: ids 0.." +
              std::to_string(count - 1);
    throw error<std::out_of_range>(role + std::to_string(device) + " is out of range (" + range +
                                   ")");
  }

  /// @p resource (none: nothing to check) belongs to @p device or to no device.
  static void owner(const MemoryResource* resource, int device, const char* role) {
    const std::optional<int> owner =
        resource != nullptr ? resource->ownerDevice() : std::optional<int>();
    if (owner && *owner != device)
      throw error<std::invalid_argument>(std::string(role) + " '" + resource->name() +
                                         "' belongs to device " + std::to_string(*owner) +
                                         ", not to device " + std::to_string(device));
  }

  /// The factory made a resource.
  static void made(const MemoryResource* resource, int device) {
    if (resource == nullptr)
      throw error<std::runtime_error>(
          "the initial-resource factory returned no resource for device " +
          std::to_string(device));
  }

  /// An exception of type Error whose message names the registry.
  template <typename Error>
  static Error error(const std::string& text) {
    return Error("per-device resource registry: " + text);
  }
};

inline PerDeviceResourceRegistry::PerDeviceResourceRegistry(int deviceCount,
                                                            InitialResourceFactory makeInitial,
                                                            CurrentDeviceQuery currentDevice)
    : slots_(deviceCount > 0 ? static_cast<std::size_t>(deviceCount) : 0),
      makeInitial_(std::move(makeInitial)),
      currentDevice_(std::move(currentDevice)) {
  RegistryChecks::arguments(deviceCount, static_cast<bool>(makeInitial_),
                            static_cast<bool>(currentDevice_));
}

inline int PerDeviceResourceRegistry::currentDevice() const {
  const int device = currentDevice_();  // what it throws goes to the caller
  RegistryChecks::deviceId(device, deviceCount(), "the current device ");
  return device;
}

inline PerDeviceResourceRegistry::Slot& PerDeviceResourceRegistry::slotOf(
    int device, const MemoryResource* resource) {
  RegistryChecks::deviceId(device, deviceCount(), "device ");
  RegistryChecks::owner(resource, device, "resource");
  return slots_[static_cast<std::size_t>(device)];
}

inline MemoryResource* PerDeviceResourceRegistry::initial(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  return initialOf(device, slotOf(device));
}

inline std::unique_ptr<MemoryResource> PerDeviceResourceRegistry::checkedInitial(
    std::unique_ptr<MemoryResource> made, int device) {
  RegistryChecks::made(made.get(), device);
  RegistryChecks::owner(made.get(), device, "the initial resource");
  return made;
}

}  // namespace memsamples::resource
