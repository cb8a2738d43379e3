/**
 * @file managed_buffer.hpp
 * @brief ManagedBuffer: an owner of cuMemAllocManaged memory that refuses to over-subscribe the
 *        device; the managed resource of 06_perDeviceResource (resources.cpp).
 *
 * Managed memory may be larger than the GPU (the driver evicts pages to the host), but on a shared
 * GPU heavy over-subscription can stall every process using it, so a request larger than the free
 * memory is refused before the driver is called (checkManagedRequest). cuMemGetInfo counts managed
 * memory only once its pages are on the device, so three buffers of "almost all free memory"
 * would each pass that check: a ManagedMemoryBudget made from the free memory at start-up is
 * charged by every buffer made with it and refuses the one that would exceed it. Guard and budget
 * are CUDA-free (managed_budget.cpp, unit tested in ctest/unit/perDeviceResource); the buffer
 * itself calls the driver (managed_buffer.cpp). 03_managedAdvisePrefetch teaches managed memory
 * itself; this is only the allocator 06 needs.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <stdexcept>

/// The managed resource of the CUDA Memory Samples (06_perDeviceResource).
namespace memsamples::managed {

/// @name The guard and the budget (CUDA-free, managed_budget.cpp)
/// @{

/// A managed allocation that the guard or a budget refused; nothing was allocated.
class ManagedAllocationRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Throws ManagedAllocationRefused for 0 bytes or more than @p freeBytes.
void checkManagedRequest(std::uint64_t bytes, std::uint64_t freeBytes);

/// An upper limit on the managed memory kept allocated on one device; thread-safe, not copyable,
/// and it must outlive the buffers charged to it.
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

/// Managed memory from cuMemAllocManaged (one address on the host and every device), freed with
/// cuMemFree; the constructor runs the guard (cuMemGetInfo) and charges the budget, if any.
class ManagedBuffer {
 public:
  ManagedBuffer() = default;
  /// @p bytes in the current context, charged to @p budget (may be null) until freed; @p flags
  /// CU_MEM_ATTACH_GLOBAL or CU_MEM_ATTACH_HOST.
  /// @throws ManagedAllocationRefused from the guard or the budget, CudaError from the driver.
  explicit ManagedBuffer(std::size_t bytes, ManagedMemoryBudget* budget = nullptr,
                         unsigned int flags = CU_MEM_ATTACH_GLOBAL);
  /// Frees the memory (cuMemFree, answer ignored) and gives its size back to the budget.
  ~ManagedBuffer() { freeMemory(); }
  ManagedBuffer(ManagedBuffer&& other) noexcept;  ///< Takes over @p other's memory.
  /// Frees this buffer's memory now, then takes over @p other's.
  ManagedBuffer& operator=(ManagedBuffer&& other) noexcept;
  ManagedBuffer(const ManagedBuffer&) = delete;
  ManagedBuffer& operator=(const ManagedBuffer&) = delete;

  CUdeviceptr get() const noexcept { return ptr_; }  ///< The address for the driver and kernels.
  template <typename T>
  T* as() const noexcept {  ///< The same address for the host.
    return reinterpret_cast<T*>(static_cast<std::uintptr_t>(ptr_));
  }
  std::size_t size() const noexcept { return bytes_; }  ///< The size in bytes.

 private:
  void freeMemory() noexcept;

  CUdeviceptr ptr_ = 0;
  std::size_t bytes_ = 0;
  ManagedMemoryBudget* budget_ = nullptr;
};

}  // namespace memsamples::managed
