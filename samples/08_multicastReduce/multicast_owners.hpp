/**
 * @file multicast_owners.hpp
 * @brief Owners for what the multicastReduce lesson creates: they only release, on every path;
 *        every creating call is written in multicastReduce.cpp or multicast_team.cpp.
 *
 * The teardown order of a multicast buffer is unbind, unmap, release, free the addresses: a
 * binding must go before the memory and the object it joins, a mapping before the handle it maps
 * is released for good, and a virtual range is freed only once nothing is mapped in it. Each
 * owner does one of these steps; TeamMemory (multicast_team.hpp) declares them in the reverse
 * order, so C++ destroys them in this one.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <utility>

#include "memsamples.hpp"

namespace memsamples::multicast {

/// cuMemRelease, for a physical allocation (cuMemCreate) and for a multicast object
/// (cuMulticastCreate): both are generic allocation handles.
using OwnedAllocationHandle = DriverHandle<CUmemGenericAllocationHandle, cuMemRelease>;

/// A virtual range from cuMemAddressReserve, freed with cuMemAddressFree.
class AddressRange {
 public:
  AddressRange() = default;
  /// Takes over @p other's range.
  AddressRange(AddressRange&& other) noexcept
      : base_(std::exchange(other.base_, 0)), bytes_(other.bytes_) {}
  AddressRange& operator=(AddressRange&&) = delete;
  AddressRange(const AddressRange&) = delete;
  AddressRange& operator=(const AddressRange&) = delete;
  ~AddressRange() {
    if (base_ != 0)
      (void)cuMemAddressFree(base_, bytes_);
  }
  /// Takes over a range that cuMemAddressReserve returned.
  void reserved(CUdeviceptr base, std::size_t bytes) noexcept {
    base_ = base;
    bytes_ = bytes;
  }

 private:
  CUdeviceptr base_ = 0;
  std::size_t bytes_ = 0;
};

/// A cuMemMap mapping, undone with cuMemUnmap (the range itself stays reserved).
class Mapping {
 public:
  Mapping() = default;
  /// Takes over @p other's mapping.
  Mapping(Mapping&& other) noexcept : base_(std::exchange(other.base_, 0)), bytes_(other.bytes_) {}
  Mapping& operator=(Mapping&&) = delete;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (base_ != 0)
      (void)cuMemUnmap(base_, bytes_);
  }
  /// Notes that cuMemMap succeeded for [@p base, @p base + @p bytes).
  void mapped(CUdeviceptr base, std::size_t bytes) noexcept {
    base_ = base;
    bytes_ = bytes;
  }

 private:
  CUdeviceptr base_ = 0;
  std::size_t bytes_ = 0;
};

/// A cuMulticastBindMem binding of one device's memory, undone with cuMulticastUnbind (with the
/// same offset and size as the bind: the driver requires them to match).
class MulticastBinding {
 public:
  MulticastBinding() = default;
  /// Takes over @p other's binding.
  MulticastBinding(MulticastBinding&& other) noexcept
      : object_(std::exchange(other.object_, 0)),
        device_(other.device_),
        offset_(other.offset_),
        bytes_(other.bytes_) {}
  MulticastBinding& operator=(MulticastBinding&&) = delete;
  MulticastBinding(const MulticastBinding&) = delete;
  MulticastBinding& operator=(const MulticastBinding&) = delete;
  ~MulticastBinding() {
    if (object_ != 0)
      (void)cuMulticastUnbind(object_, device_, offset_, bytes_);
  }
  /// Notes that cuMulticastBindMem bound @p device's memory at @p offset, @p bytes long.
  void bound(CUmemGenericAllocationHandle object, CUdevice device, std::size_t offset,
             std::size_t bytes) noexcept {
    object_ = object;
    device_ = device;
    offset_ = offset;
    bytes_ = bytes;
  }

 private:
  CUmemGenericAllocationHandle object_ = 0;
  CUdevice device_ = 0;
  std::size_t offset_ = 0;
  std::size_t bytes_ = 0;
};

}  // namespace memsamples::multicast
