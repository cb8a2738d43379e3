/**
 * @file per_device_registry.hpp
 * @brief PerDeviceResourceRegistry: which memory resource each device uses, with get / set /
 *        reset per device and for the current device, thread-safe, and an initial resource per
 *        device created on first use.
 *
 * This is the CUDA-free heart of 06_perDeviceResource (library `perDeviceResource_logic`). It
 * knows nothing about the driver: the number of devices, how to make a device's initial resource
 * and how to find "the current device" are given to the constructor, so the unit tests run it
 * with CPU-only resources and a fake current device, under ThreadSanitizer. The sample's
 * process-wide registry (cuda_resources.hpp) passes cuDeviceGetCount, a device-memory resource
 * factory and cuCtxGetDevice.
 *
 * Semantics (the same as RMM's per-device resource functions, see the README for the comparison):
 * - get(d) returns the resource set for device d, or d's *initial* resource if none was set or it
 *   was reset. The initial resource is made by the factory the first time it is needed, once per
 *   device, and is owned by the registry.
 * - set(d, r) makes r device d's resource and returns the previous one (which may be the
 *   initial one). set(d, nullptr) is reset(d).
 * - reset(d) makes the initial resource current again and returns the previous one.
 * - getCurrent(), setCurrent(r), resetCurrent(): the same for the device the current-device query
 *   names (the device of the calling thread's current context in the sample).
 * - Every function is thread-safe: concurrent calls leave a valid state; their order is whatever
 *   order they took the registry's lock in.
 *
 * Where RMM leaves behaviour undefined, this registry gives a clear error instead:
 * - a device id outside [0, deviceCount()) throws std::out_of_range naming the id and the count;
 * - a resource that belongs to another device (MemoryResource::ownerDevice()) is refused with
 *   std::invalid_argument naming both devices.
 *
 * **Lifetime contract.** The registry does not own the resources that are set: it stores a
 * pointer. A resource must outlive every use of it, which includes the time it is registered:
 * set another one or reset the device (ScopedResourceOverride does it) before destroying it, and
 * make sure no thread still uses a pointer it got earlier. The initial resources live as long as
 * the registry. A resource belongs to its device: register it only for that device (the
 * sample's driver-backed resources then act in that device's context themselves, see
 * cuda_resources.hpp).
 */
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "memory_resource.hpp"

namespace memsamples::resource {

/**
 * A registry of one memory resource per device. Neither copyable nor movable (threads hold
 * references to it).
 */
class PerDeviceResourceRegistry {
 public:
  /// Makes the initial resource of a device (called at most once per device, under the
  /// registry's lock: it must not call the registry). Must not return null.
  using InitialResourceFactory = std::function<std::unique_ptr<MemoryResource>(int device)>;
  /// Names the current device (the sample: cuCtxGetDevice). May throw.
  using CurrentDeviceQuery = std::function<int()>;

  /**
   * @param deviceCount how many devices there are (ids 0 .. deviceCount - 1); may be 0.
   * @param makeInitial the initial-resource factory.
   * @param currentDevice the current-device query.
   * @throws std::invalid_argument for a negative count or an empty function.
   */
  PerDeviceResourceRegistry(int deviceCount, InitialResourceFactory makeInitial,
                            CurrentDeviceQuery currentDevice);
  ~PerDeviceResourceRegistry();
  PerDeviceResourceRegistry(const PerDeviceResourceRegistry&) = delete;
  PerDeviceResourceRegistry& operator=(const PerDeviceResourceRegistry&) = delete;

  /// The number of devices.
  int deviceCount() const noexcept { return deviceCount_; }

  /**
   * The resource of @p device (never null).
   * @throws std::out_of_range for a bad id; whatever the factory throws (nothing is stored then,
   *         the next call tries again); std::runtime_error when the factory returns null or a
   *         resource of another device.
   */
  MemoryResource* get(int device);

  /**
   * Makes @p resource the resource of @p device; null means reset(). The registry does not take
   * ownership.
   * @return the previous resource (never null; possibly the initial one).
   * @throws std::out_of_range, std::invalid_argument (resource of another device), and what get()
   *         throws (the initial resource is made when it is the one returned).
   */
  MemoryResource* set(int device, MemoryResource* resource);

  /**
   * Makes the initial resource the resource of @p device again.
   * @return the previous resource (never null).
   * @throws what get() throws.
   */
  MemoryResource* reset(int device);

  /// The initial resource of @p device (made now if needed). @throws what get() throws.
  MemoryResource* initial(int device);

  /// The current device, checked against the count. @throws std::out_of_range naming it, or
  /// what the query throws.
  int currentDevice() const;

  /// get(currentDevice()).
  MemoryResource* getCurrent() { return get(currentDevice()); }
  /// set(currentDevice(), resource).
  MemoryResource* setCurrent(MemoryResource* resource) { return set(currentDevice(), resource); }
  /// reset(currentDevice()).
  MemoryResource* resetCurrent() { return reset(currentDevice()); }

 private:
  struct Slot;
  void checkDevice(int device, const char* what) const;
  MemoryResource* initialLocked(int device);

  const int deviceCount_;
  const InitialResourceFactory makeInitial_;
  const CurrentDeviceQuery currentDevice_;
  std::mutex mutex_;
  std::unique_ptr<Slot[]> slots_;  // guarded by mutex_
};

/**
 * Sets a resource for one device for the lifetime of this object and puts back the previous one
 * when destroyed (also during unwinding). The usual way to honour the lifetime contract:
 * declare it after the resource, so it is destroyed first.
 *
 * The device is fixed at construction: either given, or the current device at that moment (the
 * form that stands for setCurrentDeviceResource()). The destructor restores that device's slot
 * even when the current device has changed since, and asks nothing again.
 *
 * Overrides nest like scopes. An override that ends while another thread has set something else
 * for the same device in the meantime still puts back *its* previous resource: share a device's
 * slot between threads only with care.
 */
class ScopedResourceOverride {
 public:
  /// registry.set(device, &resource). @throws what set() throws (nothing is changed then).
  ScopedResourceOverride(PerDeviceResourceRegistry& registry, int device, MemoryResource& resource);
  /// The same for the current device, asked once (registry.currentDevice()): the scoped form of
  /// setCurrent(). @throws what currentDevice() and set() throw (nothing is changed then).
  ScopedResourceOverride(PerDeviceResourceRegistry& registry, MemoryResource& resource);
  /// Puts back the previous resource of device(), whatever the current device is by then.
  ~ScopedResourceOverride();
  ScopedResourceOverride(const ScopedResourceOverride&) = delete;
  ScopedResourceOverride& operator=(const ScopedResourceOverride&) = delete;

  /// The resource that was current before (and will be again).
  MemoryResource* previous() const noexcept { return previous_; }
  /// The device whose resource is overridden, fixed at construction.
  int device() const noexcept { return device_; }

 private:
  PerDeviceResourceRegistry& registry_;
  int device_;
  MemoryResource* previous_;
};

}  // namespace memsamples::resource
