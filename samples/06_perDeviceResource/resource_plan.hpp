/**
 * @file resource_plan.hpp
 * @brief The CUDA-free decisions of 06_perDeviceResource: which resource kinds exist and how they
 *        are named on the command line, which kind each device gets, and which device's free
 *        memory limits the vector size. Unit tested in ctest/unit/perDeviceResource/.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace memsamples::resource {

/// The kinds of memory resource the sample makes (resources.hpp).
enum class ResourceKind {
  Device,   ///< Stream-ordered device memory from the device's default pool (the initial one).
  Managed,  ///< cuMemAllocManaged through 03's ManagedBuffer.
  Pinned,   ///< Page-locked, device-mapped host memory (cuMemHostAlloc).
  Numa,     ///< Host memory bound to the GPU's nearest NUMA node (04), then cuMemHostRegister.
  Vmm,      ///< A striped VMM range (02's StripedVmmRange).
};

/// Every kind, in the order the sample runs them.
std::vector<ResourceKind> allResourceKinds();

/// The command-line name: "device", "managed", "pinned", "numa", "vmm".
const char* kindName(ResourceKind kind) noexcept;

/**
 * Parses a `--resources` value: a comma-separated list of kind names, e.g. "device,vmm".
 * @throws UsageError naming @p option for an empty list or entry, an unknown name (the message
 *         lists the valid ones) or a name given twice.
 */
std::vector<ResourceKind> parseResourceKinds(std::string_view text, std::string_view option);

/// The kinds a run makes, and whether `--resources` listed them (then a missing one waives).
struct ResourceKindList {
  std::vector<ResourceKind> kinds;  ///< In the order they run.
  bool listed = false;              ///< Given with `--resources`, not every kind by default.
};

/// The kinds of a `--resources` value, or every kind when @p text is empty.
/// @throws UsageError as parseResourceKinds(), naming `--resources`.
ResourceKindList parseResourceKinds(std::string_view text);

/**
 * The kind each device gets in the multi-device phase: device i gets `kinds[(i + 1) % n]`, so
 * that neighbouring devices use different kinds and device 0 does not simply keep the initial
 * (device-memory) resource when it is first in the list. With one kind, every device gets it.
 * @throws std::invalid_argument for an empty @p kinds or a @p deviceCount below 1.
 */
std::vector<ResourceKind> assignKindsToDevices(const std::vector<ResourceKind>& kinds,
                                               int deviceCount);

/// The free memory of one device (a CUDA-free record of a cuMemGetInfo answer).
struct DeviceFreeMemory {
  int device = 0;               ///< The device ordinal.
  std::uint64_t freeBytes = 0;  ///< Its free memory in bytes.
};

/**
 * The device with the least free memory of @p devices (the first one on a tie): every device
 * that takes part allocates buffers of the same size, so the size must fit the smallest.
 * @throws std::invalid_argument when @p devices is empty.
 */
DeviceFreeMemory smallestFreeMemory(const std::vector<DeviceFreeMemory>& devices);

/// What the vectors are sized for, as chooseBufferBytes() names it in its messages: "the device"
/// when @p devicesUsed is 1, else e.g. "device 1 (the least free memory of the 2 devices used)".
std::string describeSizedFor(const DeviceFreeMemory& smallest, std::size_t devicesUsed);

}  // namespace memsamples::resource
