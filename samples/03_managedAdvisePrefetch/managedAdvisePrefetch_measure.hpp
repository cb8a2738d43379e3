/**
 * @file managedAdvisePrefetch_measure.hpp
 * @brief What 03_managedAdvisePrefetch measures and reports, on the lesson's managed A, B and C
 *        and against references from the same run: the kernel under demand paging, after a
 *        prefetch, on cuMemAlloc memory and on advised host memory; prefetch against pinned
 *        copies; the prefetch of discarded against live data; one batch prefetch against single
 *        prefetches; and the checks, summary and JSON fields of the run.
 */
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "managed_logic.hpp"
#include "memsamples.hpp"
#include "support/vector_add.hpp"

struct ManagedRun;

/// The lesson's range read-back: every range attribute of [ptr, ptr + bytes), read with
/// cuMemRangeGetAttribute and cuMemRangeGetAttributes, recorded against @p expected and printed
/// under @p label (when @p print, or on a mismatch).
using RangeCheck = void (*)(const ManagedRun& run, const std::string& label, CUdeviceptr ptr,
                            std::size_t bytes, const memsamples::managed::ExpectedRange& expected,
                            bool print);

/// What the steps of the sample share: its kernel launch on the managed A, B and C, where it
/// reports, and how it checks.
struct ManagedRun {
  memsamples::VectorAddLaunch vecAdd;    ///< VecAdd_kernel on all of A, B, C, on a created stream.
  int ordinal = 0;                       ///< The device, as a CUmemLocation id names it.
  int accessedBySlots = 2;               ///< Devices + 1: room for every ACCESSED_BY answer.
  memsamples::CommonOptions options;     ///< `--iterations`, `--warmup`.
  int migrationIterations = 5;           ///< Repetitions of the runs that move whole vectors.
  memsamples::Report* report = nullptr;  ///< The human report and the JSON result.
  memsamples::managed::Checklist* checks = nullptr;  ///< Every check of the run.
  std::string pagingModel;  ///< Which kind of machine step 8a's figures describe (pagingModel()).

  /// A, B and C as the host sees them: the same addresses.
  float* host(CUdeviceptr ptr) const noexcept {
    return reinterpret_cast<float*>(static_cast<std::uintptr_t>(ptr));
  }
};

/// The figures the issue asks for, repeated in the summary.
struct ManagedRatios {
  double prefetchedOverDevice = 0;  ///< Kernel on prefetched managed / on cuMemAlloc (GB/s).
  double pagingSlowdown = 0;        ///< Kernel time under demand paging / after a prefetch.
  double prefetchOverPinned = 0;    ///< Prefetch host -> GPU / pinned cuMemcpyHtoDAsync (GB/s).
};

/**
 * Records one range read-back against @p expected: what eight cuMemRangeGetAttribute calls
 * returned (@p individually) and whether one cuMemRangeGetAttributes call (@p atOnce) agrees.
 * Prints "  <label> <attributes>" when @p print, and always on a mismatch.
 */
void recordRange(const ManagedRun& run, const std::string& label,
                 const memsamples::managed::ExpectedRange& expected,
                 const memsamples::managed::RangeAttributes& individually,
                 const memsamples::managed::RangeAttributes& atOnce, bool print);

/**
 * Prints and checks what cuPointerGetAttributes said about A (@p atStart) and about the address
 * @p insideAddress inside it (@p inside); @p sampleContext is the context the sample created.
 */
void reportPointerAttributes(const ManagedRun& run,
                             const memsamples::managed::PointerAttributes& atStart,
                             const memsamples::managed::PointerAttributes& inside,
                             CUdeviceptr insideAddress, CUcontext sampleContext);

/**
 * Reads back (with @p expectRange) every range of @p batch, printed only on a mismatch: its last
 * prefetch location must be the destination the batch gave it. Then, printed, C's first and last
 * of @p chunks (the GPU's and the host's) and all of C, whose mixed destinations read back as
 * none.
 */
void expectBatchDestinations(const ManagedRun& run, const memsamples::managed::PrefetchBatch& batch,
                             const std::vector<memsamples::managed::ByteRange>& chunks,
                             RangeCheck expectRange);

/**
 * Compares every element of C with A + B on the host, records the check and prints
 * "  <what>: C == A + B, exact" or the mismatches. @return true when C is exact.
 */
bool verifyOnHost(const ManagedRun& run, const std::string& what);

/**
 * The kernel on 3 x size bytes: (a) managed memory moved to the host before each launch, so that
 * the kernel faults every page over (demand paging, `--migration-iterations`); (b) the same after
 * one prefetch to the GPU; (c) three cuMemAlloc buffers (the reference); (d) managed memory kept
 * on the host by SET_PREFERRED_LOCATION host + SET_ACCESSED_BY device (mapped, no faults; the
 * advice is read back with @p expectRange, and unset afterwards). Each result is checked. Fills
 * `prefetchedOverDevice` and `pagingSlowdown`.
 * @throws CudaError.
 */
void measureKernels(const ManagedRun& run, ManagedRatios& ratios, RangeCheck expectRange);

/**
 * cuMemPrefetchAsync of A GPU -> host and host -> GPU against pinned cuMemcpyDtoHAsync and
 * cuMemcpyHtoDAsync of the same size (median after warm-up). Fills `prefetchOverPinned`.
 * @throws CudaError.
 */
void measurePrefetchThroughput(const ManagedRun& run, ManagedRatios& ratios);

/**
 * One cuMemPrefetchBatchAsync of K ranges of @p rangeBytes (one every 2 x @p rangeBytes of a
 * managed span of @p spanBytes, allocated here) against K cuMemPrefetchAsync calls, for each K of
 * @p counts: GPU time (events) and how long the calls keep the CPU busy. The span's bytes are
 * checked afterwards.
 * @throws CudaError.
 */
void measureBatchVersusSingle(const ManagedRun& run, std::uint64_t spanBytes,
                              std::uint64_t rangeBytes, const std::vector<int>& counts);

/**
 * The prefetch of C to the GPU when C holds live data and after cuMemDiscardBatchAsync declared
 * it dead (median of `--migration-iterations`), then the kernel rewrites C, which is checked.
 * Skipped (and said so) when the driver does not support the discard.
 * @throws CudaError.
 */
void measureDiscard(const ManagedRun& run);

/**
 * Prints the summary line and the checks (every failure with what, expected, got) and records
 * the run in the JSON result. @return PASS when no check failed.
 */
memsamples::Verdict reportRun(const ManagedRun& run, const ManagedRatios& ratios,
                              const std::string& deviceName,
                              const memsamples::managed::ManagedSupport& support,
                              const memsamples::managed::PrefetchBatch& batch);
