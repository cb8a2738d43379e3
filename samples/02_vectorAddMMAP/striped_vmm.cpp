// The striped VMM range of 02_vectorAddMMAP: planning, the driver sequence, and its owner.
#include "striped_vmm.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "memsamples.hpp"

namespace memsamples::vmm {
namespace {

// One entry per stripe is kept; this bounds the layout far above any useful count
// (64 Ki stripes of 2 MiB is 128 GiB) and below a size that could exhaust host memory.
constexpr int kMaxStripes = 1 << 16;

std::string plural(std::size_t count, const char* one, const char* many) {
  return std::to_string(count) + " " + (count == 1 ? one : many);
}

// Undoes a half-built range, newest first, and says what it did. Every call is made even when an
// earlier one fails, so a failed unmap does not keep the handle or the addresses alive.
std::string rollBack(CUdeviceptr base, const StripeLayout& layout, std::size_t mappedStripes,
                     const CUmemGenericAllocationHandle* unreleasedHandle,
                     std::vector<CUresult>& unmapResults) {
  // Stripe by stripe, exactly as each was mapped, so that a failure names its stripe.
  for (std::size_t i = mappedStripes; i-- > 0;) {
    unmapResults[i] = cuMemUnmap(base + layout.stripes[i].offset, layout.stripes[i].bytes);
  }
  // A handle whose cuMemRelease failed during the build is tried once more: until a release
  // succeeds, it keeps its memory alive even after the unmap.
  const CUresult released = unreleasedHandle ? cuMemRelease(*unreleasedHandle) : CUDA_SUCCESS;
  const CUresult freed = cuMemAddressFree(base, layout.roundedBytes);

  std::vector<std::string> done;
  std::string problems;
  const std::size_t unmapped = static_cast<std::size_t>(
      std::count(unmapResults.begin(), unmapResults.begin() + mappedStripes, CUDA_SUCCESS));
  if (unmapped > 0)
    done.push_back(plural(unmapped, "stripe", "stripes") + " unmapped");
  for (std::size_t i = 0; i < mappedStripes; ++i) {
    if (unmapResults[i] != CUDA_SUCCESS)
      problems +=
          "; cuMemUnmap of stripe " + std::to_string(i) + ": " + describeResult(unmapResults[i]);
  }
  if (unreleasedHandle && released == CUDA_SUCCESS)
    done.push_back("1 handle released");
  if (released != CUDA_SUCCESS)
    problems += "; cuMemRelease: " + describeResult(released);
  if (freed == CUDA_SUCCESS)
    done.push_back("address range freed");
  else
    problems += "; cuMemAddressFree: " + describeResult(freed);
  std::string summary = "rolled back: ";
  for (std::size_t i = 0; i < done.size(); ++i)
    summary += (i > 0 ? ", " : "") + done[i];
  if (done.empty())
    summary += "nothing";
  return summary + (problems.empty() ? "" : "; rollback problems" + problems);
}

// cuMemGetAllocationGranularity of pinned memory, as @p option asks, on every backing and mapping
// device: a mapping device counts too, because its mappings must be aligned for it.
std::uint64_t largestGranularity(const std::vector<int>& backingDevices,
                                 const std::vector<int>& mappingDevices,
                                 CUmemAllocationGranularity_flags option) {
  std::vector<int> devices = backingDevices;
  devices.insert(devices.end(), mappingDevices.begin(), mappingDevices.end());
  std::vector<std::uint64_t> granularities;
  for (const int device : devices) {
    CUmemAllocationProp properties{};
    properties.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    properties.location.id = device;
    std::size_t granularity = 0;
    check(cuMemGetAllocationGranularity(&granularity, &properties, option),
          "cuMemGetAllocationGranularity");
    granularities.push_back(granularity);
  }
  return combinedGranularity(granularities);
}

}  // namespace

// [mapStripedRange]
CUdeviceptr mapStripedRange(const StripeLayout& layout, const std::vector<int>& mappingDevices) {
  if (layout.stripes.empty() || mappingDevices.empty())
    throw std::invalid_argument("mapStripedRange: the layout has no stripe or no device maps it");
  std::vector<CUresult> unmapResults(layout.stripes.size());  // for a rollback, made up front

  // Addresses only: nothing backs them yet. Aligned to the granularity, so that every stripe's
  // offset is a valid cuMemMap address.
  CUdeviceptr base = 0;
  check(cuMemAddressReserve(&base, layout.roundedBytes, layout.granularity, 0, 0),
        "cuMemAddressReserve");

  std::size_t mapped = 0;                        // stripes [0, mapped) are mapped
  std::size_t building = layout.stripes.size();  // the stripe being built, if any
  CUmemGenericAllocationHandle handle{};
  bool handleHeld = false;  // created, not yet released
  try {
    for (building = 0; building < layout.stripes.size(); ++building) {
      const Stripe& stripe = layout.stripes[building];
      // Physical memory on the stripe's device. It has no address until it is mapped.
      CUmemAllocationProp properties{};
      properties.type = CU_MEM_ALLOCATION_TYPE_PINNED;
      properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      properties.location.id = stripe.device;
      check(cuMemCreate(&handle, stripe.bytes, &properties, 0), "cuMemCreate");
      handleHeld = true;
      check(cuMemMap(base + stripe.offset, stripe.bytes, 0, handle, 0), "cuMemMap");
      ++mapped;
      // The mapping holds its own reference, so the handle can go now: unmapping this stripe
      // will then free its memory.
      check(cuMemRelease(handle), "cuMemRelease");
      handleHeld = false;
    }
    // A mapping is not accessible, not even from the device that holds it, until access is set.
    // VMM access belongs to the mapping, so a peer needs this grant, not cuCtxEnablePeerAccess.
    std::vector<CUmemAccessDesc> access(mappingDevices.size());
    for (std::size_t i = 0; i < access.size(); ++i) {
      access[i].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      access[i].location.id = mappingDevices[i];
      access[i].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    }
    check(cuMemSetAccess(base, layout.roundedBytes, access.data(), access.size()),
          "cuMemSetAccess");
  } catch (const CudaError& error) {
    // Undo first: building the message below allocates, and may throw.
    const std::string undone =
        rollBack(base, layout, mapped, handleHeld ? &handle : nullptr, unmapResults);
    const std::string stripe = building < layout.stripes.size()
                                   ? " (stripe " + std::to_string(building) + " of " +
                                         std::to_string(layout.stripes.size()) + ", on device " +
                                         std::to_string(layout.stripes[building].device) + ")"
                                   : "";
    throw CudaError(error.result(), error.what() + stripe + "; " + undone);
  } catch (...) {  // std::bad_alloc: undo all the same
    (void)rollBack(base, layout, mapped, handleHeld ? &handle : nullptr, unmapResults);
    throw;
  }
  return base;
}
// [mapStripedRange]

void unmapStripedRange(CUdeviceptr base, std::uint64_t roundedBytes) {
  // Each stripe is a whole mapping, so one unmap of the whole range is allowed.
  const CUresult unmapped = cuMemUnmap(base, roundedBytes);
  const CUresult freed = cuMemAddressFree(base, roundedBytes);
  check(unmapped, "cuMemUnmap");
  check(freed, "cuMemAddressFree");
}

// ------------------------------------------------------------------------------- the owner

StripedVmmRange::StripedVmmRange(StripeLayout layout, std::vector<int> mappingDevices)
    : base_(mapStripedRange(layout, mappingDevices)),
      layout_(std::move(layout)),
      mapping_(std::move(mappingDevices)) {}

StripedVmmRange::~StripedVmmRange() {
  if (base_ == 0)
    return;
  const std::uint64_t bytes = layout_.roundedBytes;
  try {
    unmapStripedRange(release(), bytes);
  } catch (...) {
    // A destructor also runs while an earlier error unwinds the stack; a second error from the
    // teardown would only hide that first one.
  }
}

StripedVmmRange::StripedVmmRange(StripedVmmRange&& other) noexcept
    : base_(std::exchange(other.base_, 0)),
      layout_(std::exchange(other.layout_, StripeLayout{})),
      mapping_(std::exchange(other.mapping_, {})) {}

StripedVmmRange& StripedVmmRange::operator=(StripedVmmRange&& other) noexcept {
  if (this != &other) {
    StripedVmmRange old(std::move(*this));  // freed at the end of this scope
    base_ = std::exchange(other.base_, 0);
    layout_ = std::exchange(other.layout_, StripeLayout{});
    mapping_ = std::exchange(other.mapping_, {});
  }
  return *this;
}

CUdeviceptr StripedVmmRange::release() noexcept {
  layout_ = StripeLayout{};
  mapping_.clear();
  return std::exchange(base_, 0);
}

// ------------------------------------------------------------------------------- planning

StripeLayout planStripes(std::uint64_t bytes, std::uint64_t granularity, int stripeCount,
                         const std::vector<int>& backingDevices) {
  if (bytes == 0)
    throw std::invalid_argument(
        "planStripes: a size of 0 bytes was requested; a range needs at "
        "least 1 byte");
  if (granularity == 0)
    throw std::invalid_argument("planStripes: the granularity is 0");
  if (stripeCount < 1 || stripeCount > kMaxStripes) {
    throw std::invalid_argument("planStripes: " + std::to_string(stripeCount) +
                                " stripes requested; the count must be in [1, " +
                                std::to_string(kMaxStripes) + "]");
  }
  if (backingDevices.empty())
    throw std::invalid_argument("planStripes: no backing device to place the stripes on");
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
  if (std::find(perDevice.begin(), perDevice.end(), 0) != perDevice.end())
    throw std::invalid_argument("combinedGranularity: a device reported a granularity of 0");
  return *std::max_element(perDevice.begin(), perDevice.end());
}

bool recommendedGranularityFits(const Granularities& granularities, std::uint64_t bytes,
                                int stripeCount) {
  if (granularities.minimum == 0)
    throw std::invalid_argument("recommendedGranularityFits: the minimum granularity is 0");
  if (stripeCount < 1) {
    throw std::invalid_argument("recommendedGranularityFits: " + std::to_string(stripeCount) +
                                " stripes; at least 1 is needed");
  }
  const auto count = static_cast<std::uint64_t>(stripeCount);
  const std::uint64_t perStripe = bytes / count + (bytes % count != 0 ? 1 : 0);
  return memsamples::allocationGranularity(perStripe, granularities.minimum,
                                           granularities.recommended) == granularities.recommended;
}

StripeLayout planStripes(std::uint64_t bytes, const Granularities& granularities, int stripeCount,
                         const std::vector<int>& backingDevices) {
  const bool recommended = recommendedGranularityFits(granularities, bytes, stripeCount);
  return planStripes(bytes, recommended ? granularities.recommended : granularities.minimum,
                     stripeCount, backingDevices);
}

std::uint64_t stripedGranularity(const std::vector<int>& backingDevices,
                                 const std::vector<int>& mappingDevices) {
  return largestGranularity(backingDevices, mappingDevices, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
}

Granularities stripedGranularities(const std::vector<int>& backingDevices,
                                   const std::vector<int>& mappingDevices) {
  return {largestGranularity(backingDevices, mappingDevices, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
          largestGranularity(backingDevices, mappingDevices, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)};
}

std::string describeAccess(unsigned long long flags) {
  switch (flags) {
    case CU_MEM_ACCESS_FLAGS_PROT_READWRITE:
      return "rw";
    case CU_MEM_ACCESS_FLAGS_PROT_READ:
      return "r";
    case CU_MEM_ACCESS_FLAGS_PROT_NONE:
      return "none";
    default:
      return "flags " + std::to_string(flags);
  }
}

DeviceTopology queryDeviceTopology() {
  int count = 0;
  check(cuDeviceGetCount(&count), "cuDeviceGetCount");
  const auto n = static_cast<std::size_t>(count);
  std::vector<CUdevice> devices(n);
  DeviceTopology topology;
  topology.canAccessPeer.assign(n, std::vector<bool>(n, false));
  for (std::size_t i = 0; i < n; ++i) {
    check(cuDeviceGet(&devices[i], static_cast<int>(i)), "cuDeviceGet");
    int vmm = 0;
    check(cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                               devices[i]),
          "cuDeviceGetAttribute");
    topology.vmmSupported.push_back(vmm != 0);
  }
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < n; ++b) {
      // A device always reaches its own memory; the peer query is about two different devices.
      int canAccess = a == b ? 1 : 0;
      if (a != b)
        check(cuDeviceCanAccessPeer(&canAccess, devices[a], devices[b]), "cuDeviceCanAccessPeer");
      topology.canAccessPeer[a][b] = canAccess != 0;
    }
  }
  return topology;
}

}  // namespace memsamples::vmm
