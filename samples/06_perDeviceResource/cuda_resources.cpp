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

// The device address of page-locked host memory from cuMemHostAlloc(DEVICEMAP), in the current
// context. (numa_resource.cpp asks the same for its registered ranges, at allocation.)
CUdeviceptr mappedHostDevicePointer(void* hostPointer) {
  CUdeviceptr address = 0;
  check(cuMemHostGetDevicePointer(&address, hostPointer, 0), "cuMemHostGetDevicePointer");
  return address;
}

}  // namespace

// ------------------------------------------------------------------------ resource contexts

ResourceContext describeContext(CUcontext context) {
  if (context == nullptr)
    throw std::invalid_argument("a context-bound memory resource needs a context (got null)");
  ResourceContext described;
  described.context = context;
  check(cuCtxGetDevice_v2(&described.device, context), "cuCtxGetDevice_v2");
  described.ordinal = deviceOrdinal(described.device);
  return described;
}

// ------------------------------------------------------------------------------------ device pool

DeviceMemoryResource::DeviceMemoryResource(CUdevice device)
    : device_(device), ordinal_(deviceOrdinal(device)) {
  if (deviceAttribute(device, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) != 0)
    check(cuDeviceGetDefaultMemPool(&pool_, device), "cuDeviceGetDefaultMemPool");
}

void DeviceMemoryResource::requireOwnDevice(const char* operation) const {
  const int current = currentContextDevice();
  if (current != ordinal_) {
    throw std::logic_error(name() + ": " + operation + " while a context of device " +
                           std::to_string(current) + " is current; make a context of device " +
                           std::to_string(ordinal_) + " current first");
  }
}

void* DeviceMemoryResource::doAllocate(std::size_t bytes, CUstream stream) {
  if (pool_ == nullptr) {
    throw std::runtime_error(name() +
                             ": this device does not support stream-ordered memory pools "
                             "(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 0)");
  }
  requireOwnDevice("allocate");
  CUdeviceptr address = 0;
  check(cuMemAllocFromPoolAsync(&address, bytes, pool_, stream), "cuMemAllocFromPoolAsync");
  return fromDevicePointer(address);
}

void DeviceMemoryResource::doDeallocate(void* ptr, std::size_t, CUstream stream) {
  requireOwnDevice("deallocate");
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

ManagedMemoryResource::ManagedMemoryResource(CUcontext context, std::uint64_t budgetBytes)
    : context_(describeContext(context)),
      budget_(budgetBytes),
      allocations_(onDevice("managed", context_.ordinal)) {}

ManagedMemoryResource::~ManagedMemoryResource() {
  freeRemainingInContext(context_.context, allocations_);
}

void* ManagedMemoryResource::doAllocate(std::size_t bytes, CUstream) {
  ScopedContext scope(context_.context);  // the guard reads this context's device
  managed::ManagedBuffer buffer(bytes, &budget_, CU_MEM_ATTACH_GLOBAL);
  void* ptr = fromDevicePointer(buffer.get());
  allocations_.add(ptr, bytes, std::move(buffer));
  return ptr;
}

void ManagedMemoryResource::doDeallocate(void* ptr, std::size_t bytes, CUstream stream) {
  ScopedContext scope(context_.context);
  synchronizeThenTake(allocations_, ptr, bytes, stream);  // the ManagedBuffer frees it (cuMemFree)
}

ResourceProperties ManagedMemoryResource::doProperties() const noexcept {
  return {true, true, false};
}

std::string ManagedMemoryResource::doName() const {
  return onDevice("managed", context_.ordinal);
}

// ------------------------------------------------------------------------------------ pinned host

PinnedHostResource::PinnedHostResource(CUcontext context)
    : context_(describeContext(context)), allocations_(onDevice("pinned host", context_.ordinal)) {}

PinnedHostResource::~PinnedHostResource() {
  freeRemainingInContext(context_.context, allocations_);
}

void* PinnedHostResource::doAllocate(std::size_t bytes, CUstream) {
  ScopedContext scope(context_.context);  // not PORTABLE: pinned for this context only
  OwnedPinnedHostMemory buffer;
  check(cuMemHostAlloc(buffer.out(), bytes, CU_MEMHOSTALLOC_DEVICEMAP), "cuMemHostAlloc");
  void* ptr = buffer.get();
  allocations_.add(ptr, bytes, std::move(buffer));
  return ptr;
}

void PinnedHostResource::doDeallocate(void* ptr, std::size_t bytes, CUstream stream) {
  ScopedContext scope(context_.context);
  synchronizeThenTake(allocations_, ptr, bytes, stream);  // the buffer frees it (cuMemFreeHost)
}

ResourceProperties PinnedHostResource::doProperties() const noexcept {
  return {true, true, false};
}

CUdeviceptr PinnedHostResource::doKernelAddress(void* ptr) const {
  ScopedContext scope(context_.context);  // the mapping is this context's
  return mappedHostDevicePointer(ptr);
}

std::string PinnedHostResource::doName() const {
  return onDevice("pinned host", context_.ordinal);
}

// -------------------------------------------------------------------------------------------- VMM

StripedVmmResource::StripedVmmResource(CUcontext context, int stripes)
    : context_(describeContext(context)), allocations_(onDevice("vmm", context_.ordinal)) {
  if (deviceAttribute(context_.device, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) ==
      0) {
    throw std::runtime_error(name() + ": the device does not support virtual memory management");
  }
  backing_ = vmm::discoverBackingDevices(context_.ordinal, vmm::queryDeviceTopology());
  stripes_ = std::max(stripes, static_cast<int>(backing_.size()));
  granularity_ = vmm::stripedGranularity(backing_, {context_.ordinal});
}

StripedVmmResource::~StripedVmmResource() {
  freeRemainingInContext(context_.context, allocations_);
}

void* StripedVmmResource::doAllocate(std::size_t bytes, CUstream) {
  const std::vector<int> mapping = {context_.ordinal};
  ScopedContext scope(context_.context);
  // Queries the granularity again rather than use granularity_ (see the class comment).
  vmm::StripedVmmRange range(
      vmm::planStripes(bytes, vmm::stripedGranularity(backing_, mapping), stripes_, backing_),
      mapping);
  void* ptr = fromDevicePointer(range.get());
  allocations_.add(ptr, bytes, std::move(range));
  return ptr;
}

void StripedVmmResource::doDeallocate(void* ptr, std::size_t bytes, CUstream stream) {
  ScopedContext scope(context_.context);
  // release() rather than the destructor: cuMemUnmap and cuMemAddressFree errors are reported.
  synchronizeThenTake(allocations_, ptr, bytes, stream).release();
}

ResourceProperties StripedVmmResource::doProperties() const noexcept {
  return {false, true, false};
}

std::string StripedVmmResource::doName() const {
  return "vmm x" + std::to_string(stripes_) + " stripes (device " +
         std::to_string(context_.ordinal) + ")";
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
