/**
 * @file resource_plan.hpp
 * @brief The CUDA-free decisions of 06_perDeviceResource: which resource kinds exist and how they
 *        are named on the command line, which kind each device gets, which device's free
 *        memory limits the vector size, and what the managed kind refuses (its free-memory guard
 *        and its budget). Unit tested in ctest/unit/perDeviceResource/.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace memsamples::resource {

/// The kinds of memory resource the sample makes (resources.hpp).
enum class ResourceKind {
  Device,   ///< Stream-ordered device memory from the device's default pool (the initial one).
  Managed,  ///< cuMemAllocManaged behind a free-memory guard and a budget.
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

/// @name The managed kind's guard and budget
/// Managed memory may be larger than the GPU (the driver evicts pages to the host), but on a
/// shared GPU heavy over-subscription can stall every process using it, so the managed resource
/// (resources.cpp) refuses a request larger than the free memory before the driver is called
/// (checkManagedRequest). cuMemGetInfo counts managed memory only once its pages are on the
/// device, so three buffers of "almost all free memory" would each pass that check: a
/// ManagedMemoryBudget made from the free memory at start-up is charged by every allocation and
/// refuses the one that would exceed it. 03_managedAdvisePrefetch teaches managed memory itself.
/// @{

/// A managed allocation that the guard or a budget refused; nothing was allocated.
class ManagedAllocationRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Throws ManagedAllocationRefused for 0 bytes or more than @p freeBytes.
void checkManagedRequest(std::uint64_t bytes, std::uint64_t freeBytes);

/// An upper limit on the managed memory kept allocated on one device; thread-safe, not copyable.
class ManagedMemoryBudget {
 public:
  /// A budget of @p limitBytes.
  explicit ManagedMemoryBudget(std::uint64_t limitBytes) : limit_(limitBytes) {}
  ManagedMemoryBudget(const ManagedMemoryBudget&) = delete;
  ManagedMemoryBudget& operator=(const ManagedMemoryBudget&) = delete;

  /// Charges @p bytes. @throws ManagedAllocationRefused (charging nothing) past the limit.
  void reserve(std::uint64_t bytes);
  /// Gives @p bytes back. @throws std::logic_error (changing nothing) for more than is charged:
  /// a caller gave back what it never reserved, and clamping would hide that bug.
  void release(std::uint64_t bytes);
  std::uint64_t reserved() const;                          ///< Bytes charged now.
  std::uint64_t limit() const noexcept { return limit_; }  ///< The limit.

 private:
  const std::uint64_t limit_;
  mutable std::mutex mutex_;
  std::uint64_t reserved_ = 0;
};

/// @}

}  // namespace memsamples::resource
