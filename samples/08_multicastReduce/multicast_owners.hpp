/**
 * @file multicast_owners.hpp
 * @brief Owners for what the multicastReduce lesson creates: they only release, and only on an
 *        error path; every creating call, and on the good path every release, is written in the
 *        lesson's core.
 *
 * The teardown order of a multicast buffer is unbind, unmap, release, free the addresses: a
 * binding must go before the memory and the object it joins, a mapping before the handle it maps
 * is released for good, and a virtual range is freed only once nothing is mapped in it. Each
 * owner does one of these steps; TeamMemory declares them in the reverse order, so C++ destroys
 * them in this one. On the good path the lesson empties each owner with release(), which hands
 * back what the releasing call needs, and makes that call itself, checking its answer.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "memsamples.hpp"
#include "support/vmm_owners.hpp"

namespace memsamples::multicast {

/// cuMemRelease (OwnedAllocationHandle), cuMemAddressFree (AddressRange) and cuMemUnmap
/// (Mapping): Common's VMM owners (support/vmm_owners.hpp), which 05_p2pMemMap uses too.
using memsamples::AddressRange;
using memsamples::Mapping;
using memsamples::OwnedAllocationHandle;

/// A cuMulticastBindMem binding of one device's memory at offset 0, undone with
/// cuMulticastUnbind (with the same offset and size as the bind: the driver requires them to
/// match).
class MulticastBinding {
 public:
  MulticastBinding() = default;
  /// Takes over @p other's binding; @p other is left empty.
  MulticastBinding(MulticastBinding&& other) noexcept
      : object_(std::exchange(other.object_, 0)), device_(other.device_), bytes_(other.bytes_) {}
  MulticastBinding& operator=(MulticastBinding&&) = delete;
  MulticastBinding(const MulticastBinding&) = delete;
  MulticastBinding& operator=(const MulticastBinding&) = delete;
  ~MulticastBinding() {
    if (object_ != 0)
      (void)cuMulticastUnbind(object_, device_, 0, bytes_);
  }
  /// Takes ownership of the binding that cuMulticastBindMem has just made: @p device's memory
  /// bound to @p object at offset 0, @p bytes long. From now on the destructor unbinds it, unless
  /// release() is called first.
  void bound(CUmemGenericAllocationHandle object, CUdevice device, std::size_t bytes) noexcept {
    object_ = object;
    device_ = device;
    bytes_ = bytes;
  }
  /// Gives up ownership without unbinding, for the good path, where the lesson calls
  /// cuMulticastUnbind itself and checks it. Returns the device whose memory is bound: with the
  /// object, offset 0 and the size, that is what cuMulticastUnbind needs to name the binding.
  CUdevice release() noexcept {
    object_ = 0;
    return device_;
  }

 private:
  CUmemGenericAllocationHandle object_ = 0;
  CUdevice device_ = 0;
  std::size_t bytes_ = 0;
};

/**
 * What the team's buffer is made of, released on an error path in the documented order: C++
 * destroys members in reverse order of declaration, so the bindings go first, then the mappings,
 * then the handles, and the address ranges last. The lesson's core fills it, one owner per
 * successful call, and on the good path empties it with the same calls, written out.
 */
struct TeamMemory {
  /// Room for a team of @p members, so that no owner moves once it holds something.
  explicit TeamMemory(std::size_t members) {
    ranges.reserve(2 * members);
    copies.reserve(members);
    mappings.reserve(2 * members);
    bindings.reserve(members);
  }
  std::vector<AddressRange> ranges;           ///< Teardown 4: cuMemAddressFree of every range
  OwnedAllocationHandle object;               ///< Teardown 3: cuMemRelease of the object
  std::vector<OwnedAllocationHandle> copies;  ///< Teardown 3: cuMemRelease of each GPU's memory
  std::vector<Mapping> mappings;              ///< Teardown 2: cuMemUnmap of every mapping
  std::vector<MulticastBinding> bindings;     ///< Teardown 1: cuMulticastUnbind of each copy
};

}  // namespace memsamples::multicast
