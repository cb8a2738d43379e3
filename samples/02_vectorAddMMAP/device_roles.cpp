// Which devices back and map a striped range (see device_roles.hpp). No driver calls here.
#include "device_roles.hpp"

#include <stdexcept>

#include "memsamples.hpp"

namespace memsamples::vmm {
namespace {

std::string plural(std::size_t count, const char* one, const char* many) {
  return std::to_string(count) + " " + (count == 1 ? one : many);
}

std::string deviceCountText(int count) {
  const std::string valid = count == 1 ? "valid: 0" : "valid: 0.." + std::to_string(count - 1);
  return "this machine has " +
         plural(static_cast<std::size_t>(count), "CUDA device", "CUDA devices") + " (" + valid +
         ")";
}

// Checks that a --backing or --mapping list names only existing devices.
void checkOrdinals(const std::vector<int>& devices, const char* option, int deviceCount) {
  for (const int device : devices) {
    if (device < 0 || device >= deviceCount) {
      throw UsageError(std::string(option) + " lists device " + std::to_string(device) + ", but " +
                       deviceCountText(deviceCount));
    }
  }
}

// Checks a --backing or --mapping list: existing devices that support VMM.
void checkDeviceOption(const std::vector<int>& devices, const char* option,
                       const DeviceTopology& topology) {
  checkOrdinals(devices, option, topology.deviceCount());
  for (const int device : devices) {
    if (!topology.vmmSupported[static_cast<std::size_t>(device)]) {
      throw UsageError(std::string(option) + " lists device " + std::to_string(device) +
                       ", which does not support virtual memory management "
                       "(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 0)");
    }
  }
}

}  // namespace

void checkDeviceOrdinals(const std::vector<int>& backingOption,
                         const std::vector<int>& mappingOption, int deviceCount) {
  checkOrdinals(backingOption, "--backing", deviceCount);
  checkOrdinals(mappingOption, "--mapping", deviceCount);
}

std::vector<int> discoverBackingDevices(int chosen, const DeviceTopology& topology) {
  topology.checkShape();
  if (chosen < 0 || chosen >= topology.deviceCount()) {
    throw std::invalid_argument("discoverBackingDevices: device " + std::to_string(chosen) +
                                " is not one of the " + std::to_string(topology.deviceCount()) +
                                " devices");
  }
  std::vector<int> backing{chosen};
  const auto& reachable = topology.canAccessPeer[static_cast<std::size_t>(chosen)];
  for (int device = 0; device < topology.deviceCount(); ++device) {
    const auto index = static_cast<std::size_t>(device);
    // The peer's own VMM flag decides whether it can hold cuMemCreate memory.
    if (device != chosen && reachable[index] && topology.vmmSupported[index]) {
      backing.push_back(device);
    }
  }
  return backing;
}

DeviceRoles resolveDeviceRoles(int chosen, const std::vector<int>& backingOption,
                               const std::vector<int>& mappingOption,
                               const DeviceTopology& topology) {
  topology.checkShape();
  checkDeviceOption(backingOption, "--backing", topology);
  checkDeviceOption(mappingOption, "--mapping", topology);

  DeviceRoles roles;
  roles.backing = backingOption.empty() ? discoverBackingDevices(chosen, topology) : backingOption;
  roles.mapping = mappingOption.empty() ? std::vector<int>{chosen} : mappingOption;

  bool kernelDeviceMaps = false;
  for (const int device : roles.mapping)
    kernelDeviceMaps = kernelDeviceMaps || device == chosen;
  if (!kernelDeviceMaps) {
    throw UsageError("--mapping " + formatDeviceList(roles.mapping) + " does not include device " +
                     std::to_string(chosen) + ", where the kernel runs; add it (e.g. --mapping " +
                     std::to_string(chosen) + "," + formatDeviceList(roles.mapping) + ")");
  }
  for (const int mapper : roles.mapping) {
    for (const int owner : roles.backing) {
      if (mapper != owner && !topology.canAccessPeer[static_cast<std::size_t>(mapper)]
                                                    [static_cast<std::size_t>(owner)]) {
        throw UsageError("device " + std::to_string(mapper) +
                         " cannot access the memory of device " + std::to_string(owner) +
                         " (cuDeviceCanAccessPeer = 0), so it cannot map "
                         "stripes backed there; remove one of them from --mapping or --backing");
      }
    }
  }
  return roles;
}

int resolveStripeCount(int requested, std::size_t backingDeviceCount) {
  if (requested < 0) {
    throw UsageError("--stripes " + std::to_string(requested) + " is negative");
  }
  if (requested == 0)
    return static_cast<int>(backingDeviceCount);
  if (static_cast<std::size_t>(requested) < backingDeviceCount) {
    throw UsageError("--stripes " + std::to_string(requested) + " is fewer than the " +
                     std::to_string(backingDeviceCount) +
                     " backing devices: every backing device needs at least one stripe (use "
                     "--backing to name fewer devices)");
  }
  return requested;
}

std::string formatDeviceList(const std::vector<int>& devices) {
  std::string text;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (i > 0)
      text += ',';
    text += std::to_string(devices[i]);
  }
  return text;
}

}  // namespace memsamples::vmm
