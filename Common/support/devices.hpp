/**
 * @file devices.hpp
 * @brief The rules behind device selection and driver checks, as plain functions of plain data,
 *        and the device facts that measure files and helpers plan with.
 *
 * memsamples::selectDevice() and memsamples::checkDriverInit() (memsamples.hpp) are what a lesson
 * calls; they read the driver and decide with the functions here, which touch no driver and are
 * unit tested on machines without a GPU: the default device, a `--device` check, which cuInit()
 * results mean "no usable GPU", whether the driver is new enough, the peer topology of a
 * machine, the VMM granularity to use and the theoretical memory bandwidth.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <string>
#include <vector>

namespace memsamples {

/// What makes a device "fast" for the default choice: multiprocessors x clock.
struct DeviceScore {
  int multiprocessors = 0;  ///< CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
  int clockKHz = 0;         ///< CU_DEVICE_ATTRIBUTE_CLOCK_RATE
};

/// The index of the device with the largest multiprocessors x clock; a tie goes to the lower
/// index, as in cuda-samples.
/// @throws std::invalid_argument when @p devices is empty.
int pickFastestDevice(const std::vector<DeviceScore>& devices);

/// Checks a `--device` value against the number of devices of this machine.
/// @return @p requested as an int when it is in [0, @p deviceCount).
/// @throws UsageError naming the value and how many devices exist otherwise.
int validateDeviceOrdinal(long long requested, int deviceCount);

/// Whether a cuInit() result means "this machine cannot run CUDA programs" rather than "the
/// program is wrong": no device, a stub or mismatched driver library, an unsupported
/// forward-compatibility setup, or a device that is busy or unavailable. Throws nothing.
bool isUnusableDriverResult(CUresult result);

/// A version as cuDriverGetVersion and CUDA_VERSION give it (1000 x major + 10 x minor) the way
/// NVIDIA writes it: "12.4" for 12040. Throws nothing but std::bad_alloc.
std::string formatCudaVersion(int version);

/**
 * Why a driver that supports CUDA @p driverVersion cannot run a sample built with CUDA
 * @p builtVersion (both as cuDriverGetVersion gives them): the driver must be at least as new as
 * the toolkit, because cuda.h binds the samples to that toolkit's entry points.
 * @return the reason, naming both versions, or "" when the driver is new enough.
 */
std::string driverTooOldReason(int driverVersion, int builtVersion);

/// What the driver says about the devices of this machine, as plain data: a sample reads it
/// once (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, cuDeviceCanAccessPeer) and
/// plans with it, so every machine shape can be tested without a GPU.
struct DeviceTopology {
  /// Per device ordinal: CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED != 0.
  std::vector<bool> vmmSupported;
  /// canAccessPeer[a][b]: cuDeviceCanAccessPeer(a, b), device a can access device b's memory.
  /// The diagonal is true. Not necessarily symmetric.
  std::vector<std::vector<bool>> canAccessPeer;
  /// The number of devices: the size of vmmSupported. Throws nothing.
  int deviceCount() const noexcept { return static_cast<int>(vmmSupported.size()); }
  /// Checks that canAccessPeer is deviceCount() x deviceCount().
  /// @throws std::invalid_argument naming the wrong row or column count otherwise.
  void checkShape() const;
};

/**
 * The VMM granularity to size and align an allocation of @p bytes with: @p recommended
 * (CU_MEM_ALLOC_GRANULARITY_RECOMMENDED, the driver's choice for speed) once @p bytes fills at
 * least one such unit, else @p minimum (CU_MEM_ALLOC_GRANULARITY_MINIMUM, what cuMemCreate and
 * cuMemMap require), so that a small allocation is not padded to a large unit. A @p recommended
 * that is 0 or not a multiple of @p minimum cannot serve and is passed over.
 * @return @p recommended or @p minimum.
 * @throws std::invalid_argument for a @p minimum of 0.
 */
std::size_t allocationGranularity(std::size_t bytes, std::size_t minimum, std::size_t recommended);

/// The theoretical DRAM bandwidth in GB/s (1 GB = 1e9 bytes) of a memory clock in kHz and a bus
/// width in bits: clock x 2 transfers per clock (DDR) x bus width / 8. Throws nothing.
double peakBandwidthGBps(int memoryClockKHz, int busWidthBits);

/// peakBandwidthGBps() from @p device's CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE and
/// CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH. Needs cuInit().
/// @throws CudaError when the driver cannot answer.
double theoreticalPeakGBps(CUdevice device);

}  // namespace memsamples
