// Resource kinds and --resources, the per-device assignment, the device with the least free
// memory, and the managed kind's guard and budget: no cu* call, so the unit tests run them on any
// machine.
#include "resource_plan.hpp"

#include <algorithm>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "memsamples.hpp"
#include "support/cli.hpp"
#include "support/devices.hpp"
#include "support/text_format.hpp"

namespace memsamples::resource {

std::vector<ResourceKind> allResourceKinds() {
  return {ResourceKind::Device, ResourceKind::Managed, ResourceKind::Pinned, ResourceKind::Numa,
          ResourceKind::Vmm};
}

const char* kindName(ResourceKind kind) noexcept {
  static constexpr const char* kNames[] = {"device", "managed", "pinned", "numa", "vmm"};
  const auto index = static_cast<std::size_t>(kind);
  return index < std::size(kNames) ? kNames[index] : "unknown";
}

std::vector<ResourceKind> parseResourceKinds(std::string_view text, std::string_view option) {
  const std::string prefix = std::string(option) + ": ";
  if (text.empty())
    throw UsageError(prefix + "the list of resources is empty");
  std::vector<ResourceKind> kinds;
  for (const std::string_view name : splitCommaList(text)) {
    if (name.empty())
      throw UsageError(prefix + "empty entry in '" + std::string(text) + "'");
    std::optional<ResourceKind> found;
    for (const ResourceKind kind : allResourceKinds())
      if (name == kindName(kind))
        found = kind;
    if (!found) {
      const std::string valid =
          joined(allResourceKinds(), [](ResourceKind kind) { return std::string(kindName(kind)); });
      throw UsageError(prefix + "unknown resource '" + std::string(name) + "' (expected one of " +
                       valid + ")");
    }
    if (std::find(kinds.begin(), kinds.end(), *found) != kinds.end())
      throw UsageError(prefix + "'" + std::string(name) + "' is listed twice");
    kinds.push_back(*found);
  }
  return kinds;
}

ResourceKindList parseResourceKinds(std::string_view text) {
  if (text.empty())
    return {allResourceKinds(), false};
  return {parseResourceKinds(text, "--resources"), true};
}

std::vector<ResourceKind> assignKindsToDevices(const std::vector<ResourceKind>& kinds,
                                               int deviceCount) {
  if (kinds.empty())
    throw std::invalid_argument("assignKindsToDevices: no resource kinds to assign");
  if (deviceCount < 1) {
    throw std::invalid_argument("assignKindsToDevices: the device count must be at least 1 (got " +
                                std::to_string(deviceCount) + ")");
  }
  std::vector<ResourceKind> assignment;
  for (int device = 0; device < deviceCount; ++device)
    assignment.push_back(kinds[(static_cast<std::size_t>(device) + 1) % kinds.size()]);
  return assignment;
}

DeviceFreeMemory smallestFreeMemory(const std::vector<DeviceFreeMemory>& devices) {
  if (devices.empty())
    throw std::invalid_argument("smallestFreeMemory: no devices");
  return *std::min_element(devices.begin(), devices.end(),
                           [](const DeviceFreeMemory& a, const DeviceFreeMemory& b) {
                             return a.freeBytes < b.freeBytes;
                           });
}

std::string describeSizedFor(const DeviceFreeMemory& smallest, std::size_t devicesUsed) {
  if (devicesUsed <= 1)
    return "the device";
  return "device " + std::to_string(smallest.device) + " (the least free memory of the " +
         std::to_string(devicesUsed) + " devices used)";
}

std::string kindUnavailableReason(ResourceKind kind, const AttributeQuery& attribute,
                                  bool numaBuilt) {
  if (kind == ResourceKind::Numa && !numaBuilt)
    return "this build has no NUMA support: libnuma was not found at configure time "
           "(apt-get install libnuma-dev and configure again)";
  // What each kind needs, in the order it is asked. The threads and the CPU checks touch managed
  // memory while other work may run: concurrent managed access, too.
  struct Need {
    ResourceKind kind;
    CUdevice_attribute attribute;
    const char* lacking;
  };
  static const Need kNeeds[] = {
      {ResourceKind::Device, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
       "no stream-ordered memory pools (CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 0)"},
      {ResourceKind::Managed, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY,
       "no managed memory (CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY = 0)"},
      {ResourceKind::Managed, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS,
       "no concurrent managed access (CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS = 0)"},
      {ResourceKind::Pinned, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY,
       "cannot map host memory (CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY = 0)"},
      {ResourceKind::Numa, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY,
       "cannot map host memory (CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY = 0)"},
      {ResourceKind::Numa, CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED,
       "no cuMemHostRegister (CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED = 0)"},
      {ResourceKind::Vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
       "no virtual memory management "
       "(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 0)"},
  };
  for (const Need& need : kNeeds)
    if (need.kind == kind && attribute(need.attribute) == 0)
      return need.lacking;
  return "";
}

void checkNamedDevices(const std::vector<int>& named, int deviceCount) {
  for (const int ordinal : named) {
    if (ordinal >= 0 && ordinal < deviceCount)
      continue;
    const std::string valid =
        deviceCount == 1 ? "valid: 0" : "valid: 0.." + std::to_string(deviceCount - 1);
    throw UsageError("--devices: device " + std::to_string(ordinal) +
                     " does not exist: this machine has " + std::to_string(deviceCount) +
                     (deviceCount == 1 ? " CUDA device (" : " CUDA devices (") + valid + ")");
  }
}

std::string contextForbidden(const OtherDevice& device) {
  return computeModeProblem(device.ordinal, device.computeMode, DeviceUse::OneProcess);
}

DeviceChoice chooseDevices(const DeviceFreeMemory& chosen, const std::vector<OtherDevice>& others,
                           const std::optional<std::uint64_t>& requested,
                           std::uint64_t defaultBytes, std::uint64_t elementBytes) {
  constexpr int kVectors = 3;  // A, B and C on every device used
  DeviceChoice choice;

  // A device --devices names must take part: one that cannot hold a context waives the run.
  std::vector<DeviceFreeMemory> sizing = {chosen};  // the devices whose memory sizes the vectors
  for (const OtherDevice& other : others) {
    if (!other.named)
      continue;
    const ExtraGpu gpu = extraGpuOf(other, contextForbidden(other));
    if (const std::optional<std::string> why = whyNoContext(gpu))
      throw WaivedError(*why + "; --devices names it");
    sizing.push_back({other.ordinal, other.freeBytes});
  }

  choice.sizedFor = smallestFreeMemory(sizing);
  choice.bytes = chooseBufferBytes(requested, defaultBytes, choice.sizedFor.freeBytes, kVectors,
                                   elementBytes, describeSizedFor(choice.sizedFor, sizing.size()));
  for (const DeviceFreeMemory& device : sizing)
    choice.used.push_back(device.device);

  // An unnamed device takes part only where it holds a context and the vectors fit in the share
  // chooseBufferBytes() leaves a device (80 % of its free memory): it must not shrink the run.
  const BuffersPerGpu need{kVectors, choice.bytes, "vectors"};
  for (const OtherDevice& other : others) {
    if (other.named)
      continue;
    const ExtraGpu gpu = extraGpuOf(other, contextForbidden(other));
    if (const std::optional<std::string> why = whyLeftOut(gpu, need, ""))
      choice.leftOut.push_back({other.ordinal, *why});
    else
      choice.used.push_back(other.ordinal);
  }

  std::sort(choice.used.begin(), choice.used.end());
  std::sort(choice.leftOut.begin(), choice.leftOut.end(),
            [](const LeftOutDevice& a, const LeftOutDevice& b) { return a.ordinal < b.ordinal; });
  return choice;
}

namespace {

/// Two sizes a message compares: formatBytes() of each, or the exact byte counts when both would
/// print the same ("1.00 GiB refused: only 1.00 GiB free" would explain nothing).
std::pair<std::string, std::string> comparedSizes(std::uint64_t first, std::uint64_t second) {
  std::string a = formatBytes(first);
  std::string b = formatBytes(second);
  if (a == b && first != second)
    return {std::to_string(first) + " bytes", std::to_string(second) + " bytes"};
  return {std::move(a), std::move(b)};
}

}  // namespace

void checkManagedRequest(std::uint64_t bytes, std::uint64_t freeBytes) {
  if (bytes == 0) {
    throw ManagedAllocationRefused(
        "cuMemAllocManaged of 0 bytes refused: a managed allocation needs at least one byte "
        "(the driver would return CUDA_ERROR_INVALID_VALUE)");
  }
  if (bytes > freeBytes) {
    const auto [asked, available] = comparedSizes(bytes, freeBytes);
    throw ManagedAllocationRefused(
        "cuMemAllocManaged of " + asked + " refused: the device has only " + available +
        " free, and over-subscribing managed memory can stall a shared GPU; ask for at most " +
        available);
  }
}

void ManagedMemoryBudget::reserve(std::uint64_t bytes) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (bytes > limit_ - reserved_) {  // a subtraction, so that a huge request cannot overflow
    const auto [asked, left] = comparedSizes(bytes, limit_ - reserved_);
    throw ManagedAllocationRefused("cuMemAllocManaged of " + asked +
                                   " refused: the managed-memory budget of " + formatBytes(limit_) +
                                   " has " + left + " left (" + formatBytes(reserved_) +
                                   " already allocated)");
  }
  reserved_ += bytes;
}

void ManagedMemoryBudget::release(std::uint64_t bytes) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (bytes > reserved_) {
    const auto [given, charged] = comparedSizes(bytes, reserved_);
    throw std::logic_error("ManagedMemoryBudget::release: " + given + " given back, but only " +
                           charged + " is charged; a caller released memory it never reserved");
  }
  reserved_ -= bytes;
}

std::uint64_t ManagedMemoryBudget::reserved() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return reserved_;
}

}  // namespace memsamples::resource
