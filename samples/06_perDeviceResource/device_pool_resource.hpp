/**
 * @file device_pool_resource.hpp
 * @brief DevicePoolResource: stream-ordered memory of a device's default memory pool, every
 *        device's **initial resource** in the process-wide registry (its fromDriver() in
 *        per_device_registry.hpp, through defaultPoolResource()) and step 6's `device` kind.
 *
 * Kept apart from resources.hpp because it makes driver calls inline: the unit tests that link
 * the sample's report against a fake driver include resources.hpp, never this header. The
 * registry gets its pools from defaultPoolResource() (resources.cpp).
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>

#include "memory_resource.hpp"
#include "memsamples.hpp"

namespace memsamples::resource {

/// What the pool's memory can be used for: by kernels, in the order of a stream.
inline constexpr ResourceProperties kDevicePoolMemory{false, true, true};

// [device-pool]
/**
 * Stream-ordered memory of the device's default pool (cuDeviceGetDefaultMemPool). It names the
 * pool instead of calling cuMemAllocAsync (the pool current to the stream's device), so its
 * memory does not depend on the stream or on cuDeviceSetMemPool. The pool tracks the
 * allocations, so this resource does not: each must be given back with deallocate(), and
 * destroying the resource frees nothing.
 */
class DevicePoolResource final : public MemoryResource {
 public:
  /// Whether the resource checks, before each call, that a context of its device is current.
  enum class Policy { RequireCurrentDevice, None };

  /// Policy::RequireCurrentDevice: allocate and deallocate refuse (std::logic_error) while a
  /// context of another device is current, and with no context current cuCtxGetDevice's
  /// CUDA_ERROR_INVALID_CONTEXT is thrown (CudaError): the registry's pools. Policy::None: the
  /// same pool as the latency table times it. A device without memory pools gets a resource
  /// without a pool: step 1 waives on the chosen device before any allocation, and
  /// makeResources() on another before step 6 uses it.
  DevicePoolResource(CUdevice device, Policy policy)
      : device_(device), ordinal_(deviceOrdinal(device)), policy_(policy) {
    if (deviceAttribute(device, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) != 0)
      check(cuDeviceGetDefaultMemPool(&pool_, device), "cuDeviceGetDefaultMemPool");
  }
  /// The pool (null on a device without memory pools).
  CUmemoryPool pool() const noexcept { return pool_; }
  /// The device.
  CUdevice device() const noexcept { return device_; }

 private:
  // The driver needs no current context here (the pool and a created stream name the device): it
  // is the resource's policy, RMM's "use a device's resource with that device current", so a
  // pool registered for one device is not used from another device's code by mistake. The
  // CUdevice handles are compared: the ordinal is only looked up for the message.
  void requireOwnDevice(const char* operation) const {
    if (policy_ == Policy::None)
      return;
    CUdevice current = 0;
    check(cuCtxGetDevice(&current), "cuCtxGetDevice");
    if (current != device_)
      throw std::logic_error(name() + ": " + operation + " while a context of device " +
                             std::to_string(deviceOrdinal(current)) +
                             " is current; this resource's policy (not a driver rule) is to be "
                             "used with a context of device " +
                             std::to_string(ordinal_) + " current");
  }
  void* doAllocate(std::size_t bytes, CUstream stream) override {
    requireOwnDevice("allocate");
    CUdeviceptr address = 0;
    check(cuMemAllocFromPoolAsync(&address, bytes, pool_, stream), "cuMemAllocFromPoolAsync");
    return fromDevicePointer(address);
  }
  void doDeallocate(void* ptr, std::size_t, CUstream stream) override {
    requireOwnDevice("deallocate");
    check(cuMemFreeAsync(toDevicePointer(ptr), stream), "cuMemFreeAsync");
  }
  bool doIsEqual(const MemoryResource& other) const noexcept override {
    const auto* pool = dynamic_cast<const DevicePoolResource*>(&other);
    return pool != nullptr && pool_ != nullptr && pool->pool_ == pool_;
  }
  ResourceProperties doProperties() const noexcept override { return kDevicePoolMemory; }
  std::optional<int> doOwnerDevice() const noexcept override { return ordinal_; }
  std::string doName() const override { return onDevice("device pool", ordinal_); }

  CUdevice device_;
  int ordinal_;
  Policy policy_;
  CUmemoryPool pool_ = nullptr;
};
// [device-pool]

}  // namespace memsamples::resource
