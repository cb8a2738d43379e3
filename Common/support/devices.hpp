/**
 * @file devices.hpp
 * @brief The rules behind device selection and driver checks, as plain functions of plain data,
 *        and the device facts that measure files and helpers plan with.
 *
 * memsamples::selectDevice(), memsamples::checkDriverInit() and memsamples::requireEntryPoint()
 * (memsamples.hpp) are what a lesson calls; they read the driver and decide with the functions
 * here, which touch no driver and are unit tested on machines without a GPU: the default device,
 * a `--device` check, what a compute mode allows, which GPU beside the chosen one a run of
 * several GPUs leaves out, which cuInit() results mean "no usable GPU",
 * whether the driver is new enough, the peer topology of a machine, the VMM granularity to use
 * and the theoretical memory bandwidth.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memsamples.hpp"  // DeviceUse

namespace memsamples {

/// What makes a device "fast" for the default choice: multiprocessors x clock; and whether it can
/// be chosen at all: its compute mode.
struct DeviceScore {
  int multiprocessors = 0;                   ///< CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
  int clockKHz = 0;                          ///< CU_DEVICE_ATTRIBUTE_CLOCK_RATE
  int computeMode = CU_COMPUTEMODE_DEFAULT;  ///< CU_DEVICE_ATTRIBUTE_COMPUTE_MODE (a CUcomputemode)
};

/// The index of the device with the largest multiprocessors x clock; a tie goes to the lower
/// index, as in cuda-samples.
/// @throws std::invalid_argument when @p devices is empty.
int pickFastestDevice(const std::vector<DeviceScore>& devices);

/// A compute mode as NVIDIA writes it, with its cuda.h name: "PROHIBITED
/// (CU_COMPUTEMODE_PROHIBITED)"; a value cuda.h does not name is "<n> (unknown to this build)".
/// Throws nothing but std::bad_alloc.
std::string computeModeName(int mode);

/**
 * Why device @p ordinal, in compute mode @p mode, cannot be used as @p use says: PROHIBITED admits
 * no context ("device 0 is in compute mode PROHIBITED (CU_COMPUTEMODE_PROHIBITED): no context can
 * be created"), EXCLUSIVE_PROCESS a context of one process at a time, which is no use to a sample
 * of several processes. DEFAULT, and a mode this build does not know, are left to the driver.
 * @return the reason, naming the device and the mode, or "" when the mode allows @p use.
 */
std::string computeModeProblem(int ordinal, int mode, DeviceUse use);

/// What a sample that uses several GPUs learned about one GPU beside the one it chose (a peer, a
/// team member), before deciding whether it takes part: plain data, so the decision is testable.
struct ExtraGpu {
  int ordinal = 0;  ///< Its ordinal.
  /// CU_DEVICE_ATTRIBUTE_COMPUTE_MODE (a CUcomputemode).
  int computeMode = CU_COMPUTEMODE_DEFAULT;
  /// computeModeProblem() for it, or "" when its mode allows a context (or was checked before).
  std::string computeModeProblem;
  /// Why the driver refused it a context (the failed call and its error), or "" when it gave one.
  std::string contextRefused;
  std::uint64_t freeBytes = 0;  ///< cuMemGetInfo in its context; 0 when it has none.
};

/// An ExtraGpu from a sample's own record of a GPU (any struct with ExtraGpu's members ordinal,
/// computeMode, contextRefused and freeBytes), with @p computeModeProblem as the sample found it
/// (computeModeProblem()), or "" where its mode was checked before. Throws nothing but
/// std::bad_alloc.
template <typename Record>
ExtraGpu extraGpuOf(const Record& record, std::string computeModeProblem) {
  ExtraGpu gpu;
  gpu.ordinal = record.ordinal;
  gpu.computeMode = record.computeMode;
  gpu.computeModeProblem = std::move(computeModeProblem);
  gpu.contextRefused = record.contextRefused;
  gpu.freeBytes = record.freeBytes;
  return gpu;
}

/// What a run places on every GPU it uses: @c count buffers of @c bytes each.
struct BuffersPerGpu {
  int count = 1;                 ///< How many buffers; at least 1.
  std::uint64_t bytes = 0;       ///< The bytes of each.
  std::string noun = "buffers";  ///< What a message calls them: "buffers", "vectors".
};

/**
 * Why @p gpu cannot hold a context, from what the sample learned before using it.
 * @return @c gpu.computeModeProblem when it is set; else, when the driver refused a context,
 *         "device N refused a context (<contextRefused>)", to which a GPU in EXCLUSIVE_PROCESS
 *         mode adds ": it is in compute mode EXCLUSIVE_PROCESS (CU_COMPUTEMODE_EXCLUSIVE_PROCESS)
 *         and another process holds it"; std::nullopt when it has a context.
 * Throws nothing but std::bad_alloc. A GPU the user named must take part: a sample waives with
 * this reason rather than leaving it out.
 */
std::optional<std::string> whyNoContext(const ExtraGpu& gpu);

/**
 * Why a run leaves out @p gpu, a GPU beside the chosen one that the user did not name: it cannot
 * hold a context (whyNoContext()), or @p need does not fit in the share chooseBufferBytes() leaves
 * a device, 80 % of its free memory, so that a GPU nobody named never shrinks the run.
 * @param gpu what the sample learned about the GPU (its mode, its context, its free memory).
 * @param need the buffers the run would place on it.
 * @param hint how the user can make it take part all the same ("name it with --devices to use
 *        it"), added to a memory reason in parentheses; "" adds nothing.
 * @return whyNoContext(), or "device N has only <free> free, too little for <count> <noun> of
 *         <bytes> (<hint>)"; std::nullopt when @p gpu can take part.
 * Throws nothing but std::bad_alloc; @c need.count must be at least 1.
 */
std::optional<std::string> whyLeftOut(const ExtraGpu& gpu, const BuffersPerGpu& need,
                                      std::string_view hint);

/**
 * Why CUDA_ERROR_DEVICE_UNAVAILABLE is the machine's state rather than a fault of the sample,
 * from the compute modes of every device (@p computeModes, indexed by ordinal): a device in
 * EXCLUSIVE_PROCESS (another process may hold its one context) or PROHIBITED. The explanation
 * names each such device and its mode; "" when every device is in DEFAULT mode, or the modes are
 * unknown (empty): then nothing explains the answer and it is an error of the run.
 */
std::string deviceUnavailableExplanation(const std::vector<int>& computeModes);

/// Where runSample() gets the compute modes of every device (indexed by ordinal) when a CudaError
/// says CUDA_ERROR_DEVICE_UNAVAILABLE. It must not throw: {} when the driver cannot tell.
using ComputeModeSource = std::vector<int> (*)();
/// Installs @p source for runSample(): checkDriverInit() installs a driver query, unit tests a
/// fake; nullptr removes it (then nothing explains the answer, and it is an error of the run).
void setComputeModeSource(ComputeModeSource source);
/// The source installed last, or nullptr.
ComputeModeSource computeModeSource();

/**
 * The ordinal selectDevice() returns, from what the driver says about each device (@p devices,
 * indexed by ordinal): @p requested (`--device`), checked against the count and then against its
 * compute mode; or else the fastest device (pickFastestDevice()) among those whose compute mode
 * allows @p use, so that one PROHIBITED device does not stop a machine that has others.
 * @throws WaivedError when there is no device or no device that can be used (naming each one's
 *         mode), or the requested one's mode forbids @p use; UsageError when @p requested is out
 *         of range.
 */
int chooseDevice(const std::vector<DeviceScore>& devices, const std::optional<long long>& requested,
                 DeviceUse use);

/// For a sample that picks its devices itself (every device, a pair, a team): waives when
/// @p device's compute mode forbids @p use (computeModeProblem()). Needs cuInit().
/// @throws WaivedError naming the device and the mode; CudaError when the driver cannot answer.
void requireComputeMode(CUdevice device, DeviceUse use = DeviceUse::OneProcess);

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
 * @p builtVersion (both as cuDriverGetVersion gives them): its major version is older. A driver
 * of the same major version runs it (NVIDIA's minor version compatibility: a CUDA 13.x program
 * on any CUDA 13 driver, R580 or newer), with the entry points that driver has. Those the samples
 * call are all in CUDA 13.0; where a newer toolkit's build may call one an older driver lacks, 03
 * and 09 check for their batch entry points first (requireEntryPoint(),
 * missingEntryPointReason()), and the other samples do not check.
 * @return the reason, naming both versions, or "" when the driver can run the sample.
 */
std::string driverTooOldReason(int driverVersion, int builtVersion);

/// Why a sample built with CUDA @p builtVersion cannot run where the driver, of CUDA
/// @p driverVersion, lacks the entry point @p name: "the NVIDIA driver (CUDA 13.0) has no
/// cuMemPrefetchBatchAsync, which this sample (built with CUDA 13.2) needs", and which driver
/// has it where the driver is older than the toolkit. Throws nothing but std::bad_alloc.
std::string missingEntryPointReason(std::string_view name, int driverVersion, int builtVersion);

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
