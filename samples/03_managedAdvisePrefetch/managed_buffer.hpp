/**
 * @file managed_buffer.hpp
 * @brief ManagedBuffer: an RAII owner of cuMemAllocManaged memory that refuses to over-subscribe
 *        the device, and ManagedMemoryBudget, which keeps several such buffers within one limit.
 *
 * Why a guard: managed memory may be larger than the GPU (the driver evicts pages to the host to
 * make room), but on a shared GPU heavy over-subscription can stall every process using it for a
 * long time. The samples therefore never ask for more managed memory than the device has free,
 * and refuse such a request with a clear message *before* calling the driver.
 *
 * Why a budget as well: cuMemGetInfo counts managed memory as used only once its pages are
 * resident on the device. Three buffers of "almost all free memory" would each pass a per-call
 * check and together over-subscribe the GPU as soon as they are prefetched. A ManagedMemoryBudget
 * created from the free memory at start-up is charged by every buffer made with it and refuses
 * the one that would exceed it.
 *
 * The guard and the budget are CUDA-free (managed_budget.cpp, unit tested); ManagedBuffer itself
 * (managed_buffer.cpp) talks to the driver. It is 06_perDeviceResource's managed resource, not
 * 03's lesson: managedAdvisePrefetch.cpp writes its cuMemAllocManaged calls itself and checks the
 * sum of its allocations against the free memory once (planManagedSizes in managed_logic.hpp).
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <stdexcept>

namespace memsamples::managed {

/// A managed allocation that the guard or a budget refused; nothing was allocated.
class ManagedAllocationRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/**
 * The free-memory guard: throws ManagedAllocationRefused when @p bytes is 0 (the driver would
 * return CUDA_ERROR_INVALID_VALUE) or larger than @p freeBytes, the device memory free now.
 */
void checkManagedRequest(std::uint64_t bytes, std::uint64_t freeBytes);

/**
 * An upper limit on the managed memory a program keeps allocated on one device.
 *
 * Create it from the free memory (or a fraction of it) before allocating; every ManagedBuffer
 * made with it reserves its size and gives it back when freed. Thread-safe; neither copyable nor
 * movable, and it must outlive the buffers charged to it.
 */
class ManagedMemoryBudget {
 public:
  /// A budget of @p limitBytes.
  explicit ManagedMemoryBudget(std::uint64_t limitBytes) : limit_(limitBytes) {}
  ManagedMemoryBudget(const ManagedMemoryBudget&) = delete;
  ManagedMemoryBudget& operator=(const ManagedMemoryBudget&) = delete;

  /// Charges @p bytes. @throws ManagedAllocationRefused (and charges nothing) when the total
  /// would exceed the limit.
  void reserve(std::uint64_t bytes);
  /// Gives back @p bytes charged earlier.
  /// @throws std::logic_error (and changes nothing) when @p bytes is more than is charged: a
  ///         caller gave back what it never reserved, and clamping would hide that bug.
  void release(std::uint64_t bytes);
  /// Bytes charged now.
  std::uint64_t reserved() const;
  /// The limit.
  std::uint64_t limit() const noexcept { return limit_; }

 private:
  const std::uint64_t limit_;
  mutable std::mutex mutex_;
  std::uint64_t reserved_ = 0;
};

/**
 * Managed memory from cuMemAllocManaged, freed with cuMemFree.
 *
 * The same address is valid on the host and on every device; pages live where they were last
 * touched or prefetched. The constructor runs the free-memory guard (cuMemGetInfo of the current
 * context) and, if given, charges a ManagedMemoryBudget, before calling the driver.
 */
class ManagedBuffer {
 public:
  /// No memory.
  ManagedBuffer() = default;
  /**
   * Allocates @p bytes of managed memory in the current context.
   * @param bytes size in bytes, at least 1 and at most the device's free memory.
   * @param budget charged with @p bytes until the buffer is freed; may be null.
   * @param flags CU_MEM_ATTACH_GLOBAL (any stream on any device may use it) or
   *        CU_MEM_ATTACH_HOST.
   * @throws ManagedAllocationRefused from the guard or the budget, CudaError from the driver.
   */
  explicit ManagedBuffer(std::size_t bytes, ManagedMemoryBudget* budget = nullptr,
                         unsigned int flags = CU_MEM_ATTACH_GLOBAL);
  /// Frees the memory (cuMemFree, answer ignored) and gives its size back to the budget.
  ~ManagedBuffer();
  /// Takes over @p other's memory; @p other is left empty.
  ManagedBuffer(ManagedBuffer&& other) noexcept;
  /// Frees this buffer's memory (as the destructor does), then takes over @p other's;
  /// @p other is left empty.
  ManagedBuffer& operator=(ManagedBuffer&& other) noexcept;
  ManagedBuffer(const ManagedBuffer&) = delete;
  ManagedBuffer& operator=(const ManagedBuffer&) = delete;

  /// The address, usable by kernels and driver calls.
  CUdeviceptr get() const noexcept { return ptr_; }
  /// The same address for the host.
  template <typename T>
  T* as() const noexcept {
    return reinterpret_cast<T*>(static_cast<std::uintptr_t>(ptr_));
  }
  /// The allocation's size in bytes.
  std::size_t size() const noexcept { return bytes_; }

 private:
  void freeMemory() noexcept;

  CUdeviceptr ptr_ = 0;
  std::size_t bytes_ = 0;
  ManagedMemoryBudget* budget_ = nullptr;
};

}  // namespace memsamples::managed
