/**
 * @file memory_resource.hpp
 * @brief The memory-resource interface: allocate / deallocate on a stream, equality, and where
 *        the memory can be used. One interface for every kind of memory, so that code that needs
 *        memory is written once and given any kind.
 *
 * The shape of RMM's `device_memory_resource` and of CCCL's `cuda::mr` concepts (README: why it
 * is not built on `cuda::mr`). The stream contract, which every kind keeps:
 * - A **stream-ordered** resource (properties().streamOrdered) returns from allocate() at once;
 *   the memory is usable by work queued later on that stream (other streams synchronize first),
 *   and deallocate() frees in the order of the stream.
 * - **Every other** resource allocates at once and ignores the stream; its deallocate()
 *   synchronizes the stream first, so memory that queued work still uses is never freed under it.
 * - Work on *other* streams that uses the memory must be finished by the caller, for every kind.
 *
 * CUDA-free: cuda.h is included for the CUstream and CUdeviceptr types only.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

/// The per-device memory resources of 06_perDeviceResource.
namespace memsamples::resource {

/// What a resource's memory can be used for.
struct ResourceProperties {
  bool hostAccessible = false;    ///< The CPU may use the memory at the address allocate() gave.
  bool deviceAccessible = false;  ///< Kernels on the owner device may use it, at kernelAddress().
  bool streamOrdered = false;     ///< allocate / deallocate take effect in the stream's order.
};

/// "host+device, stream-ordered", "device", "host", "none": the properties for people.
inline std::string describeProperties(const ResourceProperties& properties) {
  std::string text = properties.hostAccessible ? "host" : "";
  if (properties.deviceAccessible)
    text += text.empty() ? "device" : "+device";
  return (text.empty() ? "none" : text) + (properties.streamOrdered ? ", stream-ordered" : "");
}

/// "pinned host (device 0)": a resource's name, from what it is and its device's ordinal.
inline std::string onDevice(const std::string& what, int ordinal) {
  return what + " (device " + std::to_string(ordinal) + ")";
}

/// A pointer as the integer a driver call takes (device, managed and VMM memory).
inline CUdeviceptr toDevicePointer(void* ptr) noexcept {
  return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(ptr));
}
/// A driver address as the pointer allocate() returns.
inline void* fromDevicePointer(CUdeviceptr address) noexcept {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(address));
}

/**
 * The interface every memory resource implements; used through a pointer or reference, never
 * copied. The public functions check their arguments and call the private virtual ones (RMM's
 * non-virtual-interface idiom), so every kind gets the same checks and messages. A resource is
 * used by many host threads at once, so every implementation is thread-safe.
 */
class MemoryResource {
 public:
  MemoryResource() = default;
  virtual ~MemoryResource() = default;
  MemoryResource(const MemoryResource&) = delete;
  MemoryResource& operator=(const MemoryResource&) = delete;

  /// At least @p bytes (the stream contract: see the file comment).
  /// @throws std::invalid_argument naming the resource for 0 bytes; what the kind throws.
  void* allocate(std::size_t bytes, CUstream stream) {
    if (bytes == 0)
      throw std::invalid_argument(name() + ": allocate of 0 bytes (at least 1 byte is required)");
    return doAllocate(bytes, stream);
  }
  /// Gives back @p ptr from allocate() of exactly @p bytes; null does nothing. Kinds that track
  /// their allocations refuse a foreign pointer or a wrong size (std::invalid_argument).
  void deallocate(void* ptr, std::size_t bytes, CUstream stream) {
    if (ptr != nullptr)
      doDeallocate(ptr, bytes, stream);
  }
  /// True when memory of this resource may be deallocated by @p other and the reverse.
  bool isEqual(const MemoryResource& other) const noexcept {
    return this == &other || doIsEqual(other);
  }
  /// What the memory can be used for.
  ResourceProperties properties() const noexcept { return doProperties(); }
  /// The address a kernel on the owner device uses for @p ptr, which allocate() returned: @p ptr
  /// itself for device, managed and VMM memory; mapped host memory may have another one.
  /// @throws std::logic_error when the memory is not device-accessible; what the kind throws.
  CUdeviceptr kernelAddress(void* ptr) const {
    if (!properties().deviceAccessible)
      throw std::logic_error(name() +
                             ": its memory is not accessible from a device, so it has no kernel "
                             "address");
    return doKernelAddress(ptr);
  }
  /// The device the resource belongs to (its memory was made for it); none for a resource that
  /// belongs to no device. The registry registers a resource only for its own device.
  std::optional<int> ownerDevice() const noexcept { return doOwnerDevice(); }
  /// A short name for tables and messages, e.g. "pinned host (device 0)".
  std::string name() const { return doName(); }

 private:
  /// Allocates at least 1 byte.
  virtual void* doAllocate(std::size_t bytes, CUstream stream) = 0;
  /// Deallocates a pointer that is not null.
  virtual void doDeallocate(void* ptr, std::size_t bytes, CUstream stream) = 0;
  /// Equality with another object (identity is checked already). Default: none.
  virtual bool doIsEqual(const MemoryResource&) const noexcept { return false; }
  /// The properties.
  virtual ResourceProperties doProperties() const noexcept = 0;
  /// The kernel address of a device-accessible allocation. Default: the pointer itself.
  virtual CUdeviceptr doKernelAddress(void* ptr) const { return toDevicePointer(ptr); }
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

/**
 * One allocation, given back when the owner is destroyed: the RAII form of allocate() /
 * deallocate(). Movable, not copyable; the resource must outlive it. The destructor ignores
 * errors of deallocate() (it also runs during unwinding): call release() to see them.
 */
class ResourceAllocation {
 public:
  /// Nothing allocated.
  ResourceAllocation() = default;
  /// Allocates @p bytes from @p resource on @p stream, which is also the stream it is freed on.
  ResourceAllocation(MemoryResource& resource, std::size_t bytes, CUstream stream)
      : state_{&resource, resource.allocate(bytes, stream), bytes, stream} {}
  ~ResourceAllocation() { releaseIgnoringErrors(); }
  /// Takes over @p other's memory; @p other is left empty.
  ResourceAllocation(ResourceAllocation&& other) noexcept
      : state_(std::exchange(other.state_, State{})) {}
  /// Gives back the current memory (errors ignored) and takes over @p other's.
  ResourceAllocation& operator=(ResourceAllocation&& other) noexcept {
    ResourceAllocation taken(std::move(other));  // a self-move gives the memory straight back
    std::swap(state_, taken.state_);
    return *this;  // taken gives this object's previous memory back as it ends
  }
  ResourceAllocation(const ResourceAllocation&) = delete;
  ResourceAllocation& operator=(const ResourceAllocation&) = delete;

  /// The memory (null when empty).
  void* get() const noexcept { return state_.ptr; }
  /// The memory as an array of T (host-accessible resources only).
  template <typename T>
  T* as() const noexcept {
    return static_cast<T*>(state_.ptr);
  }
  /// The bytes asked for.
  std::size_t size() const noexcept { return state_.bytes; }
  /// The resource it came from (null when empty).
  MemoryResource* resource() const noexcept { return state_.resource; }
  /// MemoryResource::kernelAddress() of the memory.
  /// @throws std::logic_error when empty (default-constructed, moved from or released).
  CUdeviceptr kernelAddress() const {
    if (state_.resource == nullptr)
      throw std::logic_error(
          "ResourceAllocation::kernelAddress: the allocation is empty (default-constructed, "
          "moved from or released), so it has no address");
    return state_.resource->kernelAddress(state_.ptr);
  }
  /// Deallocates now, on the stream it was allocated on; the object is empty afterwards, even
  /// when this throws.
  void release() {
    if (state_.ptr == nullptr)
      return;
    const State taken = std::exchange(state_, State{});
    taken.resource->deallocate(taken.ptr, taken.bytes, taken.stream);
  }

 private:
  // Everything an allocation is, moved and emptied as one.
  struct State {
    MemoryResource* resource = nullptr;
    void* ptr = nullptr;
    std::size_t bytes = 0;
    CUstream stream = nullptr;
  };

  void releaseIgnoringErrors() noexcept {
    try {
      release();
    } catch (...) {
      // Reported by whatever failed first, or unreportable from a destructor.
    }
  }

  State state_;
};

}  // namespace memsamples::resource
