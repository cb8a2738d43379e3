// The checks shared by every memory resource, and ResourceAllocation.
#include "memory_resource.hpp"

#include <stdexcept>
#include <utility>

namespace memsamples::resource {

std::string describeProperties(const ResourceProperties& properties) {
  std::string text;
  if (properties.hostAccessible)
    text = "host";
  if (properties.deviceAccessible)
    text += text.empty() ? "device" : "+device";
  if (text.empty())
    text = "none";
  if (properties.streamOrdered)
    text += ", stream-ordered";
  return text;
}

MemoryResource::~MemoryResource() = default;

void* MemoryResource::allocate(std::size_t bytes, CUstream stream) {
  if (bytes == 0)
    throw std::invalid_argument(name() + ": allocate of 0 bytes (at least 1 byte is required)");
  return doAllocate(bytes, stream);
}

void MemoryResource::deallocate(void* ptr, std::size_t bytes, CUstream stream) {
  if (ptr != nullptr)
    doDeallocate(ptr, bytes, stream);
}

CUdeviceptr MemoryResource::kernelAddress(void* ptr) const {
  if (!properties().deviceAccessible)
    throw std::logic_error(name() +
                           ": its memory is not accessible from a device, so it has no "
                           "kernel address");
  return doKernelAddress(ptr);
}

bool MemoryResource::doIsEqual(const MemoryResource&) const noexcept {
  return false;
}

CUdeviceptr MemoryResource::doKernelAddress(void* ptr) const {
  return toDevicePointer(ptr);
}

ResourceAllocation::ResourceAllocation(MemoryResource& resource, std::size_t bytes, CUstream stream)
    : resource_(&resource), bytes_(bytes), stream_(stream) {
  ptr_ = resource.allocate(bytes, stream);
}

ResourceAllocation::~ResourceAllocation() {
  try {
    release();
  } catch (...) {
    // Already reported by whatever failed first, or unreportable from a destructor.
  }
}

ResourceAllocation::ResourceAllocation(ResourceAllocation&& other) noexcept
    : resource_(std::exchange(other.resource_, nullptr)),
      ptr_(std::exchange(other.ptr_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      stream_(std::exchange(other.stream_, nullptr)) {}

ResourceAllocation& ResourceAllocation::operator=(ResourceAllocation&& other) noexcept {
  if (this != &other) {
    try {
      release();
    } catch (...) {
      // As in the destructor.
    }
    resource_ = std::exchange(other.resource_, nullptr);
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

CUdeviceptr ResourceAllocation::kernelAddress() const {
  if (resource_ == nullptr) {
    throw std::logic_error(
        "ResourceAllocation::kernelAddress: the allocation is empty (default-constructed, moved "
        "from or released), so it has no address");
  }
  return resource_->kernelAddress(ptr_);
}

void ResourceAllocation::release() {
  if (ptr_ == nullptr)
    return;
  MemoryResource* resource = std::exchange(resource_, nullptr);
  void* ptr = std::exchange(ptr_, nullptr);
  const std::size_t bytes = std::exchange(bytes_, 0);
  resource->deallocate(ptr, bytes, std::exchange(stream_, nullptr));
}

}  // namespace memsamples::resource
