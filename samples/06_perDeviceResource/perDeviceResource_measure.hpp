/**
 * @file perDeviceResource_measure.hpp
 * @brief What 06_perDeviceResource measures and reports beside its lesson: reportRun(), which
 *        prints each step's lines and JSON and checks its answers (reportStep(), one call per
 *        part), and the allocate / free latency table of every resource kind (step 7).
 *
 * **How the latency is measured**, the same way for every kind so that the rows compare: per
 * batch, the N allocate calls back to back, then one cuStreamSynchronize; then the N deallocate
 * calls, then one cuStreamSynchronize, timed with the host clock (these are host-side calls, and
 * a stream-ordered allocation's enqueue is host work no pair of events could bracket). Times are
 * per allocation (batch time / N), the median over the batches. For the stream-ordered pool the
 * calls only enqueue, so its "+sync" columns count the work; the ratio compares allocate + sync.
 * The pool is measured twice: with its release threshold as found, and at the maximum
 * (cuMemPoolSetAttribute; freed memory stays in the pool). Two baselines from the same run: an
 * idle-stream cuStreamSynchronize and a cuMemGetInfo (the managed guard's call).
 */
#pragma once

#include <cuda.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "memory_resource.hpp"
#include "memsamples.hpp"
#include "resources.hpp"

namespace memsamples::resource {

/// @name The latency plan (no driver call; unit tested)
/// @{

/// The most memory one batch keeps allocated at once (1 GiB).
inline constexpr std::uint64_t kLatencyBatchBytes = std::uint64_t{1} << 30;

/// The small sizes of the table (4 KiB and 64 KiB) and @p largeBytes, ascending, without
/// duplicates. @throws std::invalid_argument for 0.
std::vector<std::uint64_t> latencySizes(std::uint64_t largeBytes);

/// Allocations to time at @p bytes: @p iterations above 1 MiB (they pin, map or create whole
/// pages), ten times as many up to 1 MiB (quick and noisier).
/// @throws std::invalid_argument when @p iterations is below 1 or ten times it overflows.
int latencyRepetitions(std::uint64_t bytes, int iterations);

/// @c batches batches of @c batchSize allocations, all of a batch alive at once.
struct LatencyBatches {
  int batchSize = 1;  ///< N: allocations per batch.
  int batches = 1;    ///< Timed batches; the table shows the median over them.
};

/**
 * Splits @p repetitions allocations of @p bytes into batches: N = repetitions / 5 (about five
 * batches, so that the median has several samples), at least 1, at most 10 and
 * @p maxBatchBytes / @p bytes; then as many whole batches as fit (at least one).
 * 200 x 4 KiB -> 20 x 10; 20 x 64 MiB -> 5 x 4.
 * @throws std::invalid_argument for 0 bytes or fewer than 1 repetition.
 */
LatencyBatches planLatencyBatches(std::uint64_t bytes, int repetitions,
                                  std::uint64_t maxBatchBytes = kLatencyBatchBytes);

/// One row of the table; every time is per allocation (TimingStats::samples = batches).
struct LatencyRow {
  std::string resource;        ///< The row's label.
  std::uint64_t bytes = 0;     ///< The allocation size.
  int batchSize = 1;           ///< N.
  TimingStats allocate;        ///< The N allocate calls / N, ms.
  TimingStats allocateSync;    ///< (The N allocate calls + one cuStreamSynchronize) / N, ms.
  TimingStats deallocate;      ///< The N deallocate calls / N, ms.
  TimingStats deallocateSync;  ///< (The N deallocate calls + one cuStreamSynchronize) / N, ms.
};

/// @p row's allocateSync median over the one of @p referenceResource's row of the same size;
/// nullopt when there is no such row or its median is 0.
std::optional<double> allocateRatio(const std::vector<LatencyRow>& rows, const LatencyRow& row,
                                    const std::string& referenceResource);

/// The table: per row the label, size, N x batches, the four times in microseconds and the
/// allocate + sync ratio against @p referenceResource ("n/a" without a reference row).
std::string formatLatencyTable(const std::vector<LatencyRow>& rows,
                               const std::string& referenceResource);

/// @}

/// @name Measuring (host clock; the driver through the resources and cuStreamSynchronize)
/// @{

/// One row, the one timing loop of every kind: @p warmup untimed batches, then plan.batches
/// timed ones of @p resource at @p bytes on @p stream, which must be idle.
/// @throws what the resource or cuStreamSynchronize throw.
LatencyRow measureLatency(const std::string& label, MemoryResource& resource, std::uint64_t bytes,
                          int warmup, const LatencyBatches& plan, CUstream stream);

/// What step 7's latency table is run with.
struct LatencySettings {
  std::uint64_t largeBytes = 64ull << 20;  ///< `--large-size`.
  int iterations = 20;                     ///< `--iterations`.
  int warmup = 3;                          ///< `--warmup`.
};

/// Step 7: the baselines, a row per kind and size (the device pool twice, with the threshold as
/// found and at its maximum, which is put back), the table with what its labels include, and the
/// JSON `latency` and `latencyBaselines`. @throws CudaError.
void reportLatency(const std::vector<KindResource>& resources, int ordinal, CUstream stream,
                   const LatencySettings& settings, std::ostream& out, JsonObject& json);

/// @}

/// @name The run's report and verdict
/// @{

/// The checks of a run, recorded rather than thrown, so that the verdict lists every one that
/// failed. Thread-safe.
class Checks {
 public:
  /// Records one check; @p what says what was expected.
  void expect(bool ok, const std::string& what);
  /// "Checks: N of M passed" and a FAILED line per failure; the JSON `checks` and
  /// `failedChecks`. @return Pass when none failed.
  Verdict report(std::ostream& out, JsonObject& json);

 private:
  std::mutex mutex_;
  int count_ = 0;
  std::vector<std::string> failures_;
};

/// What the lesson's steps returned, and the command line's values, for reportStep(): a plain
/// struct the lesson fills.
struct RunRecord {
  /// Reports to @p into.
  explicit RunRecord(Report& into) : report(into) {}
  Report& report;                             ///< The lines and the JSON.
  LatencySettings latency;                    ///< `--large-size`, `--iterations`, `--warmup`.
  bool skipLatency = false;                   ///< `--no-latency`.
  int threads = 4;                            ///< `--threads`, for the lines of steps 1 and 6.
  RegistryRun core;                           ///< Steps 2-5, the core (no answers: not run).
  MemoryResource* initial = nullptr;          ///< askRegistry(): getCurrentDeviceResource().
  MemoryResource* perDeviceAnswer = nullptr;  ///< askRegistry(): getPerDeviceResource() of it.
  std::string outOfRange;  ///< What getPerDeviceResource(count) threw; empty if nothing.
  Checks checks;           ///< Every check so far.
};

/// Step 7's own questions to the registry, with the chosen device's context current: which
/// resource the current device and getPerDeviceResource() of the chosen device answer (after
/// step 6, its initial one), and what getPerDeviceResource() of an id that does not exist
/// (`devices.count`) throws. The answers go into @p record. @throws what the registry throws
/// for anything but that id.
void askRegistry(RunRecord& record, const Devices& devices);

/// What reportStep() prints, by part; the lesson's step each part belongs to is in brackets.
enum ReportPart : int {
  kDevicesPart = 1,    ///< [1] the vectors and the GPUs used.
  kRegistryPart = 2,   ///< [7] the registry's answers (askRegistry()) and their checks.
  kResourcesPart = 3,  ///< [6] the resources made, one line per kind, and the next heading.
  kKindPart = 4,       ///< [6] one kind, @p kind of reportStep().
  kPerDevicePart = 5,  ///< [6] the resource per device, every device back on its initial one.
  kVerdictPart = 6,    ///< [7] the latency table, the waived kinds, the warnings and the checks.
  kCorePart = 7,       ///< [2-5] the core's run, RunRecord::core.
};

/**
 * Prints part @p part's lines (ReportPart), adds its JSON and records its checks against RMM's
 * rules: kDevicesPart the vectors; kRegistryPart the registry's answers; kResourcesPart the
 * resources (and the heading of the kinds); kKindPart one kind, @p kind (set returned the initial
 * resource, every thread got the one set, C is exact, reset returned it); kPerDevicePart the
 * resource per device and every device back on its initial one; kVerdictPart the latency table,
 * the warnings and the checks; kCorePart the core's run (set returned the initial resource,
 * every thread got the resource reset later removed, which is not the initial one, C is exact).
 * @return Pass, except for kVerdictPart: Pass when every check passed. @throws CudaError.
 */
Verdict reportStep(int part, RunRecord& record, const Devices& devices,
                   const Resources* resources = nullptr, const KindResource* kind = nullptr);

/// Step 7 of the lesson: reportStep() of the parts in the order of the lesson's steps (1, the
/// core, the resources, each kind that was made, per device, the registry's answers), then of
/// kVerdictPart. @return its verdict. @throws CudaError.
Verdict reportRun(RunRecord& record, const Devices& devices, const Resources& resources);

/// @}

}  // namespace memsamples::resource
