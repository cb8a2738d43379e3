// PerDeviceResourceRegistry: one mutex guards every slot; the initial resources are made on first
// use under that mutex, so each device's factory call happens exactly once even when many threads
// ask at the same time.
#include "per_device_registry.hpp"

#include <stdexcept>
#include <string>
#include <utility>

namespace memsamples::resource {

namespace {

constexpr const char* kPrefix = "per-device resource registry: ";

std::string rangeText(int deviceCount) {
  if (deviceCount == 0)
    return "this registry has no devices";
  return "this registry has " + std::to_string(deviceCount) +
         (deviceCount == 1 ? " device: id 0"
                           : " devices: ids 0.." + std::to_string(deviceCount - 1));
}

// A resource of another device must not be registered for this one.
void checkOwner(const MemoryResource& resource, int device, const char* what) {
  const std::optional<int> owner = resource.ownerDevice();
  if (owner && *owner != device) {
    throw std::invalid_argument(std::string(kPrefix) + what + " '" + resource.name() +
                                "' belongs to device " + std::to_string(*owner) +
                                ", not to device " + std::to_string(device));
  }
}

}  // namespace

/// What the registry knows about one device; guarded by the registry's mutex.
struct PerDeviceResourceRegistry::Slot {
  std::unique_ptr<MemoryResource> initial;  ///< Made on first use, owned by the registry.
  MemoryResource* current = nullptr;        ///< The resource set; null means the initial one.
};

PerDeviceResourceRegistry::PerDeviceResourceRegistry(int deviceCount,
                                                     InitialResourceFactory makeInitial,
                                                     CurrentDeviceQuery currentDevice)
    : deviceCount_(deviceCount),
      makeInitial_(std::move(makeInitial)),
      currentDevice_(std::move(currentDevice)) {
  if (deviceCount < 0) {
    throw std::invalid_argument(std::string(kPrefix) +
                                "the device count must not be negative (got " +
                                std::to_string(deviceCount) + ")");
  }
  if (!makeInitial_)
    throw std::invalid_argument(std::string(kPrefix) + "an initial-resource factory is required");
  if (!currentDevice_)
    throw std::invalid_argument(std::string(kPrefix) + "a current-device query is required");
  slots_ = std::make_unique<Slot[]>(static_cast<std::size_t>(deviceCount));
}

PerDeviceResourceRegistry::~PerDeviceResourceRegistry() = default;

void PerDeviceResourceRegistry::checkDevice(int device, const char* what) const {
  if (device < 0 || device >= deviceCount_) {
    throw std::out_of_range(std::string(kPrefix) + what + std::to_string(device) +
                            " is out of range (" + rangeText(deviceCount_) + ")");
  }
}

MemoryResource* PerDeviceResourceRegistry::initialLocked(int device) {
  Slot& slot = slots_[static_cast<std::size_t>(device)];
  if (!slot.initial) {
    std::unique_ptr<MemoryResource> made = makeInitial_(device);
    if (!made) {
      throw std::runtime_error(std::string(kPrefix) +
                               "the initial-resource factory returned no resource for device " +
                               std::to_string(device));
    }
    checkOwner(*made, device, "the initial resource");
    slot.initial = std::move(made);
  }
  return slot.initial.get();
}

MemoryResource* PerDeviceResourceRegistry::get(int device) {
  checkDevice(device, "device ");
  std::lock_guard<std::mutex> lock(mutex_);
  const Slot& slot = slots_[static_cast<std::size_t>(device)];
  return slot.current != nullptr ? slot.current : initialLocked(device);
}

MemoryResource* PerDeviceResourceRegistry::set(int device, MemoryResource* resource) {
  checkDevice(device, "device ");
  if (resource != nullptr)
    checkOwner(*resource, device, "resource");
  std::lock_guard<std::mutex> lock(mutex_);
  MemoryResource* initial = initialLocked(device);
  Slot& slot = slots_[static_cast<std::size_t>(device)];
  MemoryResource* previous = slot.current != nullptr ? slot.current : initial;
  // Setting the initial resource explicitly is the same as a reset.
  slot.current = resource == initial ? nullptr : resource;
  return previous;
}

MemoryResource* PerDeviceResourceRegistry::reset(int device) {
  return set(device, nullptr);
}

MemoryResource* PerDeviceResourceRegistry::initial(int device) {
  checkDevice(device, "device ");
  std::lock_guard<std::mutex> lock(mutex_);
  return initialLocked(device);
}

int PerDeviceResourceRegistry::currentDevice() const {
  const int device = currentDevice_();
  checkDevice(device, "the current device ");
  return device;
}

ScopedResourceOverride::ScopedResourceOverride(PerDeviceResourceRegistry& registry, int device,
                                               MemoryResource& resource)
    : registry_(registry), device_(device), previous_(registry.set(device, &resource)) {}

ScopedResourceOverride::ScopedResourceOverride(PerDeviceResourceRegistry& registry,
                                               MemoryResource& resource)
    : ScopedResourceOverride(registry, registry.currentDevice(), resource) {}

ScopedResourceOverride::~ScopedResourceOverride() {
  try {
    registry_.set(device_, previous_);
  } catch (...) {
    // Cannot happen: the device was valid and previous_ was accepted for it before.
  }
}

}  // namespace memsamples::resource
