/**
 * @file managedAdvisePrefetch_measure.hpp
 * @brief 03_managedAdvisePrefetch's run: its options and plan, the checks of the lesson's steps,
 *        and its measurements, one call each, every figure next to a reference of the same run.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "managed_logic.hpp"
#include "memsamples.hpp"
#include "support/vector_add.hpp"

/// The sample's command line.
struct ManagedOptions {
  memsamples::CommonOptions common;                       ///< `--device`, `--iterations`, ...
  std::optional<std::uint64_t> sizeBytes;                 ///< `--size`: bytes per vector.
  std::optional<std::uint64_t> rangeBytes = 64ull << 10;  ///< `--range-size` of the benchmark.
  std::vector<int> batchCounts;  ///< `--batch-counts`; empty: applyRunDefaults() chooses.
  int migrationIterations = 5;   ///< `--migration-iterations`: runs that move whole vectors.
  bool full = false;        ///< `--full`: the benchmark sizes behind the course's plots.
  bool noPrefetch = false;  ///< `--no-prefetch`: step 5 leaves the moves to demand paging.
  bool verbose = false;     ///< `--verbose`: every check of steps 3-8 on its own line.
};

/// The smallest vector: step 6 cuts each one into ten 64 KiB-aligned chunks.
inline constexpr std::uint64_t kMinVectorBytes = 1ull << 20;
/// Bytes per vector of a default run, a learner's first, in seconds (README, "Going deeper").
inline constexpr std::uint64_t kQuickVectorBytes = 64ull << 20;
/// Bytes per vector with `--full`, the size behind the course's plots.
inline constexpr std::uint64_t kFullVectorBytes = 1ull << 30;

/// The batch counts `--batch-counts` leaves to the run: 16 and 64 ranges by default, 16, 256 and
/// 4096 with `--full` (4096 ranges take about half a second a repetition).
void applyRunDefaults(ManagedOptions& options);

/// What planRun() found out and decided.
struct ManagedPlan {
  memsamples::managed::ManagedSupport support;  ///< The device's managed-memory attributes.
  memsamples::managed::ManagedSizes sizes;      ///< Bytes per vector and of the benchmark span.
  int ordinal = 0;                              ///< The device, as a CUmemLocation id names it.
  std::string deviceName;                       ///< For the JSON result.
  unsigned int grid = 0;                        ///< VecAdd_kernel blocks: every SM filled.
  unsigned int block = 256;                     ///< Threads per block.
  int accessedBySlots = 2;                      ///< Devices + 1 (the host): room for every ACCESSED_BY.
};

/**
 * Prints the device and what it supports of managed memory; throws WaivedError without managed
 * memory, or without concurrent managed access on every device. Then the sizes of the whole run,
 * checked once against the free memory of the current context's device (cuMemGetInfo) and of the
 * host (planManagedSizes: a `--size` that does not fit is refused), and @p kernel's grid.
 */
ManagedPlan planRun(const ManagedOptions& options, CUdevice device, CUfunction kernel,
                    memsamples::Report& report);

namespace memsamples::managed {
/// C read on the host, judged against no mismatch at all (@p expected is kExact).
Judgement judge(const VectorAddCheck& said, const VectorAddCheck& expected);
}  // namespace memsamples::managed

/// What a C = A + B check expects: not one element wrong.
inline const memsamples::VectorAddCheck kExact{};

/// Every check of the run, recorded (each failure: what, expected, got), and what the
/// measurements need: the run, A, B and C, and the figures for the summary.
struct Checks {
  /// The checks of a run planned as @p plan.
  Checks(memsamples::Report& report, const ManagedOptions& options, const ManagedPlan& plan);

  /// @name The lesson's checks (printed with `--verbose`, and always on failure)
  /// @{

  /// @p said, what the driver answered, against @p expected, by the rule
  /// memsamples::managed::judge() has for that kind of answer. @return true when it holds.
  template <typename Said, typename Expected>
  bool expect(const std::string& what, const Said& said, const Expected& expected) {
    return record(what, memsamples::managed::judge(said, expected));
  }
  /// All eight attributes of the range [@p ptr, @p ptr + @p bytes) (readRange()) against what the
  /// advice and the prefetches imply (memsamples::managed::ExpectedRange).
  bool expectRange(const std::string& what, CUdeviceptr ptr, std::size_t bytes,
                   const memsamples::managed::ExpectedRange& expected);
  /// C against A + B, element by element, on the host (@p abc: A, B and C), reading the managed
  /// pages themselves: their addresses seen as float*, no copies.
  bool expectSum(const std::string& what, const std::vector<CUdeviceptr>& abc);

  /// Step 5: C == A + B, read on the host; A read-mostly, last prefetched to the GPU (nowhere with
  /// `--no-prefetch`: faults record no prefetch); C kept on the host for the GPU (preferred
  /// location the host, accessed by the GPU), last prefetched to the host.
  void afterStep5(const std::vector<CUdeviceptr>& abc);
  /// Step 6: C == A + B, from the GPU's part and the CPU's; each range of @p batch names its own
  /// destination as its last prefetch location and carries no advice (the batch's shape goes into
  /// the JSON result, and is printed with `--verbose`); all of C, in two places, names none.
  void afterStep6(const std::vector<CUdeviceptr>& abc,
                  const memsamples::managed::PrefetchBatch& batch);
  /// Step 7: C == A + B, written by the GPU after the discard; C last prefetched to the GPU.
  void afterStep7(const std::vector<CUdeviceptr>& abc);

  /// The answer @p result of @p call, a driver call that may be unsupported: CUDA_SUCCESS returns
  /// true; CUDA_ERROR_NOT_SUPPORTED is said, and false returned (the run goes on without it); any
  /// other answer throws, as memsamples::check() does.
  bool checkOrNotSupported(CUresult result, const char* call);

  /// @}

  /// Where step 5 prefetched A and B last: the GPU, or nowhere with `--no-prefetch`.
  std::optional<CUmemLocation> prefetchedInputs() const {
    return options.noPrefetch ? std::nullopt : std::optional<CUmemLocation>(gpu);
  }
  /// All eight range attributes of [@p ptr, @p ptr + @p bytes), asked twice: eight
  /// cuMemRangeGetAttribute calls (one per attribute), then one cuMemRangeGetAttributes call for
  /// all eight. The two reads must agree (recorded as kRangeAttributeCount checks).
  /// @return the answers of the eight single calls.
  memsamples::managed::RangeAttributes readRange(CUdeviceptr ptr, std::size_t bytes);
  /// Records one judged answer as a check. @return true when it holds.
  bool record(const std::string& what, const memsamples::managed::Judgement& judgement);
  /// C against A + B on the measurements' vectors (vecAdd, hostA, hostB, hostC).
  memsamples::VectorAddCheck sum() const;

  memsamples::Report& report;     ///< Where the checks and measurements print.
  const ManagedOptions& options;  ///< The command line's choices.
  const ManagedPlan& plan;        ///< Sizes and capabilities, from planRun().
  std::size_t bytes;              ///< Bytes per vector.
  CUmemLocation gpu;              ///< The device.
  CUmemLocation host;             ///< The host.
  memsamples::Checklist list;     ///< Every check so far.
  bool discardSupported = true;   ///< Step 7's discard worked; 8d is skipped without it.

  /// @name Set by measureCosts(): the lesson's A, B and C, and the figures of the summary
  /// @{
  memsamples::VectorAddLaunch vecAdd;  ///< The kernel on A, B, C, the whole vectors.
  float* hostA = nullptr;              ///< A's managed address as the host's float*: no copy.
  float* hostB = nullptr;              ///< B's managed address as the host's float*.
  float* hostC = nullptr;              ///< C's managed address as the host's float*.
  double prefetchedOverDevice = 0;  ///< Kernel on prefetched managed / on cuMemAlloc (GB/s).
  double pagingSlowdown = 0;        ///< Kernel time under demand paging / after a prefetch.
  double prefetchOverPinned = 0;    ///< Prefetch host -> GPU / pinned cuMemcpyHtoDAsync.
  double prefetchOverPageable = 0;  ///< Prefetch GPU -> host / pageable cuMemcpyDtoH.
  double inPlaceOverPinned = 0;     ///< Kernel writing C on the host / pinned cuMemcpyDtoHAsync.
  /// @}
};

/**
 * Step 8, on the lesson's A, B and C (@p abc; @p kernel is VecAdd_kernel, run on @p stream):
 * first more checks (cuPointerGetAttributes on A; the advice table on A, mm::adviceSteps: the
 * GPU, the host, a host NUMA node and halves of A, each read back); step 5 again, timed (its
 * advice set anew, A and B written anew by the CPU, C on the host, then between two events A's
 * and B's prefetches to the GPU and the kernel), and the report of steps 3-8. Then what each
 * technique costs, every figure next to a reference of the same run: (8a) the kernel under demand paging, prefetched, on cuMemAlloc memory and on managed
 * memory kept on the host by advice, each result checked; (8b) prefetch host -> GPU against a
 * pinned copy, GPU -> host against a pageable copy (reported without a goal: the driver's
 * figure), and results written in place over the link against a pinned copy, the way to get
 * results back; (8c) one cuMemPrefetchBatchAsync of K ranges against K cuMemPrefetchAsync calls,
 * on a managed span of its own; (8d) the prefetch of C with live data, after
 * cuMemDiscardBatchAsync, and both in one cuMemDiscardAndPrefetchBatchAsync call. Then the
 * summary, every failed check and the JSON result.
 * @return PASS when no check of the run failed.
 */
memsamples::Verdict measureCosts(Checks& checks, CUfunction kernel, CUstream stream,
                                 const std::vector<CUdeviceptr>& abc);
