/**
 * @file run_plan.hpp
 * @brief How a run of 02_vectorAddMMAP is planned before anything is mapped: the devices that
 *        hold the stripes (*backing*) and may access them (*mapping*), the granularity, and a
 *        vector size that fits every device holding part of the run.
 *
 * chooseDevices() and sizeRun(options, devices, report) are the lesson's two calls. They ask the
 * driver, then decide with the plain functions below them, which are unit tested without a GPU
 * for every machine shape: one GPU, peers without access, a device without VMM, a full peer.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memsamples.hpp"
#include "support/devices.hpp"        // DeviceTopology, allocationGranularity
#include "support/peer_topology.hpp"  // queryDeviceTopology
#include "striped_vmm.hpp"              // StripeLayout, Granularities, planStripes

namespace memsamples::vmm {

/// The machine as the driver describes it (Common).
using memsamples::DeviceTopology;

/// What the command line of 02 asks for.
struct RunOptions {
  CommonOptions common;                    ///< --device, --iterations, --json...
  std::optional<std::uint64_t> sizeBytes;  ///< --size, when given.
  int stripes = 0;                         ///< --stripes; 0: one per backing device.
  std::vector<int> backing;                ///< --backing, when given.
  std::vector<int> mapping;                ///< --mapping, when given.
};

/// The devices that hold the memory and the devices that may access it.
struct DeviceRoles {
  std::vector<int> backing;  ///< Devices whose memory backs the stripes, in stripe order.
  std::vector<int> mapping;  ///< Devices given read-write access with cuMemSetAccess.
};

/// The devices of a run, as chooseDevices() decided them.
struct RunDevices {
  CUdevice device = 0;          ///< Runs the kernel: `--device`, or the fastest.
  int ordinal = 0;              ///< Its ordinal (a CUdevice is a handle, not an ordinal).
  DeviceRoles roles;            ///< Backing and mapping devices.
  int stripes = 0;              ///< Stripes per vector.
  Granularities granularities;  ///< Of the backing and mapping devices together.
};

/// The lesson's step 2: Common's selectDevice(); a listed device this machine lacks is a usage
/// error before any waiver; a device without VMM waives; then resolveDeviceRoles(),
/// resolveStripeCount(), stripedGranularities(). Prints and records them. @throws UsageError,
/// WaivedError, CudaError.
RunDevices chooseDevices(const RunOptions& options, Report& report);

/// The vector size when `--size` is not given: 256 MiB (64 Mi floats), less if memory is short:
/// large enough for the kernel to run at memory bandwidth, small enough for a run of seconds.
constexpr std::uint64_t kDefaultBytes = 256ull << 20;

/// The largest `--size`: 1T per vector, more than any GPU holds (a usage error above it).
constexpr std::uint64_t kMaxBytes = 1ull << 40;

/// The stripe counts of the ranges the mapping-cost measurement builds, one at a time, while A,
/// B and C are alive: the size of the run counts them too (RunShape).
inline const std::vector<int> kCostStripeCounts = {1, 2, 8, 64};

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

/// The size a run uses, its layout, and what it needs per device.
struct RunSize {
  std::uint64_t bytes = 0;        ///< Bytes per vector.
  StripeLayout layout;            ///< The stripes of one vector of that size.
  std::vector<DeviceNeed> needs;  ///< What each device holding part of the run needs.
};

/// The lesson's step 4: cuMemGetInfo of every device holding part of the run (a peer's in its
/// primary context) and the host's memory (Common's fitHostMemory()) for sizeRun() below. Prints
/// and records the size. @throws what sizeRun() below throws; CudaError.
RunSize sizeRun(const RunOptions& options, const RunDevices& devices, Report& report);

// ----------------------------------------------- what the two calls are made of (unit tested)

/// Per device CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, and the
/// cuDeviceCanAccessPeer matrix: Common's (support/peer_topology.hpp), which 05 reads too.
using memsamples::queryDeviceTopology;

/// The default backing devices of device @p chosen: itself, then in ordinal order every device
/// whose memory it can access as a peer **and** that supports VMM itself (its own flag).
/// @throws std::invalid_argument for a malformed topology or @p chosen out of range.
std::vector<int> discoverBackingDevices(int chosen, const DeviceTopology& topology);

/// Checks that the devices `--backing` and `--mapping` list exist on a machine of @p deviceCount.
/// @throws UsageError naming the option, the device and the device count.
void checkDeviceOrdinals(const std::vector<int>& backingOption,
                         const std::vector<int>& mappingOption, int deviceCount);

/// The backing devices (given, or discoverBackingDevices()) and mapping devices (given, or just
/// @p chosen). Given devices must exist and support VMM, the kernel's device must map, and every
/// mapping device must reach every backing device (cuMemSetAccess grants only what the hardware
/// allows). @throws UsageError naming the option, the device and, for a bad one, the count.
DeviceRoles resolveDeviceRoles(int chosen, const std::vector<int>& backingOption,
                               const std::vector<int>& mappingOption,
                               const DeviceTopology& topology);

/// @p requested, or one stripe per backing device when it is 0 (not given).
/// @throws UsageError when negative or fewer than the backing devices (one would get nothing).
int resolveStripeCount(int requested, std::size_t backingDeviceCount);

/// The largest of @p perDevice (granularities are powers of two, so a multiple of all).
/// @throws std::invalid_argument when @p perDevice is empty or holds a zero.
std::uint64_t combinedGranularity(const std::vector<std::uint64_t>& perDevice);

/// cuMemGetAllocationGranularity (minimum) of pinned memory on every backing and mapping device
/// (a mapping device counts: its mappings must be aligned for it), combined: the question the
/// allocator, mapStripedRange(), asks first, asked here ahead of it, so that step 2 can print the
/// granularity and step 4 can size the run with the layout the allocator will build.
/// @throws CudaError.
std::uint64_t stripedGranularity(const std::vector<int>& backingDevices,
                                 const std::vector<int>& mappingDevices);

/// stripedGranularity(), once for the minimum and once for the recommended granularity.
Granularities stripedGranularities(const std::vector<int>& backingDevices,
                                   const std::vector<int>& mappingDevices);

/// "0,1,3": a device list for people and messages.
std::string formatDeviceList(const std::vector<int>& devices);

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

/// What a run of @p shape with vectors of @p bytes holds at its peak on each device of
/// @p freeMemory, in that order: its stripes of A, B and C, and the most measured beside them
/// at one time (the cuMemAlloc references, or one mapping-cost range and its cuMemAlloc twin).
/// @throws std::invalid_argument when @p freeMemory lacks a device of the run.
std::vector<DeviceNeed> deviceNeeds(const RunShape& shape, std::uint64_t bytes,
                                    const std::vector<DeviceFree>& freeMemory);

/// The vector size (no driver call): @p requested must be a multiple of 4 bytes and fit every
/// device, else UsageError naming the device, its need and its free memory; the default shrinks
/// in 2 MiB steps until every device needs at most 80 % of its free memory (as Common's
/// chooseBufferBytes()). @throws UsageError; std::runtime_error when even 2 MiB do not fit.
RunSize sizeRun(const std::optional<std::uint64_t>& requested, std::uint64_t defaultBytes,
                const RunShape& shape, const std::vector<DeviceFree>& freeMemory);

}  // namespace memsamples::vmm
