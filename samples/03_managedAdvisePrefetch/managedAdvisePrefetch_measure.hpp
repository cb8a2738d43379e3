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
  int accessedBySlots = 2;                      ///< Devices + 1: room for every ACCESSED_BY.
  int numaNode = -1;                            ///< The host NUMA node nearest the device.
};

/**
 * Prints the device and what it supports of managed memory; throws WaivedError without managed
 * memory, or without concurrent managed access on every device. Then the sizes of the whole run,
 * checked once against the free memory of the current context's device (cuMemGetInfo) and of the
 * host (planManagedSizes: a `--size` that does not fit is refused), and @p kernel's grid.
 */
ManagedPlan planRun(const ManagedOptions& options, CUdevice device, CUfunction kernel,
                    memsamples::Report& report);

/// The lesson's managed A, B and C, and what its steps check and measure on them. Every check is
/// recorded; verdict() lists each failure (what, expected, got).
class ManagedRun {
 public:
  /// The lesson's read-back of [ptr, ptr + bytes): every range attribute, asked one by one and
  /// at once, handed to expectRange(). The lesson writes it; the measurements use it too.
  using ReadBack = std::function<void(const std::string& label, CUdeviceptr ptr, std::size_t bytes,
                                      const memsamples::managed::ExpectedRange& expected,
                                      bool print)>;

  /// VecAdd_kernel (@p kernel) on @p abc (A, B, C) and @p stream, sized by @p plan.
  ManagedRun(memsamples::Report& report, const ManagedOptions& options, const ManagedPlan& plan,
             CUfunction kernel, CUstream stream, const std::vector<CUdeviceptr>& abc);

  ReadBack readBack;   ///< Set by the lesson.
  float* const hostA;  ///< A as the host sees it: the same address.
  float* const hostB;  ///< B as the host sees it.
  float* const hostC;  ///< C as the host sees it.

  /// Step 4: prints and checks what cuPointerGetAttributes said about A at its start and in its
  /// middle (the context it names must be the current one, the sample's).
  void expectPointers(const memsamples::managed::PointerAttributes& atStart,
                      const memsamples::managed::PointerAttributes& inside);
  /// Records one read-back against @p expected (what eight cuMemRangeGetAttribute calls said,
  /// @p one, and that one cuMemRangeGetAttributes call, @p all, agrees); printed when @p print and
  /// on a mismatch. The first one opens step 5's report.
  void expectRange(const std::string& label, const memsamples::managed::ExpectedRange& expected,
                   const memsamples::managed::RangeAttributes& one,
                   const memsamples::managed::RangeAttributes& all, bool print);
  /// True when advice row @p step was refused (@p result) and may be: a host NUMA node, which
  /// not every system takes; says so.
  bool refused(const memsamples::managed::AdviceStep& step, CUresult result);
  /// Compares all of C with A + B on the host, records and prints it. @return true when exact.
  bool verify(const std::string& what);
  /// Step 6's report: A's last prefetch went to the GPU, C's back to the host; C is checked.
  void checkRoundTrip();
  /// Step 7 after the batch call: the kernel adds the GPU's chunks while the CPU adds the host's;
  /// then every range of @p batch reads back its destination, and C is checked.
  void addOnGpuAndCpu(const memsamples::managed::PrefetchBatch& batch);
  /// Step 8 after the discard (@p discarded: its answer): C to the GPU, the kernel rewrites it;
  /// read back and checked. CUDA_ERROR_NOT_SUPPORTED is said, and skips measureDiscard().
  void rewriteAfterDiscard(CUresult discarded);

  /// (a) The kernel under demand paging, (b) after a prefetch, (c) on cuMemAlloc memory (the
  /// reference), (d) on managed memory kept on the host by advice; each result checked.
  void measureKernels();
  /// Prefetch host -> GPU against a pinned copy; prefetch GPU -> host against a pageable copy
  /// (the fair reference: managed host pages are not pinned), the pinned copy as the link's limit;
  /// results written in place over the link (C preferred on the host, accessed by the GPU)
  /// against a pinned copy. Information only: never fails the run.
  void measureTransfers();
  /// One cuMemPrefetchBatchAsync of K ranges against K cuMemPrefetchAsync calls, for each
  /// `--batch-counts` K, on a managed span of its own (checked afterwards).
  void measureBatchVersusSingle();
  /// The prefetch of C to the GPU with live data and after cuMemDiscardBatchAsync.
  void measureDiscard();

  /// The summary, every failed check, the JSON result. @return PASS when no check failed.
  memsamples::Verdict verdict();

 private:
  void launch(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, std::size_t count);
  void prefetchVectors(const CUmemLocation& where);
  void poisonC();
  void adviseOnHost(const std::vector<CUdeviceptr>& vectors, bool set);

  memsamples::Report& report_;
  const ManagedOptions& options_;
  const ManagedPlan& plan_;
  memsamples::VectorAddLaunch vecAdd_;
  std::size_t bytes_;
  CUmemLocation gpu_;
  CUmemLocation host_;
  memsamples::managed::Checklist checks_;
  bool discardSupported_ = true;
  bool adviceReported_ = false;     // step 5's title printed
  double prefetchedOverDevice_ = 0;  // kernel on prefetched managed / on cuMemAlloc (GB/s)
  double pagingSlowdown_ = 0;        // kernel time under demand paging / after a prefetch
  double prefetchOverPinned_ = 0;    // prefetch host -> GPU / pinned cuMemcpyHtoDAsync
  double prefetchOverPageable_ = 0;  // prefetch GPU -> host / pageable cuMemcpyDtoH
  double inPlaceOverPinned_ = 0;     // kernel writing C on the host / pinned cuMemcpyDtoHAsync
};
