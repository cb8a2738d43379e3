/**
 * @file numa_sysfs.hpp
 * @brief The sysfs readers of host NUMA topology that 00_memoryQueryDrv, 04_numaHostAlloc and
 *        06_perDeviceResource share: a GPU's nearest host node as the kernel sees it, the online
 *        nodes, and the id a CU_MEM_LOCATION_TYPE_HOST_NUMA location needs.
 *
 * The driver reports a node too (CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID), and the two can disagree: on
 * a VM the driver said 0 where sysfs said -1 ("unknown"). A sample reads both and says which it
 * used. Nothing here touches the CUDA driver; every reader takes the sysfs root, so that unit
 * tests can use a fake tree.
 */
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace memsamples {

/**
 * A PCI bus id as sysfs names the device's folder: lower-case hex, the domain widened to 4
 * digits only ("0000:3B:00.0" and "00000000:3b:00.0" both become "0000:3b:00.0"). White space
 * around @p busId is ignored.
 * @return the sysfs name.
 * @throws std::invalid_argument naming @p busId when it is not `domain:bus:device.function` in
 *         hex with a device of at most 0x1f and a function of at most 7.
 */
std::string sysfsPciName(std::string_view busId);

/// What sysfs says about the host NUMA node of a PCI device.
struct PciNumaNode {
  int node = -1;        ///< The node, or -1: unknown (no NUMA, a VM, or unreadable).
  std::string path;     ///< `<root>/bus/pci/devices/<bdf>/numa_node`; empty for a bad bus id.
  std::string problem;  ///< Why node is -1 when the id or the file was unusable; else empty.
};

/**
 * Reads `<sysfsRoot>/bus/pci/devices/<bdf>/numa_node` for the device with PCI bus id @p busId.
 *
 * The kernel writes -1 when it does not know the node; the file must hold one integer from -1 to
 * 1023, white space around it allowed.
 * @param sysfsRoot "/sys", or a fake tree in tests.
 * @param busId the PCI bus id as cuDeviceGetPCIBusId gives it, in any case, with a 4- or 8-digit
 *        domain.
 * @return the node and the file read. A malformed bus id, a missing file or content that is not
 *         such a number is reported in PciNumaNode::problem (with node -1), never thrown.
 */
PciNumaNode readPciNumaNode(const std::string& sysfsRoot, std::string_view busId);

/**
 * Parses a kernel list of ids such as "0", "0-3" or "0-1,4,6-7" (the format of
 * `/sys/devices/system/node/online`); white space around it is ignored.
 * @return the ids, in increasing order.
 * @throws std::invalid_argument for anything else: an empty item, a range that runs backwards,
 *         ids that are not increasing, and ids above 65535.
 */
std::vector<int> parseIdList(std::string_view list);

/// The online host NUMA nodes listed in `<sysfsRoot>/devices/system/node/online`.
/// @return the node ids in increasing order; empty when the file is missing (a kernel without
///         NUMA support) or malformed. Throws nothing but std::bad_alloc.
std::vector<int> onlineHostNumaNodes(const std::string& sysfsRoot);

/**
 * The id of a CU_MEM_LOCATION_TYPE_HOST_NUMA location for the node the driver reports in
 * CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID. cuda.h: the attribute is -1 "when system does not support
 * NUMA", and on such systems the location id "must be set to 0"; -1 next to host-NUMA VMM support
 * is therefore valid, not a contradiction.
 * @return @p hostNumaIdAttribute when it is 0 or more, else 0. Throws nothing.
 */
int hostNumaLocationId(int hostNumaIdAttribute);

}  // namespace memsamples
