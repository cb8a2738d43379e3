/**
 * @file managedAdvisePrefetch_measure.cpp
 * @brief 03_managedAdvisePrefetch's plan, checks and measurements; see the header.
 */
#include "managedAdvisePrefetch_measure.hpp"

#include <algorithm>
#include <cstring>
#include <ostream>
#include <utility>

#include "support/stage_timer.hpp"
#include "support/text_format.hpp"
#include "support/timing.hpp"

namespace ms = memsamples;
namespace mm = memsamples::managed;
using ms::format;
using ms::StageTimes;
using ms::timeRounds;

namespace {

constexpr std::uint64_t kDefaultBytes = 1ull << 30;  // per vector
constexpr std::uint32_t kPoison = 0xFFFFFFFFu;       // a NaN: never equal to A + B
constexpr unsigned char kSpanPattern = 0x5A;

/// One line of step 9b: a rate against its reference on the same buffers, the ratio and the goal
/// ("  host -> GPU  cuMemPrefetchAsync   46.3 GB/s   pinned cuMemcpyHtoDAsync   54.0 GB/s ...").
/// @return the ratio.
double printRates(std::ostream& out, const char* what, double gbps, const char* reference,
                  double referenceGBps, const char* goal) {
  const double ratio = gbps / referenceGBps;
  out << format("  %s %7.1f GB/s   %-24s %7.1f GB/s   ratio %.3f (%s)\n", what, gbps, reference,
                referenceGBps, ratio, goal);
  return ratio;
}

void prefetch(CUdeviceptr ptr, std::size_t bytes, const CUmemLocation& where, CUstream stream) {
  ms::check(cuMemPrefetchAsync(ptr, bytes, where, 0, stream), "cuMemPrefetchAsync");
}

/// One VecAdd_kernel launch over all of A, B and C, on their stream.
void launch(ms::VectorAddLaunch k) {
  unsigned long long n = k.count;  // the kernel's parameter types, exactly
  void* params[] = {&k.a, &k.b, &k.c, &n};
  ms::check(cuLaunchKernel(k.kernel, k.grid, 1, 1, k.block, 1, 1, 0, k.stream, params, nullptr),
            "cuLaunchKernel");
}

void prefetchVectors(const Checks& r, const CUmemLocation& where) {
  for (const CUdeviceptr v : {r.vecAdd.a, r.vecAdd.b, r.vecAdd.c})
    prefetch(v, r.bytes, where, r.vecAdd.stream);
}

/// NaNs in C, so that a result that was not written cannot pass the check.
void poisonC(const Checks& r) {
  ms::check(cuMemsetD32Async(r.vecAdd.c, kPoison, r.vecAdd.count, r.vecAdd.stream),
            "cuMemsetD32Async");
}

/// Sets or unsets (@p set) SET_PREFERRED_LOCATION host + SET_ACCESSED_BY device on @p vectors.
void adviseOnHost(const Checks& r, const std::vector<CUdeviceptr>& vectors, bool set) {
  const std::pair<CUmem_advise, CUmemLocation> advice[] = {
      {set ? CU_MEM_ADVISE_SET_PREFERRED_LOCATION : CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, r.host},
      {set ? CU_MEM_ADVISE_SET_ACCESSED_BY : CU_MEM_ADVISE_UNSET_ACCESSED_BY, r.gpu}};
  for (const CUdeviceptr v : vectors) {
    for (const auto& [what, where] : advice)
      ms::check(cuMemAdvise(v, r.bytes, what, where), "cuMemAdvise");
  }
}

}  // namespace

ManagedPlan planRun(const ManagedOptions& options, CUdevice device, CUfunction kernel,
                    ms::Report& report) {
  std::ostream& out = report.out();
  ManagedPlan plan;
  plan.ordinal = ms::deviceOrdinal(device);
  plan.deviceName = ms::deviceName(device);
  out << "Device " << plan.ordinal << ": " << plan.deviceName << '\n';
  // CUDA 13.0 entry points: a driver of the same major version but an older minor may lack them,
  // and the sample then waives naming the one it misses, before anything calls it.
  ms::requireEntryPoint(cuMemPrefetchBatchAsync, "cuMemPrefetchBatchAsync");
  ms::requireEntryPoint(cuMemDiscardBatchAsync, "cuMemDiscardBatchAsync");
  mm::ManagedSupport& s = plan.support;
  // The six attributes, read one by one into the fields they fill.
  const std::pair<CUdevice_attribute, int*> reads[] = {
      {CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, &s.managedMemory},
      {CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, &s.concurrentManagedAccess},
      {CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, &s.pageableMemoryAccess},
      {CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST, &s.directManagedAccessFromHost},
      {CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
       &s.pageableUsesHostPageTables},
      {CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, &s.hostNumaId}};
  for (const auto& [attribute, into] : reads)
    *into = ms::deviceAttribute(device, attribute);
  // cuMemPrefetchBatchAsync needs concurrent managed access on every device of the system.
  ms::check(cuDeviceGetCount(&s.deviceCount), "cuDeviceGetCount");
  for (int i = 0; i < s.deviceCount && s.firstDeviceWithoutConcurrentAccess < 0; ++i) {
    CUdevice other = 0;
    ms::check(cuDeviceGet(&other, i), "cuDeviceGet");
    if (!ms::deviceAttribute(other, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS))
      s.firstDeviceWithoutConcurrentAccess = i;
  }
  out << "[2] " << mm::describeSupport(s) << '\n';
  if (const std::string reason = mm::waiverReason(s, plan.ordinal); !reason.empty())
    throw ms::WaivedError(reason);
  // The whole run, the measurements' buffers included, against what is free, once.
  std::size_t freeBytes = 0;
  std::size_t totalBytes = 0;
  ms::check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
  plan.sizes = mm::planManagedSizes(options.sizeBytes, kDefaultBytes, kMinVectorBytes,
                                    *options.rangeBytes, options.batchCounts, freeBytes,
                                    ms::hostMemoryAvailable());
  out << mm::describeSizes(plan.sizes, freeBytes, totalBytes) << '\n';
  plan.grid = ms::residentGridSize(kernel, device, static_cast<int>(plan.block));
  plan.accessedBySlots = s.deviceCount + 1;
  return plan;
}

Checks::Checks(ms::Report& report_, const ManagedOptions& options_, const ManagedPlan& plan_,
               CUfunction kernel, CUstream stream, const std::vector<CUdeviceptr>& abc)
    : report(report_),
      options(options_),
      plan(plan_),
      vecAdd{kernel, plan_.grid, plan_.block, stream, abc.at(0), abc.at(1), abc.at(2),
             plan_.sizes.vectorBytes / sizeof(float)},
      bytes(plan_.sizes.vectorBytes),
      gpu{CU_MEM_LOCATION_TYPE_DEVICE, plan_.ordinal},
      host{CU_MEM_LOCATION_TYPE_HOST, 0},
      hostA(reinterpret_cast<float*>(static_cast<std::uintptr_t>(abc.at(0)))),
      hostB(reinterpret_cast<float*>(static_cast<std::uintptr_t>(abc.at(1)))),
      hostC(reinterpret_cast<float*>(static_cast<std::uintptr_t>(abc.at(2)))) {}

// ------------------------------------------------------------------------ the lesson's checks

void expect(Checks& r, const mm::PointerAttributes& atStart, const mm::PointerAttributes& inside) {
  const CUdeviceptr a = r.vecAdd.a;
  CUcontext context = nullptr;
  ms::check(cuCtxGetCurrent(&context), "cuCtxGetCurrent");
  r.report.out() << "\n[4] cuPointerGetAttributes on A (" << ms::hex(a) << ", "
                 << ms::formatBytes(r.bytes) << ")\n"
                 << mm::describePointerAttributes(atStart, inside, a + r.bytes / 2, context);
  r.list.expectAttributes("cuPointerGetAttributes on A",
                          mm::comparePointerAttributes(atStart, inside, a, r.bytes, r.plan.ordinal),
                          mm::kPointerAttributeChecks);
}

bool expect(Checks& r, const mm::AdviceStep& row, CUresult advised) {
  if (advised != CUDA_SUCCESS && row.mayBeRefused) {
    r.report.out() << "  " << row.label << ": not accepted (" << ms::describeResult(advised)
                   << "), the advice stays as it was\n";
    return false;
  }
  ms::check(advised, "cuMemAdvise");
  return true;
}

void expect(Checks& r, const std::string& label, const mm::ExpectedRange& expected,
            const mm::RangeAttributes& one, const mm::RangeAttributes& all, bool print) {
  if (!std::exchange(r.adviceReported, true))
    r.report.out() << "\n[5] Advice on A, each read back by cuMemRangeGetAttribute(s) (x8, then x1)\n";
  const bool asAdvised = r.list.expectAttributes(label, mm::compareRangeAttributes(expected, one),
                                                 mm::kRangeAttributeCount);
  const bool consistent = r.list.expectAttributes(
      label + " (cuMemRangeGetAttributes vs cuMemRangeGetAttribute)",
      mm::differingAttributes(one, all), mm::kRangeAttributeCount);
  if (print || !asAdvised || !consistent) {
    r.report.out() << format("  %-44s ", label.c_str()) << mm::describeRangeAttributes(one)
                   << (asAdvised && consistent ? "" : "  <- MISMATCH") << '\n';
  }
  // Both answers for a node are right; which one this driver gives is worth seeing.
  if (const std::string node = mm::hostNumaReadBack(expected, one); !node.empty())
    r.report.out() << "    " << node << '\n';
}

void expect(Checks& r, const std::string& label, CUdeviceptr ptr, std::size_t bytes,
            const mm::ExpectedRange& expected, bool print) {
  if (!std::exchange(r.prefetchReported, true))
    r.report.out() << "\n[6] cuMemPrefetchAsync: A, B, C to the GPU, compute, C back to the host\n";
  mm::RangeAttributeQuery one(r.plan.accessedBySlots);  // as the lesson's step 5 reads them
  mm::RangeAttributeQuery all(r.plan.accessedBySlots);
  for (std::size_t i = 0; i < one.asked.size(); ++i)
    ms::check(cuMemRangeGetAttribute(one.data[i], one.sizes[i], one.asked[i], ptr, bytes),
              "cuMemRangeGetAttribute");
  ms::check(cuMemRangeGetAttributes(all.data.data(), all.sizes.data(), all.asked.data(),
                                    all.asked.size(), ptr, bytes),
            "cuMemRangeGetAttributes");
  expect(r, label, expected, one.said, all.said, print);
}

bool expect(Checks& r, const std::string& what) {
  const ms::VectorAddCheck result = ms::checkVectorAdd(r.hostA, r.hostB, r.hostC, r.vecAdd.count);
  const bool exact = result.mismatches == 0;
  const std::string found = exact ? "0 mismatches" : ms::describeMismatch(result);
  r.list.expect(exact, what, "C == A + B everywhere", found);
  r.report.out() << "  " << what << ": " << (exact ? "C == A + B, exact" : found) << '\n';
  return exact;
}

void expect(Checks& r, const mm::PrefetchBatch& batch) {
  std::ostream& out = r.report.out();
  out << "\n[7] cuMemPrefetchBatchAsync: chunks 0-5 of A, B, C to the GPU, 6-9 to the host\n  "
      << mm::describeBatch(batch) << '\n';
  r.report.json()
      .set("batchRanges", static_cast<std::uint64_t>(batch.dptrs.size()))
      .set("batchLocations", static_cast<std::uint64_t>(batch.locations.size()));
  for (std::size_t i = 0; i < batch.dptrs.size(); ++i) {
    expect(r, "batch range " + std::to_string(i), batch.dptrs[i], batch.sizes[i],
           mm::prefetchedTo(mm::destinationOf(batch, i)), false);
  }
  out << "  every range reads back its own destination as LAST_PREFETCH_LOCATION ("
      << batch.dptrs.size() << " ranges checked); chunk 0 and chunk 9 of C:\n";
  expect(r, "C chunk 0", r.vecAdd.c, batch.sizes.front(), mm::prefetchedTo(r.gpu));
  expect(r, "C chunk 9", batch.dptrs.back(), batch.sizes.back(), mm::prefetchedTo(r.host));
  expect(r, "all of C (mixed destinations)", r.vecAdd.c, r.bytes, {});
  expect(r, "GPU share + CPU share read on the host");
}

void expect(Checks& r, CUresult discarded) {
  r.report.out() << "\n[8] cuMemDiscardBatchAsync: C's contents are dead before the kernel "
                    "overwrites it\n";
  r.discardSupported = discarded != CUDA_ERROR_NOT_SUPPORTED;
  if (!r.discardSupported)
    r.report.out() << "  not supported by this driver (" << ms::describeResult(discarded) << ")\n";
  else
    ms::check(discarded, "cuMemDiscardBatchAsync");
}

// ------------------------------------------------------------------------------ the measurements

namespace {

void measureKernels(Checks& r) {
  std::ostream& out = r.report.out();
  const ms::VectorAddLaunch& k = r.vecAdd;
  const int warmup = r.options.common.warmup;
  const int iterations = r.options.common.iterations;
  out << "\n[9a] Kernel C = A + B on " << ms::formatBytes(r.bytes)
      << " vectors (3 x size bytes per launch)\n  This machine: " << mm::pagingModel(r.plan.support)
      << '\n';

  // (a) Demand paging: before each launch A, B and C move to the host (untimed), so the timed
  // kernel faults every page over to the GPU.
  poisonC(r);
  const double paging =
      timeRounds(k.stream, 1, r.options.migrationIterations,
                 {[&] { prefetchVectors(r, r.host); }, [&] { launch(k); }})[1].gpuMs;
  expect(r, "(a) result");

  // (b) Prefetched: one prefetch, then the kernel finds every page resident.
  poisonC(r);
  prefetchVectors(r, r.gpu);
  const double prefetched = ms::timeVectorAdd(k, warmup, iterations).medianMs;
  expect(r, "(b) result");

  // (c) The reference: ordinary device memory.
  ms::OwnedDeviceMemory d[3];  // A, B and C in cuMemAlloc memory
  for (ms::OwnedDeviceMemory& buffer : d)
    ms::check(cuMemAlloc(buffer.out(), r.bytes), "cuMemAlloc");
  const ms::DrainOnExit drain{k.stream};
  ms::check(cuMemcpyAsync(d[0].get(), k.a, r.bytes, k.stream), "cuMemcpyAsync");
  ms::check(cuMemcpyAsync(d[1].get(), k.b, r.bytes, k.stream), "cuMemcpyAsync");
  ms::check(cuMemsetD32Async(d[2].get(), kPoison, k.count, k.stream), "cuMemsetD32Async");
  const ms::VectorAddLaunch onDevice{k.kernel, k.grid,   k.block,  k.stream,
                                     d[0].get(),  d[1].get(), d[2].get(), k.count};
  const double device = ms::timeVectorAdd(onDevice, warmup, iterations).medianMs;
  poisonC(r);
  ms::check(cuMemcpyAsync(k.c, d[2].get(), r.bytes, k.stream), "cuMemcpyAsync");
  ms::check(cuStreamSynchronize(k.stream), "cuStreamSynchronize");
  expect(r, "(c) result (copied into C)");

  // (d) Advice instead of migration: pages stay in host memory and the GPU maps them, so the
  // kernel reads and writes across the bus without a single fault.
  adviseOnHost(r, {k.a, k.b, k.c}, true);
  poisonC(r);
  prefetchVectors(r, r.host);
  // Read back: preferred host, accessed by the GPU, last prefetched to the host.
  expect(r, "A with preferred host + accessed-by GPU", k.a, r.bytes,
           {false, r.host, {r.plan.ordinal}, r.host}, true);
  const double remote =
      ms::timeVectorAdd(k, std::min(warmup, 1), std::min(iterations, r.options.migrationIterations))
          .medianMs;
  ms::check(cuStreamSynchronize(k.stream), "cuStreamSynchronize");
  expect(r, "(d) result");
  adviseOnHost(r, {k.a, k.b, k.c}, false);

  const char* const labels[] = {"(a) managed, demand paging (pages start on the host)",
                                "(b) managed, prefetched to the GPU",
                                "(c) cuMemAlloc device memory (reference)",
                                "(d) managed, kept on the host, GPU-mapped by advice"};
  const char* const keys[] = {"Paging", "Prefetched", "Device", "Remote"};
  const double medians[] = {paging, prefetched, device, remote};
  double gbps[4] = {};
  for (int i = 0; i < 4; ++i) {
    gbps[i] = ms::gigabytesPerSecond(3.0 * static_cast<double>(r.bytes), medians[i]);
    out << format("  %-60s%9.1f GB/s  median %.3f ms\n", labels[i], gbps[i], medians[i]);
    r.report.json()
        .set(std::string("kernel") + keys[i] + "Ms", medians[i])
        .set(std::string("kernel") + keys[i] + "GBps", gbps[i]);
  }
  r.prefetchedOverDevice = gbps[1] / gbps[2];
  r.pagingSlowdown = paging / prefetched;
  out << format("  (b)/(c) = %.3f (expected >= 0.95 on an H200: resident managed pages are "
                "ordinary device memory)\n  demand paging is %.1fx slower than the prefetched "
                "run; (d) runs at %.3f of (c), bounded by the host link\n",
                r.prefetchedOverDevice, r.pagingSlowdown, gbps[3] / gbps[2]);
  r.report.json()
      .set("prefetchedOverDevice", r.prefetchedOverDevice)
      .set("demandPagingSlowdown", r.pagingSlowdown);
}

void measureTransfers(Checks& r) {
  std::ostream& out = r.report.out();
  const ms::VectorAddLaunch& k = r.vecAdd;
  const int warmup = r.options.common.warmup;
  const int iterations = r.options.common.iterations;
  const auto gbps = [&r](double medianMs) {
    return ms::gigabytesPerSecond(static_cast<double>(r.bytes), medianMs);
  };
  out << "\n[9b] Host <-> GPU, " << ms::formatBytes(r.bytes)
      << " (A starts on the GPU and moves GPU -> host -> GPU each repetition)\n";
  // A known start: A entirely on the GPU (with --warmup 0 the first prefetch to the host would
  // otherwise move nothing).
  prefetch(k.a, r.bytes, r.gpu, k.stream);
  const std::vector<StageTimes> moves =
      timeRounds(k.stream, warmup, iterations,
                 {[&] { prefetch(k.a, r.bytes, r.host, k.stream); },
                  [&] { prefetch(k.a, r.bytes, r.gpu, k.stream); }});
  const double prefetchDown = gbps(moves[0].gpuMs);
  const double prefetchUp = gbps(moves[1].gpuMs);

  // The references: copies between cuMemAlloc memory and pinned, then pageable, host memory
  // (one host copy at a time, as planManagedSizes counted).
  ms::OwnedDeviceMemory device;
  ms::check(cuMemAlloc(device.out(), r.bytes), "cuMemAlloc");
  const ms::DrainOnExit drainDevice{k.stream};
  double pinnedUp = 0;
  double pinnedDown = 0;
  {
    ms::OwnedPinnedHostMemory pinned;
    ms::check(cuMemHostAlloc(pinned.out(), r.bytes, 0), "cuMemHostAlloc");
    std::memset(pinned.get(), 1, r.bytes);
    const ms::DrainOnExit drainPinned{k.stream};
    pinnedUp = gbps(ms::timeOnStream(k.stream, warmup, iterations, [&] {
                      ms::check(cuMemcpyHtoDAsync(device.get(), pinned.get(), r.bytes, k.stream),
                                "cuMemcpyHtoDAsync");
                    }).medianMs);
    pinnedDown = gbps(ms::timeOnStream(k.stream, warmup, iterations, [&] {
                        ms::check(cuMemcpyDtoHAsync(pinned.get(), device.get(), r.bytes, k.stream),
                                  "cuMemcpyDtoHAsync");
                      }).medianMs);
  }
  // [pageable]
  // Pageable: a std::vector's memory, every page touched before timing (a first touch would be timed
  // too). cuMemcpyDtoH returns when the copy is done, so the host clock times it.
  std::vector<unsigned char> pageable(r.bytes, 1);
  const double pageableDown = gbps(timeRounds(k.stream, warmup, iterations, {[&] {
                                     ms::check(cuMemcpyDtoH(pageable.data(), device.get(), r.bytes),
                                               "cuMemcpyDtoH");
                                   }})[0].hostMs);
  // [pageable]

  // [in-place]
  // Results back without a migration: C stays in host memory (preferred location host) and the
  // GPU maps it (accessed-by), so the kernel's stores cross the link into host pages. A and B
  // are on the GPU: the link carries C only. C's pages are made on the host first (prefetch, then
  // the CPU writes NaNs into every one), or the first launch would pay for creating them.
  adviseOnHost(r, {k.c}, true);
  prefetch(k.a, r.bytes, r.gpu, k.stream);
  prefetch(k.b, r.bytes, r.gpu, k.stream);
  prefetch(k.c, r.bytes, r.host, k.stream);
  ms::check(cuStreamSynchronize(k.stream), "cuStreamSynchronize");
  std::memset(r.hostC, 0xFF, r.bytes);
  expect(r, "C with preferred host + accessed-by GPU", k.c, r.bytes,
           {false, r.host, {r.plan.ordinal}, r.host}, true);
  const ms::TimingStats inPlace = ms::timeVectorAdd(k, warmup, iterations);
  expect(r, "C written in place by the GPU, read on the host");
  adviseOnHost(r, {k.c}, false);
  const double inPlaceGBps = gbps(inPlace.medianMs);
  // [in-place]

  r.prefetchOverPinned = printRates(out, "host -> GPU  cuMemPrefetchAsync", prefetchUp,
                                   "pinned cuMemcpyHtoDAsync", pinnedUp,
                                   "expected >= 0.8 on an H200");
  r.prefetchOverPageable = printRates(out, "GPU -> host  cuMemPrefetchAsync", prefetchDown,
                                     "pageable cuMemcpyDtoH", pageableDown, "goal >= 1.0");
  out << format("               the link's limit: pinned cuMemcpyDtoHAsync %.1f GB/s (prefetch / "
                "pinned = %.3f; managed host pages are not pinned)\n",
                pinnedDown, prefetchDown / pinnedDown);
  r.inPlaceOverPinned = printRates(out, "GPU -> host  kernel writes C in place", inPlaceGBps,
                                  "pinned cuMemcpyDtoHAsync", pinnedDown, "goal >= 0.8");
  // Every figure in the JSON result, in this order.
  const std::pair<const char*, double> figures[] = {
      {"prefetchHtoDGBps", prefetchUp}, {"pinnedHtoDGBps", pinnedUp},
      {"prefetchOverPinnedHtoD", r.prefetchOverPinned}, {"prefetchDtoHGBps", prefetchDown},
      {"pinnedDtoHGBps", pinnedDown}, {"prefetchOverPinnedDtoH", prefetchDown / pinnedDown},
      {"pageableDtoHGBps", pageableDown}, {"prefetchOverPageableDtoH", r.prefetchOverPageable},
      {"inPlaceWriteMs", inPlace.medianMs}, {"inPlaceWriteGBps", inPlaceGBps},
      {"inPlaceOverPinnedDtoH", r.inPlaceOverPinned}};
  for (const auto& [key, figure] : figures)
    r.report.json().set(key, figure);
}

void measureBatchVersusSingle(Checks& r) {
  std::ostream& out = r.report.out();
  const CUstream stream = r.vecAdd.stream;
  const std::uint64_t rangeBytes = *r.options.rangeBytes;
  const std::uint64_t spanBytes = r.plan.sizes.spanBytes;
  ms::OwnedDeviceMemory span;  // managed, freed with cuMemFree like cuMemAlloc memory
  ms::check(cuMemAllocManaged(span.out(), spanBytes, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged");
  const ms::DrainOnExit drain{stream};
  out << "\n[9c] One cuMemPrefetchBatchAsync of K ranges vs K cuMemPrefetchAsync calls\n"
      << "  ranges of " << ms::formatBytes(rangeBytes) << ", one every "
      << ms::formatBytes(2 * rangeBytes) << " of a " << ms::formatBytes(spanBytes)
      << " managed span, host -> GPU. Before each timed\n"
      << "  repetition the span goes back to the host (untimed), so every prefetch moves data.\n"
      << "  GPU time: CUDA events around the enqueue (includes any gap while the host is still\n"
      << "  enqueueing); host time: how long the calls kept the CPU busy. Medians.\n"
      << "       K   batch GPU ms  singles GPU ms  speedup   batch host ms  singles host ms\n";
  auto* data = reinterpret_cast<unsigned char*>(static_cast<std::uintptr_t>(span.get()));
  std::memset(data, kSpanPattern, spanBytes);  // pages on the host, with data
  const auto toHost = [&] { prefetch(span.get(), spanBytes, r.host, stream); };
  ms::JsonArray rows;
  for (const int count : r.options.batchCounts) {
    const std::vector<ms::ByteRange> ranges =
        ms::stridedRanges(static_cast<std::size_t>(count), rangeBytes, 2 * rangeBytes);
    mm::PrefetchBatch batch;
    for (const ms::ByteRange& range : ranges)
      mm::addRange(batch, span.get() + range.offset, range.bytes, r.gpu);
    mm::validatePrefetchBatch(batch, stream);
    const auto oneBatch = [&] {
      ms::check(cuMemPrefetchBatchAsync(batch.dptrs.data(), batch.sizes.data(), batch.dptrs.size(),
                                        batch.locations.data(), batch.locationStarts.data(),
                                        batch.locations.size(), 0, stream),
                "cuMemPrefetchBatchAsync");
    };
    const auto singles = [&] {
      for (const ms::ByteRange& range : ranges)
        prefetch(span.get() + range.offset, range.bytes, r.gpu, stream);
    };
    const std::vector<StageTimes> t = timeRounds(stream, r.options.common.warmup,
                                                 r.options.common.iterations,
                                                 {toHost, oneBatch, toHost, singles});
    out << format("%8d%15.3f%16.3f%8.2fx%15.3f%17.3f\n", count, t[1].gpuMs, t[3].gpuMs,
                  t[3].gpuMs / t[1].gpuMs, t[1].hostMs, t[3].hostMs);
    ms::JsonObject row;
    row.set("ranges", count)
        .set("batchGpuMs", t[1].gpuMs)
        .set("singlesGpuMs", t[3].gpuMs)
        .set("batchHostMs", t[1].hostMs)
        .set("singlesHostMs", t[3].hostMs);
    rows.addRaw(row.dump());
  }
  r.report.json().set("batchVsSingle", rows).set("batchRangeBytes", rangeBytes);

  // The span went back and forth many times; its bytes must still be what the CPU wrote.
  prefetch(span.get(), spanBytes, r.host, stream);
  ms::check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  const auto changed = static_cast<std::size_t>(
      std::count_if(data, data + spanBytes, [](unsigned char v) { return v != kSpanPattern; }));
  r.list.expect(changed == 0, "benchmark span after all prefetches", "every byte unchanged",
                 std::to_string(changed) + " bytes changed");
}

void measureDiscard(Checks& r) {
  std::ostream& out = r.report.out();
  const ms::VectorAddLaunch& k = r.vecAdd;
  out << "\n[9d] cuMemPrefetchAsync of C host -> GPU, live data vs after cuMemDiscardBatchAsync\n";
  if (!r.discardSupported) {
    out << "  skipped: cuMemDiscardBatchAsync is not supported by this driver\n";
    return;
  }
  // C starts on the host each time. Moving it there copies its pages back from the GPU, so it
  // holds data again (the values do not matter: the kernel overwrites C afterwards).
  const auto toHost = [&] { prefetch(k.c, r.bytes, r.host, k.stream); };
  const auto discard = [&] {
    toHost();
    ms::check(cuMemDiscardBatchAsync(&r.vecAdd.c, &r.bytes, 1, 0, k.stream), "cuMemDiscardBatchAsync");
  };
  const auto toGpu = [&] { prefetch(k.c, r.bytes, r.gpu, k.stream); };
  const std::vector<StageTimes> t =
      timeRounds(k.stream, 0, r.options.migrationIterations, {toHost, toGpu, discard, toGpu});
  out << format("  prefetch of C (%s): live data %.3f ms, after discard %.3f ms (median of %d).\n",
                ms::formatBytes(r.bytes).c_str(), t[1].gpuMs, t[3].gpuMs,
                r.options.migrationIterations)
      << "  Discarded pages hold nothing worth keeping, so the driver may populate them on the "
         "GPU instead of copying them.\n";
  // The discarded C now holds indeterminate values; the kernel overwrites all of it.
  launch(k);
  ms::check(cuStreamSynchronize(k.stream), "cuStreamSynchronize");
  expect(r, "C written by the GPU after the timed discards");
  r.report.json().set("prefetchLiveMs", t[1].gpuMs).set("prefetchDiscardedMs", t[3].gpuMs);
}

ms::Verdict verdict(Checks& r) {
  std::ostream& out = r.report.out();
  out << format("\nSummary: kernel on prefetched managed / cuMemAlloc = %.3f, prefetch / pinned "
                "copy (host -> GPU) = %.3f, prefetch / pageable copy (GPU -> host) = %.3f, "
                "in-place writes / pinned copy (GPU -> host) = %.3f, demand paging slowdown = "
                "%.1fx\n",
                r.prefetchedOverDevice, r.prefetchOverPinned, r.prefetchOverPageable,
                r.inPlaceOverPinned, r.pagingSlowdown)
      << "Checks: " << r.list.checks() << ", failed: " << r.list.failures().size() << '\n';
  ms::JsonArray failures;
  for (const std::string& failure : r.list.failures()) {
    out << "  FAIL " << failure << '\n';
    failures.add(failure);
  }
  const mm::ManagedSupport& s = r.plan.support;
  r.report.json()
      .set("device", r.plan.ordinal)
      .set("deviceName", r.plan.deviceName)
      .set("bytesPerVector", static_cast<std::uint64_t>(r.bytes))
      .set("iterations", r.options.common.iterations)
      .set("migrationIterations", r.options.migrationIterations)
      .set("hostNumaId", s.hostNumaId)
      .set("pageableMemoryAccess", s.pageableMemoryAccess)
      .set("pageableUsesHostPageTables", s.pageableUsesHostPageTables)
      .set("coherentHostAccess", mm::coherentHostAccess(s))
      .set("checks", static_cast<std::uint64_t>(r.list.checks()))
      .set("failures", failures);
  return r.list.passed() ? ms::Verdict::Pass : ms::Verdict::Fail;
}

}  // namespace

ms::Verdict measureCosts(Checks& checks) {
  measureKernels(checks);
  measureTransfers(checks);
  measureBatchVersusSingle(checks);
  measureDiscard(checks);
  return verdict(checks);
}
