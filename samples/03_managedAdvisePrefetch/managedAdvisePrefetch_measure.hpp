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
  std::vector<int> batchCounts = {16, 256, 4096};         ///< `--batch-counts` of the benchmark.
  int migrationIterations = 5;  ///< `--migration-iterations`: runs that move whole vectors.
};

/// The smallest vector: step 7 cuts each one into ten 64 KiB-aligned chunks.
inline constexpr std::uint64_t kMinVectorBytes = 1ull << 20;

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

/// What the lesson's checks and measurements need: the run, A, B and C, every check recorded
/// (each failure: what, expected, got), and the figures for the summary.
struct Checks {
  /// VecAdd_kernel (@p kernel) on @p abc (A, B, C) and @p stream, sized by @p plan.
  Checks(memsamples::Report& report, const ManagedOptions& options, const ManagedPlan& plan,
         CUfunction kernel, CUstream stream, const std::vector<CUdeviceptr>& abc);

  memsamples::Report& report;    ///< Where the checks and measurements print.
  const ManagedOptions& options;  ///< The command line's choices.
  const ManagedPlan& plan;        ///< Sizes and capabilities, from planRun().
  memsamples::VectorAddLaunch vecAdd;  ///< The kernel on A, B, C, the whole vectors.
  std::size_t bytes;                   ///< Bytes per vector.
  CUmemLocation gpu;                   ///< The device.
  CUmemLocation host;                  ///< The host.
  float* hostA;                        ///< A as the host sees it: the same address.
  float* hostB;                        ///< B as the host sees it.
  float* hostC;                        ///< C as the host sees it.
  memsamples::Checklist list;           ///< Every check so far.
  bool discardSupported = true;         ///< Step 8's answer; 9d is skipped without it.
  bool adviceReported = false;          ///< Step 5's title printed.
  bool prefetchReported = false;        ///< Step 6's title printed.
  double prefetchedOverDevice = 0;  ///< Kernel on prefetched managed / on cuMemAlloc (GB/s).
  double pagingSlowdown = 0;        ///< Kernel time under demand paging / after a prefetch.
  double prefetchOverPinned = 0;    ///< Prefetch host -> GPU / pinned cuMemcpyHtoDAsync.
  double prefetchOverPageable = 0;  ///< Prefetch GPU -> host / pageable cuMemcpyDtoH.
  double inPlaceOverPinned = 0;     ///< Kernel writing C on the host / pinned cuMemcpyDtoHAsync.
};

/// @name The checks of the lesson's steps: one name, one overload per kind of answer
/// @{

/// Step 4: prints and checks what cuPointerGetAttributes said about A at its start and in its
/// middle (the context it names must be the current one, the sample's).
void expect(Checks& checks, const memsamples::managed::PointerAttributes& atStart,
            const memsamples::managed::PointerAttributes& inside);
/// Step 5: @return false when advice row @p row was refused (@p advised) and may be: a host NUMA
/// node, which not every system takes; says so. Any other failure throws as ms::check does.
bool expect(Checks& checks, const memsamples::managed::AdviceStep& row, CUresult advised);
/// Records one read-back against @p expected (what eight cuMemRangeGetAttribute calls said,
/// @p one, and that one cuMemRangeGetAttributes call, @p all, agrees); printed when @p print and
/// on a mismatch. The first one opens step 5's report.
void expect(Checks& checks, const std::string& label,
            const memsamples::managed::ExpectedRange& expected,
            const memsamples::managed::RangeAttributes& one,
            const memsamples::managed::RangeAttributes& all, bool print = true);
/// Reads [@p ptr, @p ptr + @p bytes) back, as the lesson's step 5 does, and checks it against
/// @p expected. The first one opens step 6's report.
void expect(Checks& checks, const std::string& label, CUdeviceptr ptr, std::size_t bytes,
            const memsamples::managed::ExpectedRange& expected, bool print = true);
/// Compares all of C with A + B on the host, records and prints it. @return true when exact.
bool expect(Checks& checks, const std::string& what);
/// Step 7 after the GPU and the CPU added their shares: every range of @p batch reads back its
/// destination, chunks 0 and 9 of C and all of C are printed, and C is checked.
void expect(Checks& checks, const memsamples::managed::PrefetchBatch& batch);
/// Step 8: cuMemDiscardBatchAsync's answer; CUDA_ERROR_NOT_SUPPORTED is said (9d is then
/// skipped), any other failure throws as ms::check does.
void expect(Checks& checks, CUresult discarded);

/// @}

/**
 * Step 9, what each technique costs, every figure next to a reference of the same run:
 * (9a) the kernel under demand paging, prefetched, on cuMemAlloc memory and on managed memory
 * kept on the host by advice, each result checked; (9b) prefetch host -> GPU against a pinned
 * copy, GPU -> host against a pageable copy (the fair reference: managed host pages are not
 * pinned), the pinned copy as the link's limit, results written in place over the link against a
 * pinned copy; (9c) one cuMemPrefetchBatchAsync of K ranges against K cuMemPrefetchAsync calls,
 * on a managed span of its own; (9d) the prefetch of C with live data and after
 * cuMemDiscardBatchAsync. Then the summary, every failed check and the JSON result.
 * @return PASS when no check of the run failed.
 */
memsamples::Verdict measureCosts(Checks& checks);
