// The CUDA-free half of the striped VMM allocator (see striped_vmm_logic.hpp). Nothing here calls
// into libcuda; the driver is reached only through the VmmDriver interface.
#include "striped_vmm_logic.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace memsamples::vmm {
namespace {

// A layout is a vector with one entry per stripe; this bounds it far above any useful count
// (64 Ki stripes of 2 MiB is 128 GiB) and below a size that could exhaust host memory.
constexpr int kMaxStripes = 1 << 16;

std::string plural(std::size_t count, const char* one, const char* many) {
  return std::to_string(count) + " " + (count == 1 ? one : many);
}

void checkTopology(const DeviceTopology& topology) {
  const std::size_t count = topology.vmmSupported.size();
  if (topology.canAccessPeer.size() != count) {
    throw std::invalid_argument("DeviceTopology: canAccessPeer has " +
                                std::to_string(topology.canAccessPeer.size()) + " rows for " +
                                std::to_string(count) + " devices");
  }
  for (const auto& row : topology.canAccessPeer) {
    if (row.size() != count) {
      throw std::invalid_argument("DeviceTopology: a canAccessPeer row has " +
                                  std::to_string(row.size()) + " entries for " +
                                  std::to_string(count) + " devices");
    }
  }
}

std::string deviceCountText(int count) {
  const std::string valid = count == 1 ? "valid: 0" : "valid: 0.." + std::to_string(count - 1);
  return "this machine has " +
         plural(static_cast<std::size_t>(count), "CUDA device", "CUDA devices") + " (" + valid +
         ")";
}

// Checks a --backing or --mapping list: existing devices that support VMM.
void checkDeviceOption(const std::vector<int>& devices, const char* option,
                       const DeviceTopology& topology) {
  for (const int device : devices) {
    if (device < 0 || device >= topology.deviceCount()) {
      throw UsageError(std::string(option) + " lists device " + std::to_string(device) + ", but " +
                       deviceCountText(topology.deviceCount()));
    }
    if (!topology.vmmSupported[static_cast<std::size_t>(device)]) {
      throw UsageError(std::string(option) + " lists device " + std::to_string(device) +
                       ", which does not support virtual memory management "
                       "(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 0)");
    }
  }
}

// Only build steps can be injected: a fault on unmap or address free would never fire.
void requireInjectable(const FaultInjection& fault, const char* where) {
  if (!isInjectableStep(fault.step)) {
    throw std::invalid_argument(std::string(where) + ": " + stepCallName(fault.step) +
                                " is not a build step; only reserve, create, map, release and "
                                "access can be injected");
  }
}

// formatBytes() for a whole number of B, KiB, MiB...; otherwise the exact count ("2097148
// bytes"), because a rounded "2.00 MiB" of padding would hide the 4 bytes that made it.
std::string exactBytes(std::uint64_t bytes) {
  std::uint64_t unit = 1;
  while (bytes / unit >= 1024 && unit <= (UINT64_MAX >> 10))
    unit <<= 10;
  if (bytes % unit == 0)
    return formatBytes(bytes);
  return std::to_string(bytes) + " bytes";
}

using Clock = std::chrono::steady_clock;

double millisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

const char* baseName(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

// What has been created so far while a range is built, so that a failure can undo exactly that.
class PartialRange {
 public:
  explicit PartialRange(VmmDriver& driver) : driver_(driver) {}
  // Only reached without commit() when something other than a driver step threw (bad_alloc):
  // the rollback still runs, its summary has nobody to go to.
  ~PartialRange() {
    if (!committed_)
      (void)rollback();
  }
  PartialRange(const PartialRange&) = delete;
  PartialRange& operator=(const PartialRange&) = delete;

  void reserved(CUdeviceptr base, std::uint64_t bytes) {
    base_ = base;
    reservedBytes_ = bytes;
    hasReservation_ = true;
  }
  void created(CUmemGenericAllocationHandle handle, int stripe) {
    pending_ = handle;
    pendingStripe_ = stripe;
    hasPending_ = true;
  }
  void mapped(CUdeviceptr address, std::uint64_t bytes, int stripe) {
    mapped_.push_back({address, bytes, stripe, CUDA_SUCCESS});
  }
  void released() { hasPending_ = false; }
  void commit() { committed_ = true; }

  // Undoes everything recorded, newest first, and says what it did. Every driver call is made
  // even when an earlier one fails: a failed unmap must not keep the handle or the VA alive.
  std::string rollback() noexcept {
    // First every driver call, with results kept in storage that already exists (nothing here
    // allocates, so nothing can stop half-way), then the summary.
    for (auto it = mapped_.rbegin(); it != mapped_.rend(); ++it) {
      it->unmapResult = driver_.unmap(it->address, it->bytes);
    }
    CUresult releaseResult = CUDA_SUCCESS;
    const bool hadPending = std::exchange(hasPending_, false);
    if (hadPending)
      releaseResult = driver_.release(pending_);
    CUresult freeResult = CUDA_SUCCESS;
    const bool hadReservation = std::exchange(hasReservation_, false);
    if (hadReservation)
      freeResult = driver_.addressFree(base_, reservedBytes_);

    std::string summary;
    try {
      std::string problems;
      const auto problem = [&](const std::string& what, CUresult result) {
        problems += "; rollback problem: " + what + " failed: " + driver_.describe(result);
      };
      std::size_t unmapped = 0;
      for (auto it = mapped_.rbegin(); it != mapped_.rend(); ++it) {
        if (it->unmapResult == CUDA_SUCCESS) {
          ++unmapped;
        } else {
          problem("cuMemUnmap of stripe " + std::to_string(it->stripe), it->unmapResult);
        }
      }
      std::vector<std::string> done;
      if (unmapped > 0)
        done.push_back(plural(unmapped, "stripe", "stripes") + " unmapped");
      if (hadPending && releaseResult == CUDA_SUCCESS)
        done.push_back("1 handle released");
      if (hadPending && releaseResult != CUDA_SUCCESS) {
        problem("cuMemRelease of stripe " + std::to_string(pendingStripe_) + "'s handle",
                releaseResult);
      }
      if (hadReservation && freeResult == CUDA_SUCCESS)
        done.push_back("address range freed");
      if (hadReservation && freeResult != CUDA_SUCCESS) {
        problem("cuMemAddressFree of the range", freeResult);
      }
      summary = "rolled back: ";
      if (done.empty())
        summary += "nothing had been created";
      for (std::size_t i = 0; i < done.size(); ++i)
        summary += (i > 0 ? ", " : "") + done[i];
      summary += problems;
    } catch (...) {
      summary = "rolled back (no summary: out of host memory)";
    }
    mapped_.clear();
    return summary;
  }

 private:
  struct MappedStripe {
    CUdeviceptr address;
    std::uint64_t bytes;
    int stripe;
    CUresult unmapResult;  // set by rollback()
  };
  VmmDriver& driver_;
  bool committed_ = false;
  bool hasReservation_ = false;
  CUdeviceptr base_ = 0;
  std::uint64_t reservedBytes_ = 0;
  bool hasPending_ = false;
  CUmemGenericAllocationHandle pending_{};
  int pendingStripe_ = -1;
  std::vector<MappedStripe> mapped_;
};

// The build algorithm, one member per step so that each failure reports its own line.
class RangeBuilder {
 public:
  RangeBuilder(VmmDriver& driver, const StripeLayout& layout,
               const std::vector<int>& mappingDevices, const BuildOptions& options)
      : driver_(driver),
        layout_(layout),
        mapping_(mappingDevices),
        options_(options),
        times_(options.times ? *options.times : localTimes_),
        partial_(driver) {
    times_ = StepTimes{};
  }

  CUdeviceptr build() {
    reserve();
    for (std::size_t i = 0; i < layout_.stripes.size(); ++i) {
      const int stripe = static_cast<int>(i);
      // create -> map -> release: once mapped, the handle is not needed any more; the mapping
      // holds the memory, and cuMemUnmap will free it.
      const CUmemGenericAllocationHandle handle = create(stripe);
      map(stripe, handle);
      release(stripe, handle);
    }
    setAccess();
    partial_.commit();
    return base_;
  }

 private:
  struct Outcome {
    CUresult result;
    bool injected;
  };

  template <typename Call>
  Outcome call(VmmStep step, int index, double& timeSlot, Call&& driverCall) {
    if (options_.fault && options_.fault->step == step && options_.fault->index == index) {
      return {kInjectedResult, true};
    }
    const auto start = Clock::now();
    const CUresult result = driverCall();
    timeSlot += millisecondsSince(start);
    return {result, false};
  }

  void reserve() {
    const Outcome outcome = call(VmmStep::Reserve, 0, times_.reserveMs, [&] {
      return driver_.reserve(&base_, layout_.roundedBytes, layout_.granularity,
                             options_.addressHint);
    });
    if (outcome.result != CUDA_SUCCESS) {
      base_ = 0;
      fail(VmmStep::Reserve, -1, outcome,
           "for the range of " + formatBytes(layout_.roundedBytes) + " (" +
               plural(layout_.stripes.size(), "stripe", "stripes") + " of " +
               formatBytes(layout_.stripeBytes) + ", alignment " +
               formatBytes(layout_.granularity) + ")");
    }
    partial_.reserved(base_, layout_.roundedBytes);
  }

  CUmemGenericAllocationHandle create(int stripe) {
    const Stripe& s = layout_.stripes[static_cast<std::size_t>(stripe)];
    CUmemGenericAllocationHandle handle{};
    const Outcome outcome = call(VmmStep::Create, stripe, times_.createMs,
                                 [&] { return driver_.create(&handle, s.bytes, s.device); });
    if (outcome.result != CUDA_SUCCESS)
      fail(VmmStep::Create, stripe, outcome, stripeText(stripe));
    partial_.created(handle, stripe);
    return handle;
  }

  void map(int stripe, CUmemGenericAllocationHandle handle) {
    const Stripe& s = layout_.stripes[static_cast<std::size_t>(stripe)];
    const Outcome outcome = call(VmmStep::Map, stripe, times_.mapMs,
                                 [&] { return driver_.map(base_ + s.offset, s.bytes, handle); });
    if (outcome.result != CUDA_SUCCESS)
      fail(VmmStep::Map, stripe, outcome, stripeText(stripe));
    partial_.mapped(base_ + s.offset, s.bytes, stripe);
  }

  void release(int stripe, CUmemGenericAllocationHandle handle) {
    const Outcome outcome =
        call(VmmStep::Release, stripe, times_.releaseMs, [&] { return driver_.release(handle); });
    if (outcome.result != CUDA_SUCCESS) {
      fail(VmmStep::Release, stripe, outcome, stripeText(stripe));
    }
    partial_.released();
  }

  void setAccess() {
    const Outcome outcome = call(VmmStep::SetAccess, 0, times_.setAccessMs, [&] {
      return driver_.setAccess(base_, layout_.roundedBytes, mapping_);
    });
    if (outcome.result != CUDA_SUCCESS) {
      fail(VmmStep::SetAccess, -1, outcome,
           "for the range of " + formatBytes(layout_.roundedBytes) + " at " + formatAddress(base_) +
               " (read-write for device" + (mapping_.size() == 1 ? " " : "s ") +
               formatDeviceList(mapping_) + ")");
    }
  }

  std::string stripeText(int stripe) const {
    const Stripe& s = layout_.stripes[static_cast<std::size_t>(stripe)];
    return "for stripe " + std::to_string(stripe) + " of " +
           std::to_string(layout_.stripes.size()) + " (device " + std::to_string(s.device) +
           ", VA offset " + formatAddress(s.offset) + ", " + formatBytes(s.bytes) + ")";
  }

  // Rolls back, then throws the error that names the step, the stripe and what was undone.
  [[noreturn]] void fail(VmmStep step, int stripe, Outcome outcome, const std::string& context,
                         const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
    const CUdeviceptr reservedBase = base_;
    const std::string rollback = partial_.rollback();
    std::string message = std::string(stepCallName(step)) + " failed at " + baseName(file) + ":" +
                          std::to_string(line) + " " + context + ": " +
                          driver_.describe(outcome.result);
    if (outcome.injected) {
      message += " [injected by --inject-failure " +
                 formatFaultInjection(FaultInjection{step, stripe < 0 ? 0 : stripe}) + "]";
    }
    message += "; " + rollback;
    throw VmmStepError(outcome.result, message, step, stripe, outcome.injected, reservedBase);
  }

  VmmDriver& driver_;
  const StripeLayout& layout_;
  const std::vector<int>& mapping_;
  const BuildOptions& options_;
  StepTimes localTimes_;
  StepTimes& times_;
  PartialRange partial_;
  CUdeviceptr base_ = 0;
};

}  // namespace

// ------------------------------------------------------------------------------------- layout

StripeLayout planStripes(std::uint64_t bytes, std::uint64_t granularity, int stripeCount,
                         const std::vector<int>& backingDevices) {
  if (bytes == 0) {
    throw std::invalid_argument(
        "planStripes: a size of 0 bytes was requested; a range needs at "
        "least 1 byte");
  }
  if (granularity == 0)
    throw std::invalid_argument("planStripes: the granularity is 0");
  if (stripeCount < 1 || stripeCount > kMaxStripes) {
    throw std::invalid_argument("planStripes: " + std::to_string(stripeCount) +
                                " stripes requested; the count must be in [1, " +
                                std::to_string(kMaxStripes) + "]");
  }
  if (backingDevices.empty()) {
    throw std::invalid_argument("planStripes: no backing device to place the stripes on");
  }
  const auto count = static_cast<std::uint64_t>(stripeCount);
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  if (granularity > kMax / count) {
    throw std::overflow_error("planStripes: " + std::to_string(stripeCount) + " stripes x " +
                              std::to_string(granularity) +
                              " bytes of granularity does not fit in 64 bits");
  }
  const std::uint64_t unit = count * granularity;
  const std::uint64_t units = bytes / unit + (bytes % unit != 0 ? 1 : 0);
  if (units > kMax / unit) {
    throw std::overflow_error("planStripes: " + std::to_string(bytes) +
                              " bytes rounded up to a multiple of " + std::to_string(unit) +
                              " bytes (" + plural(count, "stripe", "stripes") + " x " +
                              formatBytes(granularity) + ") does not fit in 64 bits");
  }
  StripeLayout layout;
  layout.requestedBytes = bytes;
  layout.granularity = granularity;
  layout.roundedBytes = units * unit;
  layout.stripeBytes = layout.roundedBytes / count;
  layout.stripes.reserve(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    layout.stripes.push_back(
        {backingDevices[i % backingDevices.size()], i * layout.stripeBytes, layout.stripeBytes});
  }
  return layout;
}

std::uint64_t combinedGranularity(const std::vector<std::uint64_t>& perDevice) {
  if (perDevice.empty())
    throw std::invalid_argument("combinedGranularity: no device");
  std::uint64_t largest = 0;
  for (const std::uint64_t granularity : perDevice) {
    if (granularity == 0) {
      throw std::invalid_argument("combinedGranularity: a device reported a granularity of 0");
    }
    largest = std::max(largest, granularity);
  }
  return largest;
}

// -------------------------------------------------------------------------------------- devices

std::vector<int> discoverBackingDevices(int chosen, const DeviceTopology& topology) {
  checkTopology(topology);
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
  checkTopology(topology);
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

// ------------------------------------------------------------------------------ fault injection

const char* stepCallName(VmmStep step) noexcept {
  switch (step) {
    case VmmStep::Reserve:
      return "cuMemAddressReserve";
    case VmmStep::Create:
      return "cuMemCreate";
    case VmmStep::Map:
      return "cuMemMap";
    case VmmStep::Release:
      return "cuMemRelease";
    case VmmStep::SetAccess:
      return "cuMemSetAccess";
    case VmmStep::Unmap:
      return "cuMemUnmap";
    case VmmStep::AddressFree:
      return "cuMemAddressFree";
  }
  return "unknown step";
}

bool isPerStripeStep(VmmStep step) noexcept {
  return step == VmmStep::Create || step == VmmStep::Map || step == VmmStep::Release;
}

bool isInjectableStep(VmmStep step) noexcept {
  return step == VmmStep::Reserve || isPerStripeStep(step) || step == VmmStep::SetAccess;
}

FaultInjection parseFaultInjection(std::string_view text) {
  const std::string forms =
      "expected reserve, create:K, map:K, release:K or access (K = stripe index)";
  const auto colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  FaultInjection fault;
  if (name == "reserve") {
    fault.step = VmmStep::Reserve;
  } else if (name == "create") {
    fault.step = VmmStep::Create;
  } else if (name == "map") {
    fault.step = VmmStep::Map;
  } else if (name == "release") {
    fault.step = VmmStep::Release;
  } else if (name == "access") {
    fault.step = VmmStep::SetAccess;
  } else {
    throw UsageError("invalid value '" + std::string(text) + "' for --inject-failure: " + forms);
  }
  if (colon != std::string_view::npos) {
    fault.index = static_cast<int>(parseInteger(
        text.substr(colon + 1), "--inject-failure " + std::string(name), 0, kMaxStripes - 1));
  }
  if (!isPerStripeStep(fault.step) && fault.index != 0) {
    throw UsageError("--inject-failure " + std::string(text) + ": " + std::string(name) +
                     " happens once per range; only index 0 exists");
  }
  return fault;
}

std::string formatFaultInjection(const FaultInjection& fault) {
  requireInjectable(fault, "formatFaultInjection");
  switch (fault.step) {
    case VmmStep::Reserve:
      return "reserve";
    case VmmStep::SetAccess:
      return "access";
    case VmmStep::Create:
      return "create:" + std::to_string(fault.index);
    case VmmStep::Map:
      return "map:" + std::to_string(fault.index);
    case VmmStep::Release:
      return "release:" + std::to_string(fault.index);
    case VmmStep::Unmap:
    case VmmStep::AddressFree:
      break;  // refused above: parseFaultInjection() has no spelling for them
  }
  return "unknown";
}

void validateFaultInjection(const FaultInjection& fault, int stripeCount) {
  if (isPerStripeStep(fault.step) && (fault.index < 0 || fault.index >= stripeCount)) {
    throw UsageError("--inject-failure " + formatFaultInjection(fault) + " names stripe " +
                     std::to_string(fault.index) + ", but the range has " +
                     plural(static_cast<std::size_t>(stripeCount), "stripe", "stripes") +
                     (stripeCount == 1 ? " (valid: 0)"
                                       : " (valid: 0.." + std::to_string(stripeCount - 1) + ")"));
  }
}

std::vector<FaultInjection> rollbackScenarios(int stripeCount) {
  if (stripeCount < 1) {
    throw std::invalid_argument("rollbackScenarios: " + std::to_string(stripeCount) + " stripes");
  }
  const int middle = stripeCount / 2;
  const int last = stripeCount - 1;
  const std::vector<FaultInjection> wanted = {
      {VmmStep::Reserve, 0},   {VmmStep::Create, 0},       {VmmStep::Create, middle},
      {VmmStep::Create, last}, {VmmStep::Map, 0},          {VmmStep::Map, middle},
      {VmmStep::Map, last},    {VmmStep::Release, middle}, {VmmStep::SetAccess, 0}};
  std::vector<FaultInjection> scenarios;
  for (const FaultInjection& fault : wanted) {
    bool seen = false;
    for (const FaultInjection& kept : scenarios)
      seen = seen || kept == fault;
    if (!seen)
      scenarios.push_back(fault);
  }
  return scenarios;
}

// ----------------------------------------------------------------------------------- building

CUdeviceptr buildStripedRange(VmmDriver& driver, const StripeLayout& layout,
                              const std::vector<int>& mappingDevices, const BuildOptions& options) {
  if (layout.stripes.empty() || layout.roundedBytes == 0) {
    throw std::invalid_argument(
        "buildStripedRange: the layout has no stripes (plan it with "
        "planStripes)");
  }
  if (mappingDevices.empty()) {
    throw std::invalid_argument(
        "buildStripedRange: no mapping device; nothing could access the "
        "range");
  }
  if (options.fault)
    requireInjectable(*options.fault, "buildStripedRange");
  RangeBuilder builder(driver, layout, mappingDevices, options);
  return builder.build();
}

ReleaseResult releaseStripedRange(VmmDriver& driver, CUdeviceptr base,
                                  std::uint64_t roundedBytes) noexcept {
  ReleaseResult result;
  // One unmap over every stripe: each stripe is a whole mapping, so the range covers complete
  // mappings only, which is what cuMemUnmap requires.
  result.unmap = driver.unmap(base, roundedBytes);
  result.addressFree = driver.addressFree(base, roundedBytes);
  return result;
}

// ------------------------------------------------------------------------ what the driver reports

std::vector<std::string> reservationProblems(CUdeviceptr base, std::uint64_t bytes,
                                             const std::vector<StripeReservationView>& views) {
  const auto describe = [](CUdeviceptr start, std::uint64_t size) {
    return formatAddress(start) + " + " + std::to_string(size) + " bytes";
  };
  std::vector<std::string> problems;
  for (const StripeReservationView& view : views) {
    const std::string stripe = "stripe " + std::to_string(view.stripe);
    if (!view.rangeStart || !view.rangeSize) {
      problems.push_back(stripe + ": cuPointerGetAttribute could not report its reservation (" +
                         (view.failure.empty() ? "no answer" : view.failure) + ")");
    } else if (*view.rangeStart != base || *view.rangeSize != bytes) {
      problems.push_back(stripe + " reports the reservation " +
                         describe(*view.rangeStart, *view.rangeSize) +
                         " (RANGE_START_ADDR + RANGE_SIZE), not the range's " +
                         describe(base, bytes) + ": the range is not one reservation");
    }
  }
  return problems;
}

std::string accessFlagsName(unsigned long long flags) {
  switch (flags) {
    case CU_MEM_ACCESS_FLAGS_PROT_READWRITE:
      return "read-write";
    case CU_MEM_ACCESS_FLAGS_PROT_READ:
      return "read";
    case CU_MEM_ACCESS_FLAGS_PROT_NONE:
      return "none";
    default:
      return "flags " + std::to_string(flags);
  }
}

std::vector<std::string> accessProblems(const std::vector<int>& mappingDevices,
                                        const std::vector<DeviceAccessView>& views) {
  std::vector<std::string> problems;
  for (const int device : mappingDevices) {
    const std::string who = "mapping device " + std::to_string(device);
    const auto view = std::find_if(views.begin(), views.end(), [device](const DeviceAccessView& v) {
      return v.device == device;
    });
    if (view == views.end()) {
      problems.push_back(who + " was not asked (cuMemGetAccess) for its access");
    } else if (!view->flags) {
      problems.push_back(who + ": cuMemGetAccess failed (" +
                         (view->failure.empty() ? "no answer" : view->failure) + ")");
    } else if (*view->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
      problems.push_back(who + " has " + accessFlagsName(*view->flags) +
                         " access (cuMemGetAccess), not the read-write access cuMemSetAccess "
                         "granted");
    }
  }
  return problems;
}

// ------------------------------------------------------------------------------------ reporting

std::string formatAddress(std::uint64_t address) {
  std::ostringstream text;
  text << "0x" << std::hex << address;
  return text.str();
}

std::vector<int> sampleIndices(int count, int maxRows) {
  std::vector<int> indices;
  if (count <= 0)
    return indices;
  if (maxRows <= 0 || count <= maxRows) {
    for (int i = 0; i < count; ++i)
      indices.push_back(i);
    return indices;
  }
  // The head gets the odd row: the first stripes are the ones people look for.
  const int head = (maxRows + 1) / 2;
  const int tail = maxRows - head;
  for (int i = 0; i < head; ++i)
    indices.push_back(i);
  for (int i = count - tail; i < count; ++i)
    indices.push_back(i);
  return indices;
}

std::string formatLayoutTable(const StripeLayout& layout, CUdeviceptr base, int maxRows) {
  std::ostringstream text;
  text << "  stripe  device  VA start            VA offset     size\n";
  int previous = -1;
  for (const int index : sampleIndices(static_cast<int>(layout.stripes.size()), maxRows)) {
    if (previous >= 0 && index != previous + 1) {
      text << "     ...  (" << index - previous - 1 << " more stripes)\n";
    }
    const Stripe& stripe = layout.stripes[static_cast<std::size_t>(index)];
    text << "  " << std::setw(6) << index << "  " << std::setw(6) << stripe.device << "  "
         << std::left << std::setw(18) << formatAddress(base + stripe.offset) << "  "
         << std::setw(12) << formatAddress(stripe.offset) << "  " << std::right
         << formatBytes(stripe.bytes) << '\n';
    previous = index;
  }
  const std::uint64_t padding = layout.roundedBytes - layout.requestedBytes;
  text << "  " << exactBytes(layout.requestedBytes) << " requested, "
       << exactBytes(layout.roundedBytes) << " reserved and mapped";
  if (padding > 0)
    text << " (" << exactBytes(padding) << " of rounding at the end, unused)";
  text << '\n';
  return text.str();
}

bool freeMemoryRestored(std::uint64_t beforeBytes, std::uint64_t afterBytes,
                        std::uint64_t tolerance) noexcept {
  return afterBytes >= beforeBytes || beforeBytes - afterBytes < tolerance;
}

double millisecondsPerGiB(double milliseconds, std::uint64_t bytes) noexcept {
  if (bytes == 0)
    return std::numeric_limits<double>::quiet_NaN();
  return milliseconds / (static_cast<double>(bytes) / static_cast<double>(1ull << 30));
}

}  // namespace memsamples::vmm
