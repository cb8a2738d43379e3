/**
 * @file resource_plan.hpp
 * @brief The CUDA-free decisions of 06_perDeviceResource: which resource kinds exist, how they
 *        are named on the command line and what each needs of a device, which kind each device
 *        gets, which GPUs a run uses beside the chosen one and how large the vectors are, and
 *        what the managed kind refuses (its free-memory guard and its budget). No driver call
 *        (cuda.h is included for its types): unit tested in ctest/unit/perDeviceResource/.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
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

/// Answers a device attribute (cuDeviceGetAttribute of one device); may throw.
using AttributeQuery = std::function<int(CUdevice_attribute)>;

/**
 * Why @p kind cannot run on a device, or empty: the NUMA kind in a build without libnuma
 * (@p numaBuilt false), or an attribute the kind needs that @p attribute answers 0 (e.g. "no
 * managed memory (CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY = 0)"). Only those answers waive a kind:
 * what @p attribute throws (a failed cuDeviceGetAttribute) goes to the caller and fails the run.
 */
std::string kindUnavailableReason(ResourceKind kind, const AttributeQuery& attribute,
                                  bool numaBuilt);

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

/// @name Which GPUs a run uses beside the chosen one
/// Step 6 gives every GPU it uses a resource of its own, and every GPU used allocates vectors of
/// the same size. A GPU beside the chosen one that the user did not name (`--devices`) must not
/// stop or shrink a run whose chosen device is fine: it is left out, with the reason, when its
/// compute mode forbids a context, when it refused one (EXCLUSIVE_PROCESS held by another
/// process), or when it lacks the memory for the vectors. A named GPU is used, or the run says
/// why it cannot be (WaivedError), and it sizes the vectors like the chosen one.
/// @{

/// A GPU beside the chosen one, as the driver described it: plain data, so that the unit tests
/// can describe any machine.
struct OtherDevice {
  int ordinal = 0;              ///< Its ordinal.
  int computeMode = 0;          ///< CU_DEVICE_ATTRIBUTE_COMPUTE_MODE (a CUcomputemode).
  bool named = false;           ///< Listed with `--devices`.
  std::string contextRefused;   ///< Why cuCtxCreate refused (a busy device), or empty.
  std::uint64_t freeBytes = 0;  ///< cuMemGetInfo in its context; 0 when it has none.
};

/// A GPU left out of the run, and why.
struct LeftOutDevice {
  int ordinal = 0;     ///< Its ordinal.
  std::string reason;  ///< A sentence that names the device.
};

/// The GPUs a run uses and the size of its vectors.
struct DeviceChoice {
  std::vector<int> used;               ///< The chosen device and those kept, in ordinal order.
  std::vector<LeftOutDevice> leftOut;  ///< In ordinal order.
  std::uint64_t bytes = 0;             ///< Bytes per vector.
  DeviceFreeMemory sizedFor;           ///< The device whose free memory sized the vectors.
};

/// Checks a `--devices` list against the @p deviceCount devices of this machine.
/// @throws UsageError naming the first ordinal that does not exist and the valid ones.
void checkNamedDevices(const std::vector<int>& named, int deviceCount);

/// Why @p device must not get a context at all (its compute mode: computeModeProblem() of
/// Common), or empty. Asked before cuCtxCreate.
std::string contextForbidden(const OtherDevice& device);

/**
 * The devices of a run: @p chosen (always used) and each of @p others that may be used. The
 * vectors (3 per device, @p elementBytes each element) are @p requested bytes, or
 * @p defaultBytes cut to the chosen device's and the named devices' free memory
 * (chooseBufferBytes()). A device the user did not name is then left out when its compute mode
 * forbids a context, when cuCtxCreate refused it, or when the 3 vectors do not fit in 80 % of its
 * free memory (the share chooseBufferBytes() leaves a device).
 * @throws WaivedError naming a named device whose compute mode forbids a context or that refused
 *         one; UsageError or std::runtime_error as chooseBufferBytes() for a size that does not
 *         fit the chosen or a named device.
 */
DeviceChoice chooseDevices(const DeviceFreeMemory& chosen, const std::vector<OtherDevice>& others,
                           const std::optional<std::uint64_t>& requested,
                           std::uint64_t defaultBytes, std::uint64_t elementBytes);

/// @}

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
