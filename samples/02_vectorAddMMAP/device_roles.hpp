/**
 * @file device_roles.hpp
 * @brief Which devices take part in a striped range: the ones whose memory holds the stripes
 *        (*backing*) and the ones given access to it (*mapping*), decided from what the driver
 *        says about the machine.
 *
 * Plain logic on a memsamples::DeviceTopology (queryDeviceTopology() in striped_vmm.hpp reads it
 * from the driver), so that every machine shape, one GPU, peers without access, a device without
 * VMM, can be tested on a computer without a GPU.
 */
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "memsamples.hpp"
#include "support/devices.hpp"

/// The striped virtual-memory allocator of sample 02 (reused by sample 06 as a resource kind).
namespace memsamples::vmm {

/// The machine as the driver describes it (Common).
using memsamples::DeviceTopology;

/**
 * The default backing devices for a range used by device @p chosen: @p chosen itself first, then,
 * in ordinal order, every other device whose memory @p chosen can access as a peer **and** that
 * supports VMM itself (the flag is read for that device, not for @p chosen).
 * @throws std::invalid_argument when the topology is malformed or @p chosen is out of range.
 */
std::vector<int> discoverBackingDevices(int chosen, const DeviceTopology& topology);

/// The devices that hold the memory and the devices that may access it.
struct DeviceRoles {
  std::vector<int> backing;  ///< Devices whose memory backs the stripes, in stripe order.
  std::vector<int> mapping;  ///< Devices given read-write access with cuMemSetAccess.
};

/**
 * Checks that every device @p backingOption and @p mappingOption name exists on a machine of
 * @p deviceCount devices: bad input, reported before any waiver.
 * @throws UsageError naming the option, the device and the device count.
 */
void checkDeviceOrdinals(const std::vector<int>& backingOption,
                         const std::vector<int>& mappingOption, int deviceCount);

/**
 * Checks or fills in the backing and mapping devices of the sample.
 *
 * Empty @p backingOption: discoverBackingDevices(). Empty @p mappingOption: just @p chosen.
 * Given lists must name existing devices that support VMM; the mapping list must contain
 * @p chosen (the kernel runs there); every mapping device must be able to access every backing
 * device (cuDeviceCanAccessPeer), because cuMemSetAccess can only grant what the hardware allows.
 *
 * @param chosen the device the kernel runs on (must support VMM: the caller waives otherwise).
 * @param backingOption `--backing` as given, or empty.
 * @param mappingOption `--mapping` as given, or empty.
 * @param topology the machine.
 * @throws UsageError naming the option, the device and (for a bad ordinal) the device count.
 */
DeviceRoles resolveDeviceRoles(int chosen, const std::vector<int>& backingOption,
                               const std::vector<int>& mappingOption,
                               const DeviceTopology& topology);

/**
 * The stripe count to use: @p requested, or one stripe per backing device when @p requested is
 * 0 (not given).
 * @throws UsageError when @p requested is smaller than the number of backing devices (a backing
 * device without a stripe would be silently ignored) or negative.
 */
int resolveStripeCount(int requested, std::size_t backingDeviceCount);

/// "0,1,3": a device list for people and messages.
std::string formatDeviceList(const std::vector<int>& devices);

}  // namespace memsamples::vmm
