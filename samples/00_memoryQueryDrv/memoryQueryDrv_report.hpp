/**
 * @file memoryQueryDrv_report.hpp
 * @brief What 00_memoryQueryDrv's queries answered, and how they are printed: the table per
 *        device, the peer-access matrix and the JSON result.
 */
#pragma once

#include <cuda.h>

#include <array>
#include <cstddef>
#include <iosfwd>
#include <optional>
#include <vector>

#include "memsamples.hpp"
#include "support/device_matrix.hpp"  // describePeerLinks
#include "support/devices.hpp"        // peakBandwidthGBps, validateDeviceOrdinal
#include "support/numa_sysfs.hpp"     // PciNumaNode, readPciNumaNode, hostNumaLocationId

/// The minimum and recommended cuMemGetAllocationGranularity of pinned memory at a location.
struct Granularity {
  std::size_t minimum = 0;      ///< cuMemCreate's size and cuMemMap's address, size, offset.
  std::size_t recommended = 0;  ///< What the driver suggests for performance.
};

/// Every CUDA-valid atomic operation (CUatomicOperation), in cuda.h's order: the operations
/// steps 7 and 8 ask cuDeviceGetHostAtomicCapabilities and cuDeviceGetP2PAtomicCapabilities about.
inline constexpr std::array<CUatomicOperation, 13> kAtomicOperations = {
    CU_ATOMIC_OPERATION_INTEGER_ADD,
    CU_ATOMIC_OPERATION_INTEGER_MIN,
    CU_ATOMIC_OPERATION_INTEGER_MAX,
    CU_ATOMIC_OPERATION_INTEGER_INCREMENT,
    CU_ATOMIC_OPERATION_INTEGER_DECREMENT,
    CU_ATOMIC_OPERATION_AND,
    CU_ATOMIC_OPERATION_OR,
    CU_ATOMIC_OPERATION_XOR,
    CU_ATOMIC_OPERATION_EXCHANGE,
    CU_ATOMIC_OPERATION_CAS,
    CU_ATOMIC_OPERATION_FLOAT_ADD,
    CU_ATOMIC_OPERATION_FLOAT_MIN,
    CU_ATOMIC_OPERATION_FLOAT_MAX};

/// The count argument of the two atomic-capability queries.
inline constexpr unsigned int kAtomicCount = kAtomicOperations.size();

/// Which atomic operations a link does natively: the link between a device and the host
/// (cuDeviceGetHostAtomicCapabilities) or between two devices (cuDeviceGetP2PAtomicCapabilities).
struct AtomicAnswers {
  /// What the query returned; empty where it was not asked (the driver lacks the entry point).
  std::optional<CUresult> answer;
  /// Per operation of kAtomicOperations, a mask of CUatomicOperationCapability bits (signed,
  /// unsigned, reduction, 32/64/128-bit scalar, 32x4 vector); 0: not native over the link.
  std::array<unsigned int, kAtomicOperations.size()> capabilities = {};
};

/// One device's answers, each from the query named beside it.
struct DeviceAnswers {
  int ordinal = 0;                        ///< The N of cuDeviceGet(&device, N).
  char name[256] = {};                    ///< cuDeviceGetName.
  int computeMajor = 0;                   ///< COMPUTE_CAPABILITY_MAJOR.
  int computeMinor = 0;                   ///< COMPUTE_CAPABILITY_MINOR.
  int multiprocessors = 0;                ///< MULTIPROCESSOR_COUNT.
  std::size_t totalBytes = 0;             ///< cuDeviceTotalMem.
  char pciBusId[32] = {};                 ///< cuDeviceGetPCIBusId, e.g. "0000:00:06.0".
  int computeMode = 0;                    ///< COMPUTE_MODE, a CUcomputemode.
  int vmm = 0;                            ///< VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED.
  Granularity granularity;                ///< Device memory; asked only where vmm is set.
  int managed = 0;                        ///< MANAGED_MEMORY.
  int concurrentManaged = 0;              ///< CONCURRENT_MANAGED_ACCESS.
  int pageable = 0;                       ///< PAGEABLE_MEMORY_ACCESS.
  int pageableUsesHostPageTables = 0;     ///< PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES.
  int hostNumaIdAttribute = 0;            ///< HOST_NUMA_ID (-1: the system has no NUMA).
  memsamples::PciNumaNode hostNumaSysfs;  ///< `<sysfs>/bus/pci/devices/<bdf>/numa_node`.
  int hostNumaVmm = 0;                    ///< HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED.
  int hostNumaLocationId = 0;       ///< The HOST_NUMA location's id; set where hostNumaVmm is.
  Granularity hostNumaGranularity;  ///< At that location; asked only where hostNumaVmm is set.
  int memoryPools = 0;              ///< MEMORY_POOLS_SUPPORTED.
  int memoryClockKHz = 0;           ///< MEMORY_CLOCK_RATE.
  int busWidthBits = 0;             ///< GLOBAL_MEMORY_BUS_WIDTH.
  double peakGBps = 0;              ///< memory clock x 2 x bus width / 8.
  AtomicAnswers hostAtomics;        ///< cuDeviceGetHostAtomicCapabilities.
};

/// What one device (the accessor) may do with another's (the owner's) memory.
struct PeerAnswer {
  int accessor = 0;   ///< The device that would read and write.
  int owner = 0;      ///< The device whose memory it is.
  int canAccess = 0;  ///< cuDeviceCanAccessPeer.
  int rank = 0;       ///< P2P PERFORMANCE_RANK; asked only where canAccess is set.
  int atomics = 0;    ///< P2P NATIVE_ATOMIC_SUPPORTED; asked only where canAccess is set.
  CUresult rankAnswer = CUDA_SUCCESS;     ///< What the rank query returned; else rank is unknown.
  CUresult atomicsAnswer = CUDA_SUCCESS;  ///< What the atomics query returned.
  AtomicAnswers atomicOperations;  ///< cuDeviceGetP2PAtomicCapabilities; where canAccess is set.
};

/// "CUDA driver 13.0, 1 device" and a blank line. cuDriverGetVersion's number is
/// 1000 x major + 10 x minor.
void reportDriver(int driverVersion, int deviceCount, std::ostream& out);

/// Prints @p answers as a table ("Device N", a label and a value per line) and appends them to
/// @p json as one object. @p driverVersion names the driver where an entry point is missing.
void reportDevice(const DeviceAnswers& answers, int driverVersion, std::ostream& out,
                  memsamples::JsonArray& json);

/// Prints the peer-access matrix of @p deviceCount devices from @p peers, one answer per ordered
/// pair of different devices, and appends each to @p json: Common's describePeerLinks()
/// (support/device_matrix.hpp), the matrix 05_p2pMemMap prints too (row = owner, column =
/// accessor). A pair whose attributes the driver refused is "?" in the matrix, with each
/// refusal below it, and in the JSON (`attributeQueryFailed`) instead of the values. Then the
/// native atomic operations of each pair that can access the other (@p atomicsJson, one object
/// per pair), a refusal as "?" with the reason; one line where the driver lacks the entry point
/// (named with @p driverVersion), or where there is no pair to ask about.
void reportPeers(const std::vector<PeerAnswer>& peers, int deviceCount, int driverVersion,
                 std::ostream& out, memsamples::JsonArray& json,
                 memsamples::JsonArray& atomicsJson);

/**
 * The verdict on one device: whether its answers agree with each other. A device that reports
 * VMM support must report a non-zero granularity with the recommended one a multiple of the
 * minimum, for device memory and for the HOST_NUMA location; one that reports concurrent managed
 * access must report managed memory. Pure (unit tested in ctest/unit/memoryQueryDrv).
 */
bool answersAgree(const DeviceAnswers& answers);
