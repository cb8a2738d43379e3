/**
 * @file fake_cuda_driver.hpp
 * @brief How a unit test controls and inspects the fake CUDA driver of fake_cuda_driver.cpp.
 *
 * fake_cuda_driver.cpp defines, with C linkage, the cu* functions that striped_vmm.cpp,
 * run_plan.cpp and memsamples_check.cpp call, so that the sample's real code links against it
 * instead of libcuda (a link seam); fake_common.cpp stands in for the part of Common's driver half
 * that run_plan.cpp uses. Behind them is one fake machine per process: devices with a VMM flag,
 * granularities and free memory, a peer-access matrix, the current contexts, and the
 * reservations, physical allocations and mappings the calls create. Each call checks the rules the CUDA documentation states and answers
 * CUDA_ERROR_INVALID_VALUE when one is broken, so code that only works by luck on a real driver
 * fails here too. A test can make the Nth call of any function fail without touching the machine,
 * which is how a real driver reports an error.
 *
 * The machine is global, like a driver; reset() it at the start of every test.
 */
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fake {

constexpr std::uint64_t kDefaultGranularity = 2ull << 20;
/// Larger than the minimum (the H200 reports 2 MiB for both), so that code asking for the wrong
/// one gets a wrong layout here.
constexpr std::uint64_t kDefaultRecommendedGranularity = 32ull << 20;

/// One GPU of the fake machine.
struct Device {
  bool vmm = true;                                  ///< VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED
  std::uint64_t granularity = kDefaultGranularity;  ///< CU_MEM_ALLOC_GRANULARITY_MINIMUM
  /// CU_MEM_ALLOC_GRANULARITY_RECOMMENDED
  std::uint64_t recommended = kDefaultRecommendedGranularity;
  std::uint64_t freeBytes = 64ull << 30;  ///< What cuMemGetInfo answers in a context of it.
};

/// The shape of the fake machine.
struct Machine {
  std::vector<Device> devices{Device{}};
  /// peers[a][b] == '1': device a can access device b's memory (cuDeviceCanAccessPeer). One row
  /// per device; the diagonal is ignored. Empty: every pair can.
  std::vector<std::string> peers;
};

/// Forgets every reservation, allocation, mapping, recorded call and planned failure, and
/// installs @p machine.
void reset(const Machine& machine = Machine{});

/// The @p nth call (1-based, counted from reset()) of the driver function @p function (as cuda.h
/// names it for people: "cuMemMap") returns @p result and changes nothing.
void failCall(const std::string& function, int nth, CUresult result = CUDA_ERROR_OUT_OF_MEMORY);

/// Every cu* call since reset(), in order, failed ones included.
const std::vector<std::string>& callLog();
/// callLog() without the error-text lookups (cuGetErrorName, cuGetErrorString).
std::vector<std::string> driverCalls();
/// How often @p function was called since reset().
int callCount(const std::string& function);

/// What the machine still holds.
struct Leftovers {
  std::size_t reservations = 0;       ///< Address ranges not freed.
  std::size_t mappings = 0;           ///< Mappings not unmapped.
  std::size_t unreleasedHandles = 0;  ///< cuMemCreate handles not released.
  std::uint64_t physicalBytes = 0;    ///< Memory held by handles or mappings, on any device.
  bool none() const {
    return reservations == 0 && mappings == 0 && unreleasedHandles == 0 && physicalBytes == 0;
  }
  /// "2 reservations, 1 mapping, 0 handles, 2097152 bytes": for failure messages.
  std::string describe() const;
};
Leftovers leftovers();

/// Physical memory allocated on @p device and not yet freed.
std::uint64_t bytesOn(int device);
/// The device whose memory is mapped at @p address (the start of a mapping), or -1.
int deviceMappedAt(CUdeviceptr address);
/// The access cuMemSetAccess granted on the mapping that starts at @p address, in the order given.
std::vector<CUmemAccessDesc> accessAt(CUdeviceptr address);
/// The alignment the most recent successful cuMemAddressReserve asked for.
std::uint64_t lastReserveAlignment();

/// The ordinal of a CUdevice handle from cuDeviceGet, or -1 when it is none.
int ordinalOfDevice(CUdevice device);
/// Makes a context of device @p ordinal current, as the lesson's cuCtxCreate does.
void makeCurrent(int ordinal);
/// The devices of the contexts on this thread's stack, the current one last.
std::vector<int> currentDevices();
/// Primary-context retains not yet released (cuDevicePrimaryCtxRetain / Release), all devices.
int retainedPrimaryContexts();

}  // namespace fake
