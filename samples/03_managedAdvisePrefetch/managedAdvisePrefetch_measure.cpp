/**
 * @file managedAdvisePrefetch_measure.cpp
 * @brief 03_managedAdvisePrefetch's measurements, checks and report; see the header.
 */
#include "managedAdvisePrefetch_measure.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iomanip>
#include <ostream>

#include "support/timing.hpp"

namespace ms = memsamples;
namespace mm = memsamples::managed;

namespace {

constexpr std::uint32_t kPoison = 0xFFFFFFFFu;  // a NaN: never equal to A + B
constexpr unsigned char kSpanPattern = 0x5A;

void launch(const ManagedRun& run, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c) {
  const ms::VectorAddLaunch& k = run.vecAdd;
  unsigned long long n = k.count;  // the kernel's parameter types, exactly
  void* params[] = {&a, &b, &c, &n};
  ms::check(cuLaunchKernel(k.kernel, k.grid, 1, 1, k.block, 1, 1, 0, k.stream, params, nullptr),
            "cuLaunchKernel");
}

void prefetch(CUdeviceptr ptr, std::size_t bytes, const CUmemLocation& where, CUstream stream) {
  ms::check(cuMemPrefetchAsync(ptr, bytes, where, 0, stream), "cuMemPrefetchAsync");
}

/// A, B and C to @p where.
void prefetchVectors(const ManagedRun& run, const CUmemLocation& where) {
  const ms::VectorAddLaunch& k = run.vecAdd;
  for (CUdeviceptr v : {k.a, k.b, k.c})
    prefetch(v, k.count * sizeof(float), where, k.stream);
}

/// Fills a vector with NaNs, so that a result that was not written cannot pass the check.
void poison(const ManagedRun& run, CUdeviceptr c) {
  ms::check(cuMemsetD32Async(c, kPoison, run.vecAdd.count, run.vecAdd.stream), "cuMemsetD32Async");
}

ms::OwnedEvent createEvent() {
  ms::OwnedEvent event;
  ms::check(cuEventCreate(event.out(), CU_EVENT_DEFAULT), "cuEventCreate");
  return event;
}

std::vector<ms::OwnedEvent> createEvents(std::size_t count) {
  std::vector<ms::OwnedEvent> events(count);
  for (ms::OwnedEvent& event : events)
    event = createEvent();
  return events;
}

float elapsedMs(const ms::OwnedEvent& start, const ms::OwnedEvent& stop) {
  float elapsed = 0;
  ms::check(cuEventElapsedTime(&elapsed, start.get(), stop.get()), "cuEventElapsedTime");
  return elapsed;
}

/// Times @p work alone: @p before runs untimed first (the migration that sets the stage).
template <typename Before, typename Work>
double timeOnce(CUstream stream, Before before, Work work) {
  before();
  const ms::OwnedEvent start = createEvent(), stop = createEvent();
  ms::check(cuEventRecord(start.get(), stream), "cuEventRecord");
  work();
  ms::check(cuEventRecord(stop.get(), stream), "cuEventRecord");
  ms::check(cuEventSynchronize(stop.get()), "cuEventSynchronize");
  return elapsedMs(start, stop);
}

struct KernelRow {
  const char* label;
  ms::TimingStats timing;
  double gbps = 0;
};

void printKernelRow(std::ostream& out, const KernelRow& row) {
  out << "  " << std::left << std::setw(60) << row.label << std::right << std::fixed
      << std::setprecision(1) << std::setw(9) << row.gbps << " GB/s  median "
      << std::setprecision(3) << row.timing.medianMs << " ms\n";
}

/// Sets or unsets (@p set) the advice of row (d) on A, B and C.
void adviseRemote(const ManagedRun& run, bool set) {
  const ms::VectorAddLaunch& k = run.vecAdd;
  const std::size_t bytes = k.count * sizeof(float);
  const CUmemLocation gpu = mm::deviceLocation(run.ordinal), host = mm::hostLocation();
  for (CUdeviceptr v : {k.a, k.b, k.c}) {
    ms::check(cuMemAdvise(v, bytes,
                          set ? CU_MEM_ADVISE_SET_PREFERRED_LOCATION
                              : CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION,
                          host),
              "cuMemAdvise");
    ms::check(
        cuMemAdvise(v, bytes, set ? CU_MEM_ADVISE_SET_ACCESSED_BY : CU_MEM_ADVISE_UNSET_ACCESSED_BY,
                    gpu),
        "cuMemAdvise");
  }
}

}  // namespace

void recordRange(const ManagedRun& run, const std::string& label, const mm::ExpectedRange& expected,
                 const mm::RangeAttributes& individually, const mm::RangeAttributes& atOnce,
                 bool print) {
  const bool asAdvised =
      run.checks->expectAttributes(label, mm::compareRangeAttributes(expected, individually));
  const bool consistent =
      run.checks->expectAttributes(label + " (cuMemRangeGetAttributes vs cuMemRangeGetAttribute)",
                                   mm::differingAttributes(individually, atOnce));
  if (print || !asAdvised || !consistent) {
    run.report->out() << "  " << std::left << std::setw(44) << label << std::right << ' '
                      << mm::describeRangeAttributes(individually)
                      << (asAdvised && consistent ? "" : "  <- MISMATCH") << '\n';
  }
  // Both answers for a node are right; which one this driver gives is worth seeing.
  if (const std::string readBack = mm::hostNumaReadBack(expected, individually); !readBack.empty())
    run.report->out() << "    " << readBack << '\n';
}

void reportPointerAttributes(const ManagedRun& run, const mm::PointerAttributes& atStart,
                             const mm::PointerAttributes& inside, CUdeviceptr insideAddress,
                             CUcontext sampleContext) {
  const CUdeviceptr a = run.vecAdd.a;
  const std::size_t bytes = run.vecAdd.count * sizeof(float);
  run.report->out() << "\n[3] cuPointerGetAttributes on A (" << mm::hex(a) << ", "
                    << ms::formatBytes(bytes) << ")\n"
                    << mm::describePointerAttributes(atStart, inside, insideAddress, sampleContext);
  run.checks->expectAttributes("cuPointerGetAttributes on A",
                               mm::comparePointerAttributes(atStart, inside, a, bytes, run.ordinal),
                               mm::kPointerAttributeChecks);
}

void expectBatchDestinations(const ManagedRun& run, const mm::PrefetchBatch& batch,
                             const std::vector<memsamples::managed::ByteRange>& chunks,
                             RangeCheck expectRange) {
  for (std::size_t i = 0; i < batch.dptrs.size(); ++i) {
    expectRange(run, "batch range " + std::to_string(i), batch.dptrs[i], batch.sizes[i],
                mm::prefetchedTo(mm::destinationOf(batch, i)), false);
  }
  const std::string last = std::to_string(chunks.size() - 1);
  run.report->out() << "  every range reads back its own destination as LAST_PREFETCH_LOCATION ("
                    << batch.dptrs.size() << " ranges checked); chunk 0 and chunk " << last
                    << " of C:\n";
  const CUdeviceptr c = run.vecAdd.c;
  expectRange(run, "C chunk 0", c, chunks.front().bytes,
              mm::prefetchedTo(mm::deviceLocation(run.ordinal)), true);
  expectRange(run, "C chunk " + last, c + chunks.back().offset, chunks.back().bytes,
              mm::prefetchedTo(mm::hostLocation()), true);
  expectRange(run, "all of C (mixed destinations)", c, run.vecAdd.count * sizeof(float), {}, true);
}

bool verifyOnHost(const ManagedRun& run, const std::string& what) {
  const ms::VectorAddLaunch& k = run.vecAdd;
  const ms::VectorAddCheck result =
      ms::checkVectorAdd(run.host(k.a), run.host(k.b), run.host(k.c), k.count);
  const std::string found = result.mismatches == 0 ? "0 mismatches" : ms::describeMismatch(result);
  run.checks->expect(result.mismatches == 0, what, "C == A + B everywhere", found);
  run.report->out() << "  " << what << ": "
                    << (result.mismatches == 0 ? "C == A + B, exact" : found) << '\n';
  return result.mismatches == 0;
}

void measureKernels(const ManagedRun& run, ManagedRatios& ratios, RangeCheck expectRange) {
  std::ostream& out = run.report->out();
  const ms::VectorAddLaunch& k = run.vecAdd;
  const std::size_t bytes = k.count * sizeof(float);
  const double moved = 3.0 * static_cast<double>(bytes);  // reads A and B, writes C
  const int warmup = run.options.warmup, iterations = run.options.iterations;
  const CUmemLocation gpu = mm::deviceLocation(run.ordinal), host = mm::hostLocation();
  out << "\n[8a] Kernel C = A + B on " << ms::formatBytes(bytes)
      << " vectors (3 x size bytes per launch)\n"
      << "  This machine: " << run.pagingModel << '\n';

  // (a) Demand paging: before each launch A, B and C are moved to the host (untimed), so the
  // timed kernel faults every page over to the GPU.
  poison(run, k.c);
  std::vector<double> pagingMs;
  for (int rep = -1; rep < run.migrationIterations; ++rep) {  // rep -1: warm-up
    const double elapsed = timeOnce(
        k.stream, [&] { prefetchVectors(run, host); }, [&] { launch(run, k.a, k.b, k.c); });
    if (rep >= 0)
      pagingMs.push_back(elapsed);
  }
  KernelRow paging{"(a) managed, demand paging (pages start on the host)",
                   ms::summarizeTimings(pagingMs)};
  verifyOnHost(run, "(a) result");

  // (b) Prefetched: one prefetch, then the kernel finds every page resident.
  poison(run, k.c);
  prefetchVectors(run, gpu);
  KernelRow prefetched{
      "(b) managed, prefetched to the GPU",
      ms::timeOnStream(k.stream, warmup, iterations, [&] { launch(run, k.a, k.b, k.c); })};
  ms::check(cuStreamSynchronize(k.stream), "cuStreamSynchronize");
  verifyOnHost(run, "(b) result");

  // (c) The reference: ordinary device memory.
  ms::OwnedDeviceMemory da, db, dc;
  for (ms::OwnedDeviceMemory* buffer : {&da, &db, &dc})
    ms::check(cuMemAlloc(buffer->out(), bytes), "cuMemAlloc");
  const ms::DrainOnExit drain{k.stream};
  ms::check(cuMemcpyAsync(da.get(), k.a, bytes, k.stream), "cuMemcpyAsync");
  ms::check(cuMemcpyAsync(db.get(), k.b, bytes, k.stream), "cuMemcpyAsync");
  poison(run, dc.get());
  KernelRow device{"(c) cuMemAlloc device memory (reference)",
                   ms::timeOnStream(k.stream, warmup, iterations,
                                    [&] { launch(run, da.get(), db.get(), dc.get()); })};
  poison(run, k.c);
  ms::check(cuMemcpyAsync(k.c, dc.get(), bytes, k.stream), "cuMemcpyAsync");
  ms::check(cuStreamSynchronize(k.stream), "cuStreamSynchronize");
  verifyOnHost(run, "(c) result (copied into C)");

  // (d) Advice instead of migration: pages stay in host memory and the GPU maps them, so the
  // kernel reads and writes across the bus without a single fault.
  adviseRemote(run, true);
  poison(run, k.c);
  prefetchVectors(run, host);
  mm::ExpectedRange advised = mm::prefetchedTo(host);
  advised.preferred = host;
  advised.accessedBy = {run.ordinal};
  expectRange(run, "A with preferred host + accessed-by GPU", k.a, bytes, advised, true);
  KernelRow remote{
      "(d) managed, kept on the host, GPU-mapped by advice",
      ms::timeOnStream(k.stream, std::min(warmup, 1), std::min(iterations, run.migrationIterations),
                       [&] { launch(run, k.a, k.b, k.c); })};
  ms::check(cuStreamSynchronize(k.stream), "cuStreamSynchronize");
  verifyOnHost(run, "(d) result");
  adviseRemote(run, false);

  for (KernelRow* row : {&paging, &prefetched, &device, &remote}) {
    row->gbps = ms::gigabytesPerSecond(moved, row->timing.medianMs);
    printKernelRow(out, *row);
  }
  ratios.prefetchedOverDevice = prefetched.gbps / device.gbps;
  ratios.pagingSlowdown = paging.timing.medianMs / prefetched.timing.medianMs;
  out << std::setprecision(3) << "  (b)/(c) = " << ratios.prefetchedOverDevice
      << " (expected >= 0.95 on an H200: resident managed pages are ordinary device memory)\n"
      << std::setprecision(1) << "  demand paging is " << ratios.pagingSlowdown
      << "x slower than the prefetched run; (d) runs at " << std::setprecision(3)
      << remote.gbps / device.gbps << " of (c), bounded by the host link\n";
  run.report->json()
      .set("kernelPagingMs", paging.timing.medianMs)
      .set("kernelPagingGBps", paging.gbps)
      .set("kernelPrefetchedMs", prefetched.timing.medianMs)
      .set("kernelPrefetchedGBps", prefetched.gbps)
      .set("kernelDeviceMs", device.timing.medianMs)
      .set("kernelDeviceGBps", device.gbps)
      .set("kernelRemoteMs", remote.timing.medianMs)
      .set("kernelRemoteGBps", remote.gbps)
      .set("prefetchedOverDevice", ratios.prefetchedOverDevice)
      .set("demandPagingSlowdown", ratios.pagingSlowdown);
}

void measurePrefetchThroughput(const ManagedRun& run, ManagedRatios& ratios) {
  std::ostream& out = run.report->out();
  const CUstream stream = run.vecAdd.stream;
  const CUdeviceptr a = run.vecAdd.a;
  const std::size_t bytes = run.vecAdd.count * sizeof(float);
  const CUmemLocation gpu = mm::deviceLocation(run.ordinal), host = mm::hostLocation();
  const int warmup = run.options.warmup, iterations = run.options.iterations;
  out << "\n[8b] Prefetch throughput, " << ms::formatBytes(bytes)
      << " (A starts on the GPU and moves GPU -> host -> GPU each repetition)\n";
  const std::size_t total = static_cast<std::size_t>(warmup + iterations);
  const std::vector<ms::OwnedEvent> marks = createEvents(3 * total);
  // A known start: A entirely on the GPU. The step before left it on the host, where the first
  // GPU -> host prefetch would move nothing and, with --warmup 0, time a no-op.
  prefetch(a, bytes, gpu, stream);
  ms::check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  for (std::size_t i = 0; i < total; ++i) {
    ms::check(cuEventRecord(marks[3 * i].get(), stream), "cuEventRecord");
    prefetch(a, bytes, host, stream);
    ms::check(cuEventRecord(marks[3 * i + 1].get(), stream), "cuEventRecord");
    prefetch(a, bytes, gpu, stream);
    ms::check(cuEventRecord(marks[3 * i + 2].get(), stream), "cuEventRecord");
  }
  ms::check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  std::vector<double> toHostMs, toGpuMs;
  for (std::size_t i = static_cast<std::size_t>(warmup); i < total; ++i) {
    toHostMs.push_back(elapsedMs(marks[3 * i], marks[3 * i + 1]));
    toGpuMs.push_back(elapsedMs(marks[3 * i + 1], marks[3 * i + 2]));
  }
  const auto gbps = [bytes](double medianMs) {
    return ms::gigabytesPerSecond(static_cast<double>(bytes), medianMs);
  };
  const double prefetchUp = gbps(ms::summarizeTimings(toGpuMs).medianMs);
  const double prefetchDown = gbps(ms::summarizeTimings(toHostMs).medianMs);

  ms::OwnedPinnedHostMemory pinned;
  ms::check(cuMemHostAlloc(pinned.out(), bytes, 0), "cuMemHostAlloc");
  std::memset(pinned.get(), 1, bytes);
  ms::OwnedDeviceMemory target;
  ms::check(cuMemAlloc(target.out(), bytes), "cuMemAlloc");
  const ms::DrainOnExit drain{stream};
  const double pinnedUp =
      gbps(ms::timeOnStream(stream, warmup, iterations, [&] {
             ms::check(cuMemcpyHtoDAsync(target.get(), pinned.get(), bytes, stream),
                       "cuMemcpyHtoDAsync");
           }).medianMs);
  const double pinnedDown =
      gbps(ms::timeOnStream(stream, warmup, iterations, [&] {
             ms::check(cuMemcpyDtoHAsync(pinned.get(), target.get(), bytes, stream),
                       "cuMemcpyDtoHAsync");
           }).medianMs);
  ratios.prefetchOverPinned = prefetchUp / pinnedUp;
  out << std::fixed << std::setprecision(1) << "  host -> GPU  cuMemPrefetchAsync " << std::setw(7)
      << prefetchUp << " GB/s   pinned cuMemcpyHtoDAsync " << std::setw(7) << pinnedUp
      << " GB/s   ratio " << std::setprecision(3) << ratios.prefetchOverPinned
      << " (expected >= 0.8 on an H200)\n"
      << std::setprecision(1) << "  GPU -> host  cuMemPrefetchAsync " << std::setw(7)
      << prefetchDown << " GB/s   pinned cuMemcpyDtoHAsync " << std::setw(7) << pinnedDown
      << " GB/s   ratio " << std::setprecision(3) << prefetchDown / pinnedDown << '\n';
  run.report->json()
      .set("prefetchHtoDGBps", prefetchUp)
      .set("pinnedHtoDGBps", pinnedUp)
      .set("prefetchOverPinnedHtoD", ratios.prefetchOverPinned)
      .set("prefetchDtoHGBps", prefetchDown)
      .set("pinnedDtoHGBps", pinnedDown)
      .set("prefetchOverPinnedDtoH", prefetchDown / pinnedDown);
}

void measureBatchVersusSingle(const ManagedRun& run, std::uint64_t spanBytes,
                              std::uint64_t rangeBytes, const std::vector<int>& counts) {
  std::ostream& out = run.report->out();
  const CUstream stream = run.vecAdd.stream;
  const CUmemLocation gpu = mm::deviceLocation(run.ordinal), host = mm::hostLocation();
  ms::OwnedDeviceMemory span;  // managed, freed with cuMemFree like any cuMemAlloc memory
  ms::check(cuMemAllocManaged(span.out(), spanBytes, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged");
  const ms::DrainOnExit drain{stream};
  out << "\n[8c] One cuMemPrefetchBatchAsync of K ranges vs K cuMemPrefetchAsync calls\n"
      << "  ranges of " << ms::formatBytes(rangeBytes) << ", one every "
      << ms::formatBytes(2 * rangeBytes) << " of a " << ms::formatBytes(spanBytes)
      << " managed span, host -> GPU. Before each timed\n"
      << "  repetition the span goes back to the host (untimed), so every prefetch moves data.\n"
      << "  GPU time: CUDA events around the enqueue (includes any gap while the host is still\n"
      << "  enqueueing); host time: how long the calls kept the CPU busy. Medians.\n"
      << "       K   batch GPU ms  singles GPU ms  speedup   batch host ms  singles host ms\n";
  auto* data = reinterpret_cast<unsigned char*>(static_cast<std::uintptr_t>(span.get()));
  std::memset(data, kSpanPattern, spanBytes);  // pages on the host, with data
  const int warmup = run.options.warmup;
  const std::size_t total = static_cast<std::size_t>(warmup + run.options.iterations);
  ms::JsonArray rows;
  for (int count : counts) {
    const std::vector<mm::ByteRange> ranges =
        mm::stridedRanges(static_cast<std::size_t>(count), rangeBytes, 2 * rangeBytes);
    mm::PrefetchBatchBuilder builder;
    for (const mm::ByteRange& range : ranges)
      builder.add(span.get() + range.offset, range.bytes, gpu);
    mm::PrefetchBatch batch = builder.batch();
    mm::validatePrefetchBatch(batch, stream);

    const std::vector<ms::OwnedEvent> marks = createEvents(4 * total);
    std::vector<double> batchHostMs, singlesHostMs;
    for (std::size_t i = 0; i < total; ++i) {
      prefetch(span.get(), spanBytes, host, stream);
      ms::check(cuEventRecord(marks[4 * i].get(), stream), "cuEventRecord");
      auto begin = std::chrono::steady_clock::now();
      ms::check(cuMemPrefetchBatchAsync(batch.dptrs.data(), batch.sizes.data(), batch.dptrs.size(),
                                        batch.locations.data(), batch.locationStarts.data(),
                                        batch.locations.size(), 0, stream),
                "cuMemPrefetchBatchAsync");
      const std::chrono::duration<double, std::milli> batchCall =
          std::chrono::steady_clock::now() - begin;
      ms::check(cuEventRecord(marks[4 * i + 1].get(), stream), "cuEventRecord");

      prefetch(span.get(), spanBytes, host, stream);
      ms::check(cuEventRecord(marks[4 * i + 2].get(), stream), "cuEventRecord");
      begin = std::chrono::steady_clock::now();
      for (const mm::ByteRange& range : ranges)
        prefetch(span.get() + range.offset, range.bytes, gpu, stream);
      const std::chrono::duration<double, std::milli> singleCalls =
          std::chrono::steady_clock::now() - begin;
      ms::check(cuEventRecord(marks[4 * i + 3].get(), stream), "cuEventRecord");
      if (i >= static_cast<std::size_t>(warmup)) {
        batchHostMs.push_back(batchCall.count());
        singlesHostMs.push_back(singleCalls.count());
      }
    }
    ms::check(cuStreamSynchronize(stream), "cuStreamSynchronize");
    std::vector<double> batchMs, singlesMs;
    for (std::size_t i = static_cast<std::size_t>(warmup); i < total; ++i) {
      batchMs.push_back(elapsedMs(marks[4 * i], marks[4 * i + 1]));
      singlesMs.push_back(elapsedMs(marks[4 * i + 2], marks[4 * i + 3]));
    }
    const double batchGpu = ms::summarizeTimings(batchMs).medianMs;
    const double singlesGpu = ms::summarizeTimings(singlesMs).medianMs;
    const double batchHost = ms::summarizeTimings(batchHostMs).medianMs;
    const double singlesHost = ms::summarizeTimings(singlesHostMs).medianMs;
    out << std::fixed << std::setw(8) << count << std::setprecision(3) << std::setw(15) << batchGpu
        << std::setw(16) << singlesGpu << std::setprecision(2) << std::setw(8)
        << singlesGpu / batchGpu << 'x' << std::setprecision(3) << std::setw(15) << batchHost
        << std::setw(17) << singlesHost << '\n';
    ms::JsonObject row;
    row.set("ranges", count)
        .set("batchGpuMs", batchGpu)
        .set("singlesGpuMs", singlesGpu)
        .set("batchHostMs", batchHost)
        .set("singlesHostMs", singlesHost);
    rows.addRaw(row.dump());
  }
  run.report->json().set("batchVsSingle", rows).set("batchRangeBytes", rangeBytes);

  // The span went back and forth many times; its bytes must still be what the CPU wrote.
  prefetch(span.get(), spanBytes, host, stream);
  ms::check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  const auto changed = static_cast<std::size_t>(
      std::count_if(data, data + spanBytes, [](unsigned char v) { return v != kSpanPattern; }));
  run.checks->expect(changed == 0, "benchmark span after all prefetches", "every byte unchanged",
                     std::to_string(changed) + " bytes changed");
}

void measureDiscard(const ManagedRun& run) {
  std::ostream& out = run.report->out();
  const ms::VectorAddLaunch& k = run.vecAdd;
  const std::size_t bytes = k.count * sizeof(float);
  const CUmemLocation gpu = mm::deviceLocation(run.ordinal), host = mm::hostLocation();
  out << "\n[8d] cuMemPrefetchAsync of C host -> GPU, live data vs after cuMemDiscardBatchAsync\n";
  CUdeviceptr ranges[] = {k.c};
  std::size_t sizes[] = {bytes};
  std::vector<double> liveMs, discardedMs;
  for (int rep = 0; rep < run.migrationIterations; ++rep) {
    for (bool discard : {false, true}) {
      CUresult discarded = CUDA_SUCCESS;
      // C starts on the host each time. Moving it there copies its pages back from the GPU, so
      // it holds data again (the values do not matter: the kernel overwrites C afterwards).
      const double elapsed = timeOnce(
          k.stream,
          [&] {
            prefetch(k.c, bytes, host, k.stream);
            if (discard)
              discarded = cuMemDiscardBatchAsync(ranges, sizes, 1, 0, k.stream);
          },
          [&] { prefetch(k.c, bytes, gpu, k.stream); });
      if (discarded == CUDA_ERROR_NOT_SUPPORTED) {
        out << "  skipped: " << ms::describeResult(discarded) << " from cuMemDiscardBatchAsync\n";
        return;
      }
      ms::check(discarded, "cuMemDiscardBatchAsync");
      (discard ? discardedMs : liveMs).push_back(elapsed);
    }
  }
  const ms::TimingStats live = ms::summarizeTimings(liveMs);
  const ms::TimingStats dead = ms::summarizeTimings(discardedMs);
  out << std::fixed << std::setprecision(3) << "  prefetch of C (" << ms::formatBytes(bytes)
      << "): live data " << live.medianMs << " ms, after discard " << dead.medianMs
      << " ms (median of " << run.migrationIterations << ").\n"
      << "  Discarded pages hold nothing worth keeping, so the driver may populate them on the "
         "GPU instead of copying them.\n";
  // The discarded C now holds indeterminate values; the kernel overwrites all of it.
  launch(run, k.a, k.b, k.c);
  ms::check(cuStreamSynchronize(k.stream), "cuStreamSynchronize");
  verifyOnHost(run, "C written by the GPU after the timed discards");
  run.report->json().set("prefetchLiveMs", live.medianMs).set("prefetchDiscardedMs", dead.medianMs);
}

ms::Verdict reportRun(const ManagedRun& run, const ManagedRatios& ratios,
                      const std::string& deviceName, const mm::ManagedSupport& support,
                      const mm::PrefetchBatch& batch) {
  std::ostream& out = run.report->out();
  const mm::Checklist& checks = *run.checks;
  out << std::fixed
      << "\nSummary: kernel on prefetched managed / cuMemAlloc = " << std::setprecision(3)
      << ratios.prefetchedOverDevice
      << ", prefetch / pinned copy (host -> GPU) = " << ratios.prefetchOverPinned
      << ", demand paging slowdown = " << std::setprecision(1) << ratios.pagingSlowdown << "x\n";
  out << "Checks: " << checks.checks() << ", failed: " << checks.failures().size() << '\n';
  ms::JsonArray failures;
  for (const std::string& failure : checks.failures()) {
    out << "  FAIL " << failure << '\n';
    failures.add(failure);
  }
  run.report->json()
      .set("device", run.ordinal)
      .set("deviceName", deviceName)
      .set("bytesPerVector", static_cast<std::uint64_t>(run.vecAdd.count * sizeof(float)))
      .set("iterations", run.options.iterations)
      .set("migrationIterations", run.migrationIterations)
      .set("hostNumaId", support.hostNumaId)
      .set("pageableMemoryAccess", support.pageableMemoryAccess)
      .set("pageableUsesHostPageTables", support.pageableUsesHostPageTables)
      .set("coherentHostAccess", mm::coherentHostAccess(support))
      .set("batchRanges", static_cast<std::uint64_t>(batch.dptrs.size()))
      .set("batchLocations", static_cast<std::uint64_t>(batch.locations.size()))
      .set("checks", static_cast<std::uint64_t>(checks.checks()))
      .set("failures", failures);
  return checks.passed() ? ms::Verdict::Pass : ms::Verdict::Fail;
}
