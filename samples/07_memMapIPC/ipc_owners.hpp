/**
 * @file ipc_owners.hpp
 * @brief Owners for what the memMapIPC lesson creates: they only release, on every path; every
 *        creating call is written in memMapIPC.cpp.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <utility>

#include "memsamples.hpp"

namespace memsamples::ipc {

/// cuMemRelease: a physical allocation lives on while it is mapped, so releasing right after
/// cuMemMap is the usual order.
using OwnedAllocationHandle = DriverHandle<CUmemGenericAllocationHandle, cuMemRelease>;
/// cuMemPoolDestroy, for a created or an imported pool (after the allocations from it).
using OwnedMemoryPool = DriverHandle<CUmemoryPool, cuMemPoolDestroy>;
/// cuIpcCloseMemHandle, for a pointer that cuIpcOpenMemHandle returned.
using OwnedIpcMapping = DriverHandle<CUdeviceptr, cuIpcCloseMemHandle>;

/// Memory from cuMemAllocFromPoolAsync, freed with cuMemFreeAsync on the stream it was allocated
/// on: pool memory is stream-ordered, and so is its free (cuMemPoolDestroy afterwards waits for
/// it).
class PoolAllocation {
 public:
  /// An empty owner whose allocation will be freed on @p stream.
  /// An empty owner whose allocation will be freed on @p stream.
  explicit PoolAllocation(CUstream stream) noexcept : stream_(stream) {}
  /// Takes over @p other's allocation.
  PoolAllocation(PoolAllocation&& other) noexcept
      : pointer_(std::exchange(other.pointer_, 0)), stream_(other.stream_) {}
  PoolAllocation& operator=(PoolAllocation&&) = delete;
  PoolAllocation(const PoolAllocation&) = delete;
  PoolAllocation& operator=(const PoolAllocation&) = delete;
  ~PoolAllocation() {
    if (pointer_ != 0)
      (void)cuMemFreeAsync(pointer_, stream_);
  }
  /// Where cuMemAllocFromPoolAsync writes the pointer.
  CUdeviceptr* out() noexcept { return &pointer_; }
  /// The allocation (still owned).
  CUdeviceptr get() const noexcept { return pointer_; }

 private:
  CUdeviceptr pointer_ = 0;
  CUstream stream_;
};

/// A reserved virtual range and the allocation mapped into it: cuMemUnmap (if mapped), then
/// cuMemAddressFree. The lesson reserves and maps; this only undoes it.
class MappedRange {
 public:
  MappedRange() = default;
  /// Takes over @p other's range.
  MappedRange(MappedRange&& other) noexcept
      : base_(std::exchange(other.base_, 0)),
        bytes_(other.bytes_),
        mapped_(std::exchange(other.mapped_, false)) {}
  MappedRange& operator=(MappedRange&&) = delete;
  MappedRange(const MappedRange&) = delete;
  MappedRange& operator=(const MappedRange&) = delete;
  ~MappedRange() {
    if (mapped_)
      (void)cuMemUnmap(base_, bytes_);
    if (base_ != 0)
      (void)cuMemAddressFree(base_, bytes_);
  }
  /// Takes over a range that cuMemAddressReserve returned.
  void reserved(CUdeviceptr base, std::size_t bytes) noexcept {
    base_ = base;
    bytes_ = bytes;
  }
  /// Notes that cuMemMap succeeded: the range is unmapped before it is freed.
  void mapped() noexcept { mapped_ = true; }
  /// The range's base address.
  CUdeviceptr get() const noexcept { return base_; }

 private:
  CUdeviceptr base_ = 0;
  std::size_t bytes_ = 0;
  bool mapped_ = false;
};

}  // namespace memsamples::ipc
