/**
 * @file peer_topology.hpp
 * @brief What the driver says about the devices of a machine and the links between them, read
 *        once and kept as plain data: the DeviceTopology that 02_vectorAddMMAP, 05_p2pMemMap and
 *        06_perDeviceResource plan with, and the link attributes of every ordered pair that
 *        05_p2pMemMap prints with describePeerLinks() (device_matrix.hpp), as 00 does.
 *
 * Both calls need cuInit() and call libcuda (memsamples::common); unit tested on fake drivers
 * (ctest/unit/vectorAddMMAP/query_test.cpp).
 */
#pragma once

#include "support/device_matrix.hpp"  // LinkMatrix
#include "support/devices.hpp"        // DeviceTopology

namespace memsamples {

/**
 * Per device CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED (cuDeviceGet,
 * cuDeviceGetAttribute), and the cuDeviceCanAccessPeer matrix: canAccessPeer[a][b] is
 * cuDeviceCanAccessPeer(a, b), "device a may map device b's memory". The diagonal is true and
 * not asked: the peer query is about two different devices. Requires cuInit.
 * @throws CudaError naming the call that failed.
 */
DeviceTopology queryDeviceTopology();

/**
 * The link attributes of every ordered pair of two of the @p deviceCount devices, asked as
 * cuDeviceCanAccessPeer is, accessor first: cuDeviceGetP2PAttribute(value, attribute, accessor,
 * owner) for the performance rank, ACCESS_SUPPORTED and native atomics. A driver may refuse
 * them (some virtual GPUs answer cuDeviceCanAccessPeer but not this): the first refusal is kept
 * in LinkAttributes::failure, not thrown, since the attributes only describe the link. The
 * diagonal is left empty (a device paired with itself is CUDA_ERROR_INVALID_DEVICE).
 * @return links[owner][accessor]. @throws CudaError when cuDeviceGet fails.
 */
LinkMatrix queryPeerLinks(int deviceCount);

}  // namespace memsamples
