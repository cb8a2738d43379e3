// The driver half of the striped VMM allocator: the real VmmDriver, StripedVmmRange and the
// device queries. The algorithm itself (and its rollback) is in striped_vmm_logic.cpp.
#include "striped_vmm.hpp"

#include <stdexcept>
#include <utility>

namespace memsamples::vmm {

// ------------------------------------------------------------------------------ CudaVmmDriver

CUmemAllocationProp pinnedDeviceProperties(int device) {
  CUmemAllocationProp properties{};  // zeroed: no shareable handle type, no special flags
  properties.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  properties.location.id = device;  // a device ordinal
  return properties;
}

CUresult CudaVmmDriver::reserve(CUdeviceptr* base, std::uint64_t bytes, std::uint64_t alignment,
                                CUdeviceptr hint) {
  return cuMemAddressReserve(base, bytes, alignment, hint, 0);
}

CUresult CudaVmmDriver::create(CUmemGenericAllocationHandle* handle, std::uint64_t bytes,
                               int device) {
  const CUmemAllocationProp properties = pinnedDeviceProperties(device);
  return cuMemCreate(handle, bytes, &properties, 0);
}

CUresult CudaVmmDriver::map(CUdeviceptr address, std::uint64_t bytes,
                            CUmemGenericAllocationHandle handle) {
  return cuMemMap(address, bytes, 0, handle, 0);
}

CUresult CudaVmmDriver::release(CUmemGenericAllocationHandle handle) {
  return cuMemRelease(handle);
}

CUresult CudaVmmDriver::setAccess(CUdeviceptr base, std::uint64_t bytes,
                                  const std::vector<int>& devices) {
  std::vector<CUmemAccessDesc> access(devices.size());
  for (std::size_t i = 0; i < devices.size(); ++i) {
    access[i].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access[i].location.id = devices[i];
    access[i].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  }
  return cuMemSetAccess(base, bytes, access.data(), access.size());
}

CUresult CudaVmmDriver::unmap(CUdeviceptr address, std::uint64_t bytes) {
  return cuMemUnmap(address, bytes);
}

CUresult CudaVmmDriver::addressFree(CUdeviceptr base, std::uint64_t bytes) {
  return cuMemAddressFree(base, bytes);
}

std::string CudaVmmDriver::describe(CUresult result) {
  return describeResult(result);
}

// ---------------------------------------------------------------------------- StripedVmmRange

StripedVmmRange::StripedVmmRange(const StripedRangeRequest& request) {
  if (request.backingDevices.empty()) {
    throw std::invalid_argument("StripedVmmRange: no backing device");
  }
  if (request.mappingDevices.empty()) {
    throw std::invalid_argument("StripedVmmRange: no mapping device");
  }
  const int stripes =
      request.stripes > 0 ? request.stripes : static_cast<int>(request.backingDevices.size());
  const std::uint64_t granularity =
      stripedGranularity(request.backingDevices, request.mappingDevices);
  StripeLayout layout = planStripes(request.bytes, granularity, stripes, request.backingDevices);

  CudaVmmDriver driver;
  BuildOptions options;
  options.addressHint = request.addressHint;
  options.fault = request.fault;
  options.times = request.times;
  // Nothing is assigned to members before the build succeeded: a throwing constructor runs no
  // destructor, and the builder has already undone its own work.
  base_ = buildStripedRange(driver, layout, request.mappingDevices, options);
  layout_ = std::move(layout);
  mapping_ = request.mappingDevices;
}

StripedVmmRange::~StripedVmmRange() {
  if (base_ != 0) {
    CudaVmmDriver driver;
    (void)releaseStripedRange(driver, base_, layout_.roundedBytes);
  }
}

StripedVmmRange::StripedVmmRange(StripedVmmRange&& other) noexcept
    : base_(std::exchange(other.base_, 0)),
      layout_(std::exchange(other.layout_, StripeLayout{})),
      mapping_(std::exchange(other.mapping_, {})) {}

StripedVmmRange& StripedVmmRange::operator=(StripedVmmRange&& other) noexcept {
  if (this != &other) {
    // This range is freed now, not whenever @p other happens to be destroyed.
    if (base_ != 0) {
      CudaVmmDriver driver;
      (void)releaseStripedRange(driver, std::exchange(base_, 0), layout_.roundedBytes);
    }
    base_ = std::exchange(other.base_, 0);
    layout_ = std::exchange(other.layout_, StripeLayout{});
    mapping_ = std::exchange(other.mapping_, {});
  }
  return *this;
}

void StripedVmmRange::release() {
  if (base_ == 0)
    return;
  CudaVmmDriver driver;
  const ReleaseResult result =
      releaseStripedRange(driver, std::exchange(base_, 0), layout_.roundedBytes);
  layout_ = StripeLayout{};
  mapping_.clear();
  check(result.unmap, "cuMemUnmap");
  check(result.addressFree, "cuMemAddressFree");
}

// ------------------------------------------------------------------------------------ queries

std::uint64_t minimumGranularity(int device) {
  const CUmemAllocationProp properties = pinnedDeviceProperties(device);
  std::size_t granularity = 0;
  check(cuMemGetAllocationGranularity(&granularity, &properties, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        "cuMemGetAllocationGranularity");
  return granularity;
}

std::uint64_t stripedGranularity(const std::vector<int>& backingDevices,
                                 const std::vector<int>& mappingDevices) {
  std::vector<std::uint64_t> granularities;
  for (const int device : backingDevices)
    granularities.push_back(minimumGranularity(device));
  for (const int device : mappingDevices)
    granularities.push_back(minimumGranularity(device));
  return combinedGranularity(granularities);
}

DeviceTopology queryDeviceTopology() {
  int count = 0;
  check(cuDeviceGetCount(&count), "cuDeviceGetCount");
  std::vector<CUdevice> devices(static_cast<std::size_t>(count));
  DeviceTopology topology;
  for (int i = 0; i < count; ++i) {
    check(cuDeviceGet(&devices[static_cast<std::size_t>(i)], i), "cuDeviceGet");
    topology.vmmSupported.push_back(
        deviceAttribute(devices[static_cast<std::size_t>(i)],
                        CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) != 0);
  }
  topology.canAccessPeer.assign(static_cast<std::size_t>(count),
                                std::vector<bool>(static_cast<std::size_t>(count), false));
  for (std::size_t a = 0; a < devices.size(); ++a) {
    for (std::size_t b = 0; b < devices.size(); ++b) {
      // A device always reaches its own memory; the peer query is about two different devices.
      int canAccess = a == b ? 1 : 0;
      if (a != b) {
        check(cuDeviceCanAccessPeer(&canAccess, devices[a], devices[b]), "cuDeviceCanAccessPeer");
      }
      topology.canAccessPeer[a][b] = canAccess != 0;
    }
  }
  return topology;
}

std::vector<DeviceAccessView> readDeviceAccess(const StripedVmmRange& range,
                                               const std::vector<int>& devices) {
  std::vector<DeviceAccessView> views;
  for (const int device : devices) {
    CUmemLocation location{};
    location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    location.id = device;
    unsigned long long flags = 0;
    const CUresult queried = cuMemGetAccess(&flags, &location, range.get());
    DeviceAccessView view;
    view.device = device;
    if (queried == CUDA_SUCCESS) {
      view.flags = flags;
    } else {
      view.failure = describeResult(queried);
    }
    views.push_back(view);
  }
  return views;
}

}  // namespace memsamples::vmm
