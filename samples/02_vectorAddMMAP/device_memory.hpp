/**
 * @file device_memory.hpp
 * @brief How big the vectors of 02_vectorAddMMAP may be: what the run holds on each device at its
 *        peak, from the stripe layout, against that device's free memory.
 *
 * A striped range takes memory from every backing device, not just from the device the kernel
 * runs on, so a size that fits there can still run out of memory on a full peer. At its peak a
 * device holds:
 *
 * - its stripes of A, B and C (3 x its stripes x stripe size);
 * - beside them, the larger of what is measured there later, one at a time: on the kernel's device
 *   the three cuMemAlloc references (3 x the vector size), on every backing device its stripes of
 *   one mapping-cost range, and on the kernel's device that range's cuMemAlloc of the same size.
 *
 * Plain logic on numbers the lesson reads (cuMemGetInfo per device), so that full peers can be
 * tested on a computer without a GPU.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "striped_vmm.hpp"

namespace memsamples::vmm {

/// The free memory of one device, as cuMemGetInfo answered in a context on that device.
struct DeviceFree {
  int device = 0;               ///< Device ordinal.
  std::uint64_t freeBytes = 0;  ///< cuMemGetInfo's free memory of that device.
};

/// Everything about a run but the vector size.
struct RunShape {
  int kernelDevice = 0;               ///< Runs the kernel; holds the three cuMemAlloc references.
  int stripes = 1;                    ///< Stripes per vector.
  std::vector<int> backing;           ///< Backing devices, in stripe order.
  Granularities granularities;        ///< Of the backing and mapping devices.
  std::vector<int> costStripeCounts;  ///< The ranges the mapping-cost measurement builds.
};

/// What the run holds on one device at its peak, and what that device has free.
struct DeviceNeed {
  int device = 0;                   ///< Device ordinal.
  int stripesHere = 0;              ///< Stripes of each vector on this device.
  std::uint64_t stripeBytes = 0;    ///< Those stripes of A, B and C together.
  std::uint64_t besideBytes = 0;    ///< The most measured beside them at one time.
  bool besideIsReferences = false;  ///< Whether that is the cuMemAlloc references.
  std::uint64_t freeBytes = 0;      ///< cuMemGetInfo's answer for the device.
  /// Both together (saturating: more than any device has is all a comparison needs).
  std::uint64_t neededBytes() const {
    return besideBytes > UINT64_MAX - stripeBytes ? UINT64_MAX : stripeBytes + besideBytes;
  }
};

/**
 * What a run of @p shape with vectors of @p bytes needs on each device of @p freeMemory (see the
 * file comment), in the order given.
 * @throws std::invalid_argument when @p freeMemory lacks the kernel's device or a backing device;
 *         what planStripes() throws.
 */
std::vector<DeviceNeed> deviceNeeds(const RunShape& shape, std::uint64_t bytes,
                                    const std::vector<DeviceFree>& freeMemory);

/// The size a run uses, its layout, and what it needs per device.
struct RunSize {
  std::uint64_t bytes = 0;        ///< Bytes per vector.
  StripeLayout layout;            ///< The stripes of one vector of that size.
  std::vector<DeviceNeed> needs;  ///< What each device holding part of the run needs.
};

/**
 * The vector size for a run, checked on every device that holds part of it.
 *
 * With @p requested (`--size`): it must be a multiple of 4 bytes and fit in the free memory of
 * every device, else UsageError naming the device, what it needs and what it has free. Without:
 * @p defaultBytes, shrunk in 2 MiB steps until every device needs at most 80 % of its free memory
 * (as memsamples::chooseBufferBytes() sizes one device).
 * @throws UsageError; std::runtime_error when even 2 MiB vectors do not fit on a device.
 */
RunSize sizeRun(const std::optional<std::uint64_t>& requested, std::uint64_t defaultBytes,
                const RunShape& shape, const std::vector<DeviceFree>& freeMemory);

}  // namespace memsamples::vmm
