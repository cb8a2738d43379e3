// The driver-backed resources and the process-wide registry.
#include "cuda_resources.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

namespace memsamples::resource {

namespace {

std::string onDevice(const char* what, int ordinal) {
  return std::string(what) + " (device " + std::to_string(ordinal) + ")";
}

// The non-stream-ordered resources free at once, so work already queued on the stream must finish
// first (memory_resource.hpp).
void waitForStream(CUstream stream) {
  check(cuStreamSynchronize(stream), "cuStreamSynchronize");
}

}  // namespace

// ------------------------------------------------------------------------------------ device pool

DeviceMemoryResource::DeviceMemoryResource(CUdevice device)
    : device_(device), ordinal_(deviceOrdinal(device)) {
  if (deviceAttribute(device, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) != 0)
    check(cuDeviceGetDefaultMemPool(&pool_, device), "cuDeviceGetDefaultMemPool");
}

void* DeviceMemoryResource::doAllocate(std::size_t bytes, CUstream stream) {
  if (pool_ == nullptr) {
    throw std::runtime_error(name() +
                             ": this device does not support stream-ordered memory pools "
                             "(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 0)");
  }
  CUdeviceptr address = 0;
  check(cuMemAllocFromPoolAsync(&address, bytes, pool_, stream), "cuMemAllocFromPoolAsync");
  return fromDevicePointer(address);
}

void DeviceMemoryResource::doDeallocate(void* ptr, std::size_t, CUstream stream) {
  check(cuMemFreeAsync(toDevicePointer(ptr), stream), "cuMemFreeAsync");
}

bool DeviceMemoryResource::doIsEqual(const MemoryResource& other) const noexcept {
  const auto* device = dynamic_cast<const DeviceMemoryResource*>(&other);
  return device != nullptr && pool_ != nullptr && device->pool_ == pool_;
}

ResourceProperties DeviceMemoryResource::doProperties() const noexcept {
  return {false, true, true};
}

std::string DeviceMemoryResource::doName() const {
  return onDevice("device pool", ordinal_);
}

std::uint64_t poolReleaseThreshold(CUmemoryPool pool) {
  cuuint64_t value = 0;
  check(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &value),
        "cuMemPoolGetAttribute");
  return value;
}

ScopedPoolReleaseThreshold::ScopedPoolReleaseThreshold(CUmemoryPool pool, std::uint64_t threshold)
    : pool_(pool), previous_(poolReleaseThreshold(pool)) {
  cuuint64_t value = threshold;
  check(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &value),
        "cuMemPoolSetAttribute");
}

ScopedPoolReleaseThreshold::~ScopedPoolReleaseThreshold() {
  cuuint64_t value = previous_;
  cuMemPoolSetAttribute(pool_, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &value);
  cuMemPoolTrimTo(pool_, static_cast<std::size_t>(previous_));
}

// ---------------------------------------------------------------------------------------- managed

ManagedMemoryResource::ManagedMemoryResource(CUdevice device, std::uint64_t budgetBytes)
    : device_(device),
      ordinal_(deviceOrdinal(device)),
      budget_(budgetBytes),
      allocations_(onDevice("managed", ordinal_)) {}

void* ManagedMemoryResource::doAllocate(std::size_t bytes, CUstream) {
  managed::ManagedBuffer buffer(bytes, &budget_, CU_MEM_ATTACH_GLOBAL);
  void* ptr = fromDevicePointer(buffer.get());
  allocations_.add(ptr, bytes, std::move(buffer));
  return ptr;
}

void ManagedMemoryResource::doDeallocate(void* ptr, std::size_t bytes, CUstream stream) {
  waitForStream(stream);
  allocations_.take(ptr, bytes);  // the returned ManagedBuffer frees the memory (cuMemFree)
}

ResourceProperties ManagedMemoryResource::doProperties() const noexcept {
  return {true, true, false};
}

std::string ManagedMemoryResource::doName() const {
  return onDevice("managed", ordinal_);
}

// ------------------------------------------------------------------------------------ pinned host

PinnedHostResource::PinnedHostResource(CUdevice device)
    : device_(device),
      ordinal_(deviceOrdinal(device)),
      allocations_(onDevice("pinned host", ordinal_)) {}

void* PinnedHostResource::doAllocate(std::size_t bytes, CUstream) {
  PinnedHostBuffer buffer(bytes, CU_MEMHOSTALLOC_DEVICEMAP);
  void* ptr = buffer.get();
  allocations_.add(ptr, bytes, std::move(buffer));
  return ptr;
}

void PinnedHostResource::doDeallocate(void* ptr, std::size_t bytes, CUstream stream) {
  waitForStream(stream);
  allocations_.take(ptr, bytes);  // the returned PinnedHostBuffer frees it (cuMemFreeHost)
}

ResourceProperties PinnedHostResource::doProperties() const noexcept {
  return {true, true, false};
}

CUdeviceptr PinnedHostResource::doKernelAddress(void* ptr) const {
  CUdeviceptr address = 0;
  check(cuMemHostGetDevicePointer(&address, ptr, 0), "cuMemHostGetDevicePointer");
  return address;
}

std::string PinnedHostResource::doName() const {
  return onDevice("pinned host", ordinal_);
}

// -------------------------------------------------------------------------------------------- VMM

StripedVmmResource::StripedVmmResource(CUdevice device, int stripes)
    : device_(device), ordinal_(deviceOrdinal(device)), allocations_(onDevice("vmm", ordinal_)) {
  if (deviceAttribute(device, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) == 0) {
    throw std::runtime_error(name() + ": the device does not support virtual memory management");
  }
  backing_ = vmm::discoverBackingDevices(ordinal_, vmm::queryDeviceTopology());
  stripes_ = std::max(stripes, static_cast<int>(backing_.size()));
  granularity_ = vmm::stripedGranularity(backing_, {ordinal_});
}

void* StripedVmmResource::doAllocate(std::size_t bytes, CUstream) {
  vmm::StripedRangeRequest request;
  request.bytes = bytes;
  request.backingDevices = backing_;
  request.mappingDevices = {ordinal_};
  request.stripes = stripes_;
  vmm::StripedVmmRange range(request);
  void* ptr = fromDevicePointer(range.get());
  allocations_.add(ptr, bytes, std::move(range));
  return ptr;
}

void StripedVmmResource::doDeallocate(void* ptr, std::size_t bytes, CUstream stream) {
  waitForStream(stream);
  allocations_.take(ptr, bytes).release();  // cuMemUnmap + cuMemAddressFree, errors reported
}

ResourceProperties StripedVmmResource::doProperties() const noexcept {
  return {false, true, false};
}

std::string StripedVmmResource::doName() const {
  return "vmm x" + std::to_string(stripes_) + " stripes (device " + std::to_string(ordinal_) + ")";
}

// ------------------------------------------------------------------------ the process registry

int currentContextDevice() {
  CUdevice device = 0;
  check(cuCtxGetDevice(&device), "cuCtxGetDevice");
  return deviceOrdinal(device);
}

PerDeviceResourceRegistry& processResourceRegistry() {
  // Made on first use (after cuInit); if cuDeviceGetCount throws, the next call tries again.
  static PerDeviceResourceRegistry registry(
      [] {
        int count = 0;
        check(cuDeviceGetCount(&count), "cuDeviceGetCount");
        return count;
      }(),
      [](int ordinal) -> std::unique_ptr<MemoryResource> {
        CUdevice device = 0;
        check(cuDeviceGet(&device, ordinal), "cuDeviceGet");
        return std::make_unique<DeviceMemoryResource>(device);
      },
      [] { return currentContextDevice(); });
  return registry;
}

MemoryResource* getPerDeviceResource(int ordinal) {
  return processResourceRegistry().get(ordinal);
}
MemoryResource* setPerDeviceResource(int ordinal, MemoryResource* resource) {
  return processResourceRegistry().set(ordinal, resource);
}
MemoryResource* resetPerDeviceResource(int ordinal) {
  return processResourceRegistry().reset(ordinal);
}
MemoryResource* getCurrentDeviceResource() {
  return processResourceRegistry().getCurrent();
}
MemoryResource* setCurrentDeviceResource(MemoryResource* resource) {
  return processResourceRegistry().setCurrent(resource);
}
MemoryResource* resetCurrentDeviceResource() {
  return processResourceRegistry().resetCurrent();
}

}  // namespace memsamples::resource
