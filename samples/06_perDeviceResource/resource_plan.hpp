/**
 * @file resource_plan.hpp
 * @brief The CUDA-free decisions of 06_perDeviceResource: which resource kinds exist and how they
 *        are named on the command line, which kind each device gets, which sizes the latency
 *        benchmark measures, how often and in which batches, the latency table, and which
 *        device's free memory limits the vector size.
 *
 * Part of `perDeviceResource_logic`; unit tested in ctest/unit/perDeviceResource/.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memsamples.hpp"

namespace memsamples::resource {

/// The kinds of memory resource the sample builds (cuda_resources.hpp, numa_resource.hpp).
enum class ResourceKind {
  Device,   ///< Stream-ordered device memory from the device's default pool (the initial one).
  Managed,  ///< cuMemAllocManaged through 03's ManagedBuffer.
  Pinned,   ///< Page-locked, device-mapped host memory (cuMemHostAlloc).
  Numa,     ///< Host memory bound to the GPU's nearest NUMA node (04), then cuMemHostRegister.
  Vmm,      ///< A striped VMM range (02's StripedVmmRange).
};

/// Every kind, in the order the sample runs them.
std::vector<ResourceKind> allResourceKinds();

/// The command-line name: "device", "managed", "pinned", "numa", "vmm".
const char* kindName(ResourceKind kind) noexcept;

/**
 * Parses a `--resources` value: a comma-separated list of kind names, e.g. "device,vmm".
 * @throws UsageError naming @p option for an empty list or entry, an unknown name (the message
 *         lists the valid ones) or a name given twice.
 */
std::vector<ResourceKind> parseResourceKinds(std::string_view text, std::string_view option);

/**
 * The kind each device gets in the multi-device phase: device i gets `kinds[(i + 1) % n]`, so
 * that neighbouring devices use different kinds and device 0 does not simply keep the initial
 * (device-memory) resource when it is first in the list. With one kind, every device gets it.
 * @throws std::invalid_argument for an empty @p kinds or a @p deviceCount below 1.
 */
std::vector<ResourceKind> assignKindsToDevices(const std::vector<ResourceKind>& kinds,
                                               int deviceCount);

/// The small sizes of the latency benchmark: 4 KiB and 64 KiB.
inline constexpr std::uint64_t kSmallLatencySizes[] = {4096, 65536};

/**
 * The sizes the latency benchmark measures: the small sizes and @p largeBytes, ascending,
 * without duplicates.
 * @throws std::invalid_argument for 0.
 */
std::vector<std::uint64_t> latencySizes(std::uint64_t largeBytes);

/**
 * Repetitions for one size: @p iterations (`--iterations`) for sizes above 1 MiB, whose
 * allocations take long (they pin, map or create whole pages), and ten times as many for sizes
 * up to 1 MiB, which are quick and noisier.
 * @throws std::invalid_argument when @p iterations is below 1 or ten times it overflows.
 */
int latencyRepetitions(std::uint64_t bytes, int iterations);

/// The most allocations of one latency batch (see planLatencyBatches()).
inline constexpr int kMaxLatencyBatch = 10;
/// How many batches planLatencyBatches() aims for, so that the median has several samples.
inline constexpr int kTargetLatencyBatches = 5;
/// The most memory one latency batch keeps allocated at once (1 GiB).
inline constexpr std::uint64_t kLatencyBatchBytes = std::uint64_t{1} << 30;

/**
 * How the latency of one size is measured: @c batches batches of @c batchSize allocations. Every
 * resource is timed the same way (the sample's step 6): the batch's allocate calls back to back,
 * then one cuStreamSynchronize; then its deallocate calls, then one cuStreamSynchronize.
 */
struct LatencyBatches {
  int batchSize = 1;  ///< N: allocations per batch, all alive at once.
  int batches = 1;    ///< Timed batches; the table shows the median over them.
};

/**
 * Splits @p repetitions allocations of @p bytes into batches: N = repetitions /
 * kTargetLatencyBatches, at least 1 and at most kMaxLatencyBatch and @p maxBatchBytes / @p bytes
 * (so a batch never holds more than @p maxBatchBytes, unless one allocation is larger); then as
 * many whole batches as fit in @p repetitions (at least one). Examples with the defaults:
 * 200 x 4 KiB -> 20 batches of 10; 20 x 64 MiB -> 5 batches of 4.
 * @throws std::invalid_argument for 0 bytes or fewer than 1 repetition.
 */
LatencyBatches planLatencyBatches(std::uint64_t bytes, int repetitions,
                                  std::uint64_t maxBatchBytes = kLatencyBatchBytes);

/// The measured latency of one resource at one size. Every time is *per allocation*: the time of
/// one batch divided by its N, median over the batches (TimingStats::samples = batches).
struct LatencyRow {
  std::string resource;        ///< The resource's label in the table.
  std::uint64_t bytes = 0;     ///< The allocation size.
  int batchSize = 1;           ///< N, allocations per batch.
  TimingStats allocate;        ///< The N allocate calls / N, ms (the enqueue when stream-ordered).
  TimingStats allocateSync;    ///< (The N allocate calls + one cuStreamSynchronize) / N, ms.
  TimingStats deallocate;      ///< The N deallocate calls / N, ms.
  TimingStats deallocateSync;  ///< (The N deallocate calls + one cuStreamSynchronize) / N, ms.
};

/// allocateSync median of @p row over the one of the row of @p referenceResource at the same
/// size (both measured the same way); nullopt when there is no such row or its median is 0.
std::optional<double> allocateRatio(const std::vector<LatencyRow>& rows, const LatencyRow& row,
                                    const std::string& referenceResource);

/**
 * The latency table: one line per row with the resource, the size, N x batches, the median
 * allocate, allocate + sync, deallocate and deallocate + sync times per allocation in
 * microseconds, and the allocate + sync ratio against @p referenceResource at the same size
 * ("n/a" when it has no row of that size).
 */
std::string formatLatencyTable(const std::vector<LatencyRow>& rows,
                               const std::string& referenceResource);

/// The free memory of one device (a CUDA-free record of a cuMemGetInfo answer).
struct DeviceFreeMemory {
  int device = 0;               ///< The device ordinal.
  std::uint64_t freeBytes = 0;  ///< Its free memory in bytes.
};

/**
 * The device with the least free memory of @p devices (the first one on a tie): every device
 * that takes part allocates buffers of the same size, so the size must fit the smallest.
 * @throws std::invalid_argument when @p devices is empty.
 */
DeviceFreeMemory smallestFreeMemory(const std::vector<DeviceFreeMemory>& devices);

}  // namespace memsamples::resource
