/**
 * @file memory_resource.hpp
 * @brief The memory-resource interface of 06_perDeviceResource: allocate / deallocate on a stream,
 *        equality, and where the memory can be used (host, device, stream order).
 *
 * A memory resource is an object that hands out memory of one kind (device memory from a pool,
 * managed memory, pinned host memory, ...) through one interface, so that code that needs
 * memory can be written once and given any kind. The interface follows the shape of RMM's
 * `device_memory_resource` and of CCCL's `cuda::mr` concepts (see the README for why it is not
 * built on `cuda::mr`):
 *
 * - **allocate(bytes, stream)** returns memory of at least @p bytes. A *stream-ordered* resource
 *   (properties().streamOrdered) returns at once and the memory becomes usable in the order of
 *   @p stream: work queued later on the same stream may use it, other streams must synchronize
 *   first. Every other resource returns memory that is usable immediately and ignores the stream.
 * - **deallocate(ptr, bytes, stream)** gives it back; @p bytes must be what was allocated. A
 *   stream-ordered resource frees in the order of @p stream (work already queued on it may still
 *   use the memory). Every other resource first synchronizes @p stream and then frees at once, so
 *   that memory still used by work queued on @p stream is never freed under it. Work on *other*
 *   streams that uses the memory must be finished by the caller, for every kind of resource.
 * - **isEqual(other)**: memory allocated by one may be deallocated by the other.
 * - **properties()**: host-accessible, device-accessible, stream-ordered.
 * - **kernelAddress(ptr)**: the address a kernel on the resource's device uses for @p ptr, an
 *   address that allocate() returned. It is @p ptr itself for device, managed and VMM memory;
 *   mapped host memory may have a distinct device address (cuMemHostGetDevicePointer), which the
 *   host-memory resources return.
 * - **ownerDevice()**: the device the resource belongs to (its memory was created for that
 *   device's context), or none for a resource that is not tied to a device (a CPU-only test
 *   resource). The per-device registry refuses to register a resource for another device.
 *
 * Resources are used through a pointer or reference to this base class, never copied. This header
 * is CUDA-free: cuda.h is included for the CUstream and CUdeviceptr types only.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

/// The per-device memory resources of 06_perDeviceResource.
namespace memsamples::resource {

/// What a resource's memory can be used for.
struct ResourceProperties {
  bool hostAccessible = false;  ///< The CPU may read and write the memory at the returned address.
  bool deviceAccessible = false;  ///< Kernels on the owner device may use it (at kernelAddress()).
  bool streamOrdered = false;     ///< allocate/deallocate take effect in the order of the stream.
};

/// "host+device, stream-ordered", "device", "host", "none": the properties for people.
std::string describeProperties(const ResourceProperties& properties);

/**
 * The interface every memory resource implements.
 *
 * The public functions check their arguments and call the private virtual functions that a
 * resource implements (the non-virtual-interface idiom, as RMM does), so that every resource
 * gets the same argument checks and messages. Implementations must be thread-safe: one resource
 * is used from many host threads at once.
 */
class MemoryResource {
 public:
  MemoryResource() = default;
  virtual ~MemoryResource();
  MemoryResource(const MemoryResource&) = delete;
  MemoryResource& operator=(const MemoryResource&) = delete;

  /**
   * Allocates at least @p bytes (see the file comment for the stream semantics).
   * @throws std::invalid_argument naming the resource when @p bytes is 0; whatever the
   *         implementation throws when the memory cannot be had (CudaError, ...).
   */
  void* allocate(std::size_t bytes, CUstream stream);

  /**
   * Gives back memory from allocate() of @p bytes (see the file comment for the stream
   * semantics). A null @p ptr does nothing.
   * @throws std::invalid_argument from resources that track their allocations when @p ptr is not
   *         one of theirs or @p bytes is not its size; CudaError when a driver call fails.
   */
  void deallocate(void* ptr, std::size_t bytes, CUstream stream);

  /// True when memory from this resource may be deallocated by @p other and vice versa.
  bool isEqual(const MemoryResource& other) const noexcept {
    return this == &other || doIsEqual(other);
  }

  /// What the memory can be used for.
  ResourceProperties properties() const noexcept { return doProperties(); }

  /// The device address a kernel on the owner device uses for @p ptr (see the file comment).
  /// @throws std::logic_error when the memory is not device-accessible; CudaError.
  CUdeviceptr kernelAddress(void* ptr) const;

  /// The device this resource belongs to, or nullopt when it is not tied to a device.
  std::optional<int> ownerDevice() const noexcept { return doOwnerDevice(); }

  /// A short name for tables and messages, e.g. "pinned host (device 0)".
  std::string name() const { return doName(); }

 private:
  /// Allocates; @p bytes is at least 1.
  virtual void* doAllocate(std::size_t bytes, CUstream stream) = 0;
  /// Deallocates; @p ptr is not null.
  virtual void doDeallocate(void* ptr, std::size_t bytes, CUstream stream) = 0;
  /// Equality with another object (identity has been checked already). Default: false.
  virtual bool doIsEqual(const MemoryResource& other) const noexcept;
  /// The properties.
  virtual ResourceProperties doProperties() const noexcept = 0;
  /// The kernel address of @p ptr; called only for device-accessible resources. Default: @p ptr.
  virtual CUdeviceptr doKernelAddress(void* ptr) const;
  /// The owner device.
  virtual std::optional<int> doOwnerDevice() const noexcept = 0;
  /// The name.
  virtual std::string doName() const = 0;
};

/// isEqual() as an operator.
inline bool operator==(const MemoryResource& a, const MemoryResource& b) noexcept {
  return a.isEqual(b);
}
/// !isEqual() as an operator.
inline bool operator!=(const MemoryResource& a, const MemoryResource& b) noexcept {
  return !a.isEqual(b);
}

/// A pointer as the integer a driver call takes (device, managed and VMM memory).
inline CUdeviceptr toDevicePointer(void* ptr) noexcept {
  return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(ptr));
}
/// A driver address as a pointer (what allocate() returns for device memory).
inline void* fromDevicePointer(CUdeviceptr address) noexcept {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(address));
}

/**
 * One allocation from a resource, given back when the owner is destroyed: the RAII form of
 * allocate() / deallocate(). Movable, not copyable.
 *
 * The resource must outlive the allocation. The destructor ignores errors of deallocate() on
 * purpose (it also runs during unwinding); call release() to see them.
 */
class ResourceAllocation {
 public:
  /// Nothing allocated.
  ResourceAllocation() = default;
  /// Allocates @p bytes from @p resource on @p stream (which is also used to deallocate).
  ResourceAllocation(MemoryResource& resource, std::size_t bytes, CUstream stream);
  ~ResourceAllocation();
  /// Takes over @p other's memory; @p other is left empty.
  ResourceAllocation(ResourceAllocation&& other) noexcept;
  /// Gives back the current memory (errors ignored) and takes over @p other's.
  ResourceAllocation& operator=(ResourceAllocation&& other) noexcept;
  ResourceAllocation(const ResourceAllocation&) = delete;
  ResourceAllocation& operator=(const ResourceAllocation&) = delete;

  /// The memory (null when empty).
  void* get() const noexcept { return ptr_; }
  /// The memory as an array of T (host-accessible resources only).
  template <typename T>
  T* as() const noexcept {
    return static_cast<T*>(ptr_);
  }
  /// The bytes that were asked for.
  std::size_t size() const noexcept { return bytes_; }
  /// The resource it came from (null when empty).
  MemoryResource* resource() const noexcept { return resource_; }
  /// The stream it was allocated on and will be deallocated on.
  CUstream stream() const noexcept { return stream_; }
  /// The address a kernel uses (MemoryResource::kernelAddress()).
  /// @throws std::logic_error when the object is empty (default-constructed, moved from or
  ///         released); what MemoryResource::kernelAddress() throws.
  CUdeviceptr kernelAddress() const;

  /// Deallocates now; the object is empty afterwards, even when this throws.
  void release();

 private:
  MemoryResource* resource_ = nullptr;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  CUstream stream_ = nullptr;
};

}  // namespace memsamples::resource
