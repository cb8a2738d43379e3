/**
 * @file vmm_owners.hpp
 * @brief Owners of what a VMM lesson builds (cuMemCreate, cuMemAddressReserve, cuMemMap): they
 *        release on an error path only. The lesson writes every creating call, and on the good
 *        path every release, itself: it empties an owner with release(), which hands back what
 *        the releasing call needs, and makes that call, checking its answer. Shared by
 *        04_numaHostAlloc, 05_p2pMemMap and 08_multicastReduce.
 *
 * The teardown order of VMM memory is unmap, release, free the addresses: a mapping goes before
 * the handle it maps is released for good (releasing right after cuMemMap is the usual order:
 * the mapping keeps the memory), and a virtual range is freed only once nothing is mapped in it.
 * C++ destroys objects in the reverse order of their declaration, so a lesson declares the
 * address ranges first and the mappings last.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <utility>

#include "memsamples.hpp"  // DriverHandle

namespace memsamples {

/// cuMemRelease, for a physical allocation (cuMemCreate) and for a multicast object
/// (cuMulticastCreate): both are generic allocation handles.
using OwnedAllocationHandle = DriverHandle<CUmemGenericAllocationHandle, cuMemRelease>;

/// A range of device addresses, given back with @p Release(base, bytes): cuMemAddressFree for a
/// reservation (AddressRange), cuMemUnmap for a mapping in it (Mapping).
template <CUresult (*Release)(CUdeviceptr, std::size_t)>
class OwnedRange {
 public:
  OwnedRange() = default;
  /// Will own @p bytes from the address written to out() (or given here as @p base).
  explicit OwnedRange(std::size_t bytes, CUdeviceptr base = 0) noexcept
      : base_(base), bytes_(bytes) {}
  /// Takes over @p other's range; @p other is left empty.
  OwnedRange(OwnedRange&& other) noexcept
      : base_(std::exchange(other.base_, 0)), bytes_(other.bytes_) {}
  OwnedRange& operator=(OwnedRange&&) = delete;
  OwnedRange(const OwnedRange&) = delete;
  OwnedRange& operator=(const OwnedRange&) = delete;
  ~OwnedRange() {
    if (base_ != 0)
      (void)Release(base_, bytes_);
  }
  /// Takes over [@p base, @p base + @p bytes), which the creating call has just returned.
  void own(CUdeviceptr base, std::size_t bytes) noexcept {
    base_ = base;
    bytes_ = bytes;
  }
  /// Where cuMemAddressReserve writes the range's first address (bytes as constructed).
  CUdeviceptr* out() noexcept { return &base_; }
  /// The range's first address (0: none owned), for the calls that use it; still owned.
  CUdeviceptr get() const noexcept { return base_; }
  /// Gives the range up unreleased, for the good path's checked release: its base.
  CUdeviceptr release() noexcept { return std::exchange(base_, 0); }

 private:
  CUdeviceptr base_ = 0;
  std::size_t bytes_ = 0;
};

/// A virtual range from cuMemAddressReserve, freed with cuMemAddressFree.
using AddressRange = OwnedRange<cuMemAddressFree>;
/// A cuMemMap mapping, undone with cuMemUnmap (the range itself stays reserved).
using Mapping = OwnedRange<cuMemUnmap>;

}  // namespace memsamples
