/**
 * @file managedAdvisePrefetch_measure.cpp
 * @brief 03_managedAdvisePrefetch's plan, checks and measurements; see the header.
 */
#include "managedAdvisePrefetch_measure.hpp"

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <utility>

#include "support/timing.hpp"

namespace ms = memsamples;
namespace mm = memsamples::managed;

namespace {

constexpr std::uint64_t kDefaultBytes = 1ull << 30;  // per vector
constexpr std::uint32_t kPoison = 0xFFFFFFFFu;       // a NaN: never equal to A + B
constexpr unsigned char kSpanPattern = 0x5A;
using Clock = std::chrono::steady_clock;

/// printf-style text for the report's lines.
__attribute__((format(printf, 1, 2))) std::string format(const char* pattern, ...) {
  char line[512];
  va_list args;
  va_start(args, pattern);
  std::vsnprintf(line, sizeof line, pattern, args);
  va_end(args);
  return line;
}

/// Sets each (key, figure) of @p figures in @p json, in that order.
void setFigures(ms::JsonObject& json,
                std::initializer_list<std::pair<const char*, double>> figures) {
  for (const auto& [key, figure] : figures)
    json.set(key, figure);
}

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

/// The medians of one stage: GPU time between events around it, and how long queuing it kept the
/// CPU busy (for a synchronous call such as cuMemcpyDtoH, the call itself).
struct StageTimes {
  double gpuMs = 0;
  double hostMs = 0;
};

/// The one timer of the measurements that need more than timeOnStream(): runs @p stages in
/// order, @p warmup + @p iterations rounds, all queued on @p stream before it is waited for, and
/// returns the medians of each stage over the last @p iterations rounds. A stage that only moves
/// data into place (a migration before a timed prefetch) has its own events, so it is never part
/// of the time of the stage after it; its own times are simply not read.
std::vector<StageTimes> timeRounds(CUstream stream, int warmup, int iterations,
                                   const std::vector<std::function<void()>>& stages) {
  const std::size_t n = stages.size();
  const std::size_t untimed = 2 * n * static_cast<std::size_t>(warmup);  // the warm-up's events
  std::vector<ms::OwnedEvent> marks(untimed + 2 * n * static_cast<std::size_t>(iterations));
  for (ms::OwnedEvent& mark : marks)
    ms::check(cuEventCreate(mark.out(), CU_EVENT_DEFAULT), "cuEventCreate");
  std::vector<std::vector<double>> hostMs(n);
  for (std::size_t m = 0; m < marks.size(); m += 2) {
    const std::size_t s = m / 2 % n;  // events m and m + 1 enclose stage s of round m / (2 n)
    ms::check(cuEventRecord(marks[m].get(), stream), "cuEventRecord");
    const Clock::time_point begin = Clock::now();
    stages[s]();
    const std::chrono::duration<double, std::milli> busy = Clock::now() - begin;
    hostMs[s].push_back(busy.count());
    ms::check(cuEventRecord(marks[m + 1].get(), stream), "cuEventRecord");
  }
  ms::check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  std::vector<StageTimes> medians(n);
  for (std::size_t s = 0; s < n; ++s) {
    std::vector<double> gpuMs;
    for (std::size_t m = untimed + 2 * s; m < marks.size(); m += 2 * n) {
      float elapsed = 0;
      ms::check(cuEventElapsedTime(&elapsed, marks[m].get(), marks[m + 1].get()),
                "cuEventElapsedTime");
      gpuMs.push_back(elapsed);
    }
    hostMs[s].erase(hostMs[s].begin(), hostMs[s].begin() + warmup);
    medians[s] = {ms::summarizeTimings(gpuMs).medianMs, ms::summarizeTimings(hostMs[s]).medianMs};
  }
  return medians;
}

}  // namespace

ManagedPlan planRun(const ManagedOptions& options, CUdevice device, CUfunction kernel,
                    ms::Report& report) {
  std::ostream& out = report.out();
  ManagedPlan plan;
  plan.ordinal = ms::deviceOrdinal(device);
  plan.deviceName = ms::deviceName(device);
  out << "Device " << plan.ordinal << ": " << plan.deviceName << '\n';
  mm::ManagedSupport& s = plan.support;
  s.managedMemory = ms::deviceAttribute(device, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY);
  s.concurrentManagedAccess =
      ms::deviceAttribute(device, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS);
  s.pageableMemoryAccess = ms::deviceAttribute(device, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS);
  s.directManagedAccessFromHost =
      ms::deviceAttribute(device, CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST);
  s.pageableUsesHostPageTables =
      ms::deviceAttribute(device, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES);
  s.hostNumaId = ms::deviceAttribute(device, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID);
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
  plan.numaNode = s.hostNumaId;
  return plan;
}

ManagedRun::ManagedRun(ms::Report& report, const ManagedOptions& options, const ManagedPlan& plan,
                       CUfunction kernel, CUstream stream, const std::vector<CUdeviceptr>& abc)
    : hostA(reinterpret_cast<float*>(static_cast<std::uintptr_t>(abc.at(0)))),
      hostB(reinterpret_cast<float*>(static_cast<std::uintptr_t>(abc.at(1)))),
      hostC(reinterpret_cast<float*>(static_cast<std::uintptr_t>(abc.at(2)))),
      report_(report),
      options_(options),
      plan_(plan),
      vecAdd_{kernel, plan.grid, plan.block, stream, abc[0], abc[1], abc[2],
              plan.sizes.vectorBytes / sizeof(float)},
      bytes_(plan.sizes.vectorBytes),
      gpu_(mm::deviceLocation(plan.ordinal)),
      host_(mm::hostLocation()) {}

// ------------------------------------------------------------------------ the lesson's checks

void ManagedRun::expectPointers(const mm::PointerAttributes& atStart,
                                const mm::PointerAttributes& inside) {
  const CUdeviceptr a = vecAdd_.a;
  CUcontext context = nullptr;
  ms::check(cuCtxGetCurrent(&context), "cuCtxGetCurrent");
  report_.out() << "\n[4] cuPointerGetAttributes on A (" << mm::hex(a) << ", "
                << ms::formatBytes(bytes_) << ")\n"
                << mm::describePointerAttributes(atStart, inside, a + bytes_ / 2, context);
  checks_.expectAttributes("cuPointerGetAttributes on A",
                           mm::comparePointerAttributes(atStart, inside, a, bytes_, plan_.ordinal),
                           mm::kPointerAttributeChecks);
}

void ManagedRun::expectRange(const std::string& label, const mm::ExpectedRange& expected,
                             const mm::RangeAttributes& one, const mm::RangeAttributes& all,
                             bool print) {
  if (!std::exchange(adviceReported_, true))
    report_.out() << "\n[5] Advice on A, each read back by cuMemRangeGetAttribute(s) (x8, then x1)\n";
  const bool asAdvised = checks_.expectAttributes(label, mm::compareRangeAttributes(expected, one));
  const bool consistent = checks_.expectAttributes(
      label + " (cuMemRangeGetAttributes vs cuMemRangeGetAttribute)",
      mm::differingAttributes(one, all));
  if (print || !asAdvised || !consistent) {
    report_.out() << format("  %-44s ", label.c_str()) << mm::describeRangeAttributes(one)
                  << (asAdvised && consistent ? "" : "  <- MISMATCH") << '\n';
  }
  // Both answers for a node are right; which one this driver gives is worth seeing.
  if (const std::string node = mm::hostNumaReadBack(expected, one); !node.empty())
    report_.out() << "    " << node << '\n';
}

bool ManagedRun::refused(const mm::AdviceStep& step, CUresult result) {
  if (result == CUDA_SUCCESS || !step.mayBeRefused)
    return false;
  report_.out() << "  " << step.label << ": not accepted (" << ms::describeResult(result)
                << "), the advice stays as it was\n";
  return true;
}

bool ManagedRun::verify(const std::string& what) {
  const ms::VectorAddCheck result = ms::checkVectorAdd(hostA, hostB, hostC, vecAdd_.count);
  const bool exact = result.mismatches == 0;
  const std::string found = exact ? "0 mismatches" : ms::describeMismatch(result);
  checks_.expect(exact, what, "C == A + B everywhere", found);
  report_.out() << "  " << what << ": " << (exact ? "C == A + B, exact" : found) << '\n';
  return exact;
}

void ManagedRun::checkRoundTrip() {
  report_.out() << "\n[6] cuMemPrefetchAsync: A, B, C to the GPU, compute, C back to the host\n";
  readBack("A after prefetch to the GPU", vecAdd_.a, bytes_, mm::prefetchedTo(gpu_), true);
  readBack("C after prefetch back to host", vecAdd_.c, bytes_, mm::prefetchedTo(host_), true);
  verify("GPU result read on the host after the round trip");
}

void ManagedRun::addOnGpuAndCpu(const mm::PrefetchBatch& batch) {
  std::ostream& out = report_.out();
  out << "\n[7] cuMemPrefetchBatchAsync: chunks 0-5 of A, B, C to the GPU, 6-9 to the host\n  "
      << mm::describeBatch(batch) << '\n';
  report_.json()
      .set("batchRanges", static_cast<std::uint64_t>(batch.dptrs.size()))
      .set("batchLocations", static_cast<std::uint64_t>(batch.locations.size()));
  // The first host range is chunk 6 of A: the GPU adds the elements before it, the CPU the rest.
  const std::size_t gpuElements =
      (batch.dptrs.at(batch.locationStarts.at(1)) - vecAdd_.a) / sizeof(float);
  launch(vecAdd_.a, vecAdd_.b, vecAdd_.c, gpuElements);
  for (std::size_t i = gpuElements; i < vecAdd_.count; ++i)
    hostC[i] = hostA[i] + hostB[i];
  ms::check(cuStreamSynchronize(vecAdd_.stream), "cuStreamSynchronize");
  for (std::size_t i = 0; i < batch.dptrs.size(); ++i) {
    readBack("batch range " + std::to_string(i), batch.dptrs[i], batch.sizes[i],
             mm::prefetchedTo(mm::destinationOf(batch, i)), false);
  }
  out << "  every range reads back its own destination as LAST_PREFETCH_LOCATION ("
      << batch.dptrs.size() << " ranges checked); chunk 0 and chunk 9 of C:\n";
  readBack("C chunk 0", vecAdd_.c, batch.sizes.front(), mm::prefetchedTo(gpu_), true);
  readBack("C chunk 9", batch.dptrs.back(), batch.sizes.back(), mm::prefetchedTo(host_), true);
  readBack("all of C (mixed destinations)", vecAdd_.c, bytes_, {}, true);
  verify("GPU share + CPU share read on the host");
}

void ManagedRun::rewriteAfterDiscard(CUresult discarded) {
  report_.out() << "\n[8] cuMemDiscardBatchAsync: C's contents are dead before the kernel "
                   "overwrites it\n";
  if (discarded == CUDA_ERROR_NOT_SUPPORTED) {
    discardSupported_ = false;
    report_.out() << "  not supported by this driver (" << ms::describeResult(discarded) << ")\n";
  }
  prefetch(vecAdd_.c, bytes_, gpu_, vecAdd_.stream);
  launch(vecAdd_.a, vecAdd_.b, vecAdd_.c, vecAdd_.count);
  ms::check(cuStreamSynchronize(vecAdd_.stream), "cuStreamSynchronize");
  readBack("C after discard + prefetch", vecAdd_.c, bytes_, mm::prefetchedTo(gpu_), true);
  verify("C written by the GPU after the discard");
}

// ------------------------------------------------------------------------------ the measurements

void ManagedRun::launch(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, std::size_t count) {
  unsigned long long n = count;  // the kernel's parameter types, exactly
  void* params[] = {&a, &b, &c, &n};
  ms::check(cuLaunchKernel(vecAdd_.kernel, vecAdd_.grid, 1, 1, vecAdd_.block, 1, 1, 0,
                           vecAdd_.stream, params, nullptr),
            "cuLaunchKernel");
}

void ManagedRun::prefetchVectors(const CUmemLocation& where) {
  for (const CUdeviceptr v : {vecAdd_.a, vecAdd_.b, vecAdd_.c})
    prefetch(v, bytes_, where, vecAdd_.stream);
}

/// NaNs in C, so that a result that was not written cannot pass the check.
void ManagedRun::poisonC() {
  ms::check(cuMemsetD32Async(vecAdd_.c, kPoison, vecAdd_.count, vecAdd_.stream),
            "cuMemsetD32Async");
}

/// Sets or unsets (@p set) SET_PREFERRED_LOCATION host + SET_ACCESSED_BY device on @p vectors.
void ManagedRun::adviseOnHost(const std::vector<CUdeviceptr>& vectors, bool set) {
  const std::pair<CUmem_advise, CUmemLocation> advice[] = {
      {set ? CU_MEM_ADVISE_SET_PREFERRED_LOCATION : CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, host_},
      {set ? CU_MEM_ADVISE_SET_ACCESSED_BY : CU_MEM_ADVISE_UNSET_ACCESSED_BY, gpu_}};
  for (const CUdeviceptr v : vectors) {
    for (const auto& [what, where] : advice)
      ms::check(cuMemAdvise(v, bytes_, what, where), "cuMemAdvise");
  }
}

void ManagedRun::measureKernels() {
  std::ostream& out = report_.out();
  const ms::VectorAddLaunch& k = vecAdd_;
  const int warmup = options_.common.warmup;
  const int iterations = options_.common.iterations;
  const auto onManaged = [&] { launch(k.a, k.b, k.c, k.count); };
  out << "\n[9a] Kernel C = A + B on " << ms::formatBytes(bytes_)
      << " vectors (3 x size bytes per launch)\n  This machine: " << mm::pagingModel(plan_.support)
      << '\n';

  // (a) Demand paging: before each launch A, B and C move to the host (untimed), so the timed
  // kernel faults every page over to the GPU.
  poisonC();
  const double paging =
      timeRounds(k.stream, 1, options_.migrationIterations,
                 {[&] { prefetchVectors(host_); }, onManaged})[1].gpuMs;
  verify("(a) result");

  // (b) Prefetched: one prefetch, then the kernel finds every page resident.
  poisonC();
  prefetchVectors(gpu_);
  const double prefetched = ms::timeVectorAdd(k, warmup, iterations).medianMs;
  verify("(b) result");

  // (c) The reference: ordinary device memory.
  ms::OwnedDeviceMemory da;
  ms::OwnedDeviceMemory db;
  ms::OwnedDeviceMemory dc;
  for (ms::OwnedDeviceMemory* buffer : {&da, &db, &dc})
    ms::check(cuMemAlloc(buffer->out(), bytes_), "cuMemAlloc");
  const ms::DrainOnExit drain{k.stream};
  ms::check(cuMemcpyAsync(da.get(), k.a, bytes_, k.stream), "cuMemcpyAsync");
  ms::check(cuMemcpyAsync(db.get(), k.b, bytes_, k.stream), "cuMemcpyAsync");
  ms::check(cuMemsetD32Async(dc.get(), kPoison, k.count, k.stream), "cuMemsetD32Async");
  const ms::VectorAddLaunch onDevice{k.kernel, k.grid,   k.block,  k.stream,
                                     da.get(),  db.get(), dc.get(), k.count};
  const double device = ms::timeVectorAdd(onDevice, warmup, iterations).medianMs;
  poisonC();
  ms::check(cuMemcpyAsync(k.c, dc.get(), bytes_, k.stream), "cuMemcpyAsync");
  ms::check(cuStreamSynchronize(k.stream), "cuStreamSynchronize");
  verify("(c) result (copied into C)");

  // (d) Advice instead of migration: pages stay in host memory and the GPU maps them, so the
  // kernel reads and writes across the bus without a single fault.
  adviseOnHost({k.a, k.b, k.c}, true);
  poisonC();
  prefetchVectors(host_);
  // Read back: preferred host, accessed by the GPU, last prefetched to the host.
  readBack("A with preferred host + accessed-by GPU", k.a, bytes_,
           {false, host_, {plan_.ordinal}, host_}, true);
  const double remote =
      ms::timeVectorAdd(k, std::min(warmup, 1), std::min(iterations, options_.migrationIterations))
          .medianMs;
  ms::check(cuStreamSynchronize(k.stream), "cuStreamSynchronize");
  verify("(d) result");
  adviseOnHost({k.a, k.b, k.c}, false);

  const char* const labels[] = {"(a) managed, demand paging (pages start on the host)",
                                "(b) managed, prefetched to the GPU",
                                "(c) cuMemAlloc device memory (reference)",
                                "(d) managed, kept on the host, GPU-mapped by advice"};
  const char* const keys[] = {"Paging", "Prefetched", "Device", "Remote"};
  const double medians[] = {paging, prefetched, device, remote};
  double gbps[4] = {};
  for (int i = 0; i < 4; ++i) {
    gbps[i] = ms::gigabytesPerSecond(3.0 * static_cast<double>(bytes_), medians[i]);
    out << format("  %-60s%9.1f GB/s  median %.3f ms\n", labels[i], gbps[i], medians[i]);
    report_.json()
        .set(std::string("kernel") + keys[i] + "Ms", medians[i])
        .set(std::string("kernel") + keys[i] + "GBps", gbps[i]);
  }
  prefetchedOverDevice_ = gbps[1] / gbps[2];
  pagingSlowdown_ = paging / prefetched;
  out << format("  (b)/(c) = %.3f (expected >= 0.95 on an H200: resident managed pages are "
                "ordinary device memory)\n  demand paging is %.1fx slower than the prefetched "
                "run; (d) runs at %.3f of (c), bounded by the host link\n",
                prefetchedOverDevice_, pagingSlowdown_, gbps[3] / gbps[2]);
  report_.json()
      .set("prefetchedOverDevice", prefetchedOverDevice_)
      .set("demandPagingSlowdown", pagingSlowdown_);
}

void ManagedRun::measureTransfers() {
  std::ostream& out = report_.out();
  const ms::VectorAddLaunch& k = vecAdd_;
  const int warmup = options_.common.warmup;
  const int iterations = options_.common.iterations;
  const auto gbps = [this](double medianMs) {
    return ms::gigabytesPerSecond(static_cast<double>(bytes_), medianMs);
  };
  out << "\n[9b] Host <-> GPU, " << ms::formatBytes(bytes_)
      << " (A starts on the GPU and moves GPU -> host -> GPU each repetition)\n";
  // A known start: A entirely on the GPU (with --warmup 0 the first prefetch to the host would
  // otherwise move nothing).
  prefetch(k.a, bytes_, gpu_, k.stream);
  const std::vector<StageTimes> moves =
      timeRounds(k.stream, warmup, iterations,
                 {[&] { prefetch(k.a, bytes_, host_, k.stream); },
                  [&] { prefetch(k.a, bytes_, gpu_, k.stream); }});
  const double prefetchDown = gbps(moves[0].gpuMs);
  const double prefetchUp = gbps(moves[1].gpuMs);

  // The references: copies between cuMemAlloc memory and pinned, then pageable, host memory
  // (one host copy at a time, as planManagedSizes counted).
  ms::OwnedDeviceMemory device;
  ms::check(cuMemAlloc(device.out(), bytes_), "cuMemAlloc");
  const ms::DrainOnExit drainDevice{k.stream};
  double pinnedUp = 0;
  double pinnedDown = 0;
  {
    ms::OwnedPinnedHostMemory pinned;
    ms::check(cuMemHostAlloc(pinned.out(), bytes_, 0), "cuMemHostAlloc");
    std::memset(pinned.get(), 1, bytes_);
    const ms::DrainOnExit drainPinned{k.stream};
    pinnedUp = gbps(ms::timeOnStream(k.stream, warmup, iterations, [&] {
                      ms::check(cuMemcpyHtoDAsync(device.get(), pinned.get(), bytes_, k.stream),
                                "cuMemcpyHtoDAsync");
                    }).medianMs);
    pinnedDown = gbps(ms::timeOnStream(k.stream, warmup, iterations, [&] {
                        ms::check(cuMemcpyDtoHAsync(pinned.get(), device.get(), bytes_, k.stream),
                                  "cuMemcpyDtoHAsync");
                      }).medianMs);
  }
  // [pageable]
  // Pageable: memory from new, every page touched before timing (a first touch would be timed
  // too). cuMemcpyDtoH returns when the copy is done, so the host clock times it.
  std::vector<unsigned char> pageable(bytes_, 1);
  const double pageableDown = gbps(timeRounds(k.stream, warmup, iterations, {[&] {
                                     ms::check(cuMemcpyDtoH(pageable.data(), device.get(), bytes_),
                                               "cuMemcpyDtoH");
                                   }})[0].hostMs);
  // [pageable]

  // [in-place]
  // Results back without a migration: C stays in host memory (preferred location host) and the
  // GPU maps it (accessed-by), so the kernel's stores cross the link into host pages. A and B
  // are on the GPU: the link carries C only. C's pages are made on the host first (prefetch, then
  // the CPU writes NaNs into every one), or the first launch would pay for creating them.
  adviseOnHost({k.c}, true);
  prefetch(k.a, bytes_, gpu_, k.stream);
  prefetch(k.b, bytes_, gpu_, k.stream);
  prefetch(k.c, bytes_, host_, k.stream);
  ms::check(cuStreamSynchronize(k.stream), "cuStreamSynchronize");
  std::memset(hostC, 0xFF, bytes_);
  readBack("C with preferred host + accessed-by GPU", k.c, bytes_,
           {false, host_, {plan_.ordinal}, host_}, true);
  const ms::TimingStats inPlace = ms::timeVectorAdd(k, warmup, iterations);
  verify("C written in place by the GPU, read on the host");
  adviseOnHost({k.c}, false);
  const double inPlaceGBps = gbps(inPlace.medianMs);
  // [in-place]

  prefetchOverPinned_ = printRates(out, "host -> GPU  cuMemPrefetchAsync", prefetchUp,
                                   "pinned cuMemcpyHtoDAsync", pinnedUp,
                                   "expected >= 0.8 on an H200");
  prefetchOverPageable_ = printRates(out, "GPU -> host  cuMemPrefetchAsync", prefetchDown,
                                     "pageable cuMemcpyDtoH", pageableDown, "goal >= 1.0");
  out << format("               the link's limit: pinned cuMemcpyDtoHAsync %.1f GB/s (prefetch / "
                "pinned = %.3f; managed host pages are not pinned)\n",
                pinnedDown, prefetchDown / pinnedDown);
  inPlaceOverPinned_ = printRates(out, "GPU -> host  kernel writes C in place", inPlaceGBps,
                                  "pinned cuMemcpyDtoHAsync", pinnedDown, "goal >= 0.8");
  setFigures(report_.json(),
             {{"prefetchHtoDGBps", prefetchUp}, {"pinnedHtoDGBps", pinnedUp},
              {"prefetchOverPinnedHtoD", prefetchOverPinned_}, {"prefetchDtoHGBps", prefetchDown},
              {"pinnedDtoHGBps", pinnedDown}, {"prefetchOverPinnedDtoH", prefetchDown / pinnedDown},
              {"pageableDtoHGBps", pageableDown},
              {"prefetchOverPageableDtoH", prefetchOverPageable_},
              {"inPlaceWriteMs", inPlace.medianMs}, {"inPlaceWriteGBps", inPlaceGBps},
              {"inPlaceOverPinnedDtoH", inPlaceOverPinned_}});
}

void ManagedRun::measureBatchVersusSingle() {
  std::ostream& out = report_.out();
  const CUstream stream = vecAdd_.stream;
  const std::uint64_t rangeBytes = *options_.rangeBytes;
  const std::uint64_t spanBytes = plan_.sizes.spanBytes;
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
  const auto toHost = [&] { prefetch(span.get(), spanBytes, host_, stream); };
  ms::JsonArray rows;
  for (const int count : options_.batchCounts) {
    const std::vector<mm::ByteRange> ranges =
        mm::stridedRanges(static_cast<std::size_t>(count), rangeBytes, 2 * rangeBytes);
    mm::PrefetchBatchBuilder builder;
    for (const mm::ByteRange& range : ranges)
      builder.add(span.get() + range.offset, range.bytes, gpu_);
    mm::PrefetchBatch batch = builder.batch();
    mm::validatePrefetchBatch(batch, stream);
    const auto oneBatch = [&] {
      ms::check(cuMemPrefetchBatchAsync(batch.dptrs.data(), batch.sizes.data(), batch.dptrs.size(),
                                        batch.locations.data(), batch.locationStarts.data(),
                                        batch.locations.size(), 0, stream),
                "cuMemPrefetchBatchAsync");
    };
    const auto singles = [&] {
      for (const mm::ByteRange& range : ranges)
        prefetch(span.get() + range.offset, range.bytes, gpu_, stream);
    };
    const std::vector<StageTimes> t = timeRounds(stream, options_.common.warmup,
                                                 options_.common.iterations,
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
  report_.json().set("batchVsSingle", rows).set("batchRangeBytes", rangeBytes);

  // The span went back and forth many times; its bytes must still be what the CPU wrote.
  prefetch(span.get(), spanBytes, host_, stream);
  ms::check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  const auto changed = static_cast<std::size_t>(
      std::count_if(data, data + spanBytes, [](unsigned char v) { return v != kSpanPattern; }));
  checks_.expect(changed == 0, "benchmark span after all prefetches", "every byte unchanged",
                 std::to_string(changed) + " bytes changed");
}

void ManagedRun::measureDiscard() {
  std::ostream& out = report_.out();
  const ms::VectorAddLaunch& k = vecAdd_;
  out << "\n[9d] cuMemPrefetchAsync of C host -> GPU, live data vs after cuMemDiscardBatchAsync\n";
  if (!discardSupported_) {
    out << "  skipped: cuMemDiscardBatchAsync is not supported by this driver\n";
    return;
  }
  CUdeviceptr ranges[] = {k.c};
  std::size_t sizes[] = {bytes_};
  // C starts on the host each time. Moving it there copies its pages back from the GPU, so it
  // holds data again (the values do not matter: the kernel overwrites C afterwards).
  const auto toHost = [&] { prefetch(k.c, bytes_, host_, k.stream); };
  const auto discard = [&] {
    toHost();
    ms::check(cuMemDiscardBatchAsync(ranges, sizes, 1, 0, k.stream), "cuMemDiscardBatchAsync");
  };
  const auto toGpu = [&] { prefetch(k.c, bytes_, gpu_, k.stream); };
  const std::vector<StageTimes> t =
      timeRounds(k.stream, 0, options_.migrationIterations, {toHost, toGpu, discard, toGpu});
  out << format("  prefetch of C (%s): live data %.3f ms, after discard %.3f ms (median of %d).\n",
                ms::formatBytes(bytes_).c_str(), t[1].gpuMs, t[3].gpuMs,
                options_.migrationIterations)
      << "  Discarded pages hold nothing worth keeping, so the driver may populate them on the "
         "GPU instead of copying them.\n";
  // The discarded C now holds indeterminate values; the kernel overwrites all of it.
  launch(k.a, k.b, k.c, k.count);
  ms::check(cuStreamSynchronize(k.stream), "cuStreamSynchronize");
  verify("C written by the GPU after the timed discards");
  report_.json().set("prefetchLiveMs", t[1].gpuMs).set("prefetchDiscardedMs", t[3].gpuMs);
}

ms::Verdict ManagedRun::verdict() {
  std::ostream& out = report_.out();
  out << format("\nSummary: kernel on prefetched managed / cuMemAlloc = %.3f, prefetch / pinned "
                "copy (host -> GPU) = %.3f, prefetch / pageable copy (GPU -> host) = %.3f, "
                "in-place writes / pinned copy (GPU -> host) = %.3f, demand paging slowdown = "
                "%.1fx\n",
                prefetchedOverDevice_, prefetchOverPinned_, prefetchOverPageable_,
                inPlaceOverPinned_, pagingSlowdown_)
      << "Checks: " << checks_.checks() << ", failed: " << checks_.failures().size() << '\n';
  ms::JsonArray failures;
  for (const std::string& failure : checks_.failures()) {
    out << "  FAIL " << failure << '\n';
    failures.add(failure);
  }
  const mm::ManagedSupport& s = plan_.support;
  report_.json()
      .set("device", plan_.ordinal)
      .set("deviceName", plan_.deviceName)
      .set("bytesPerVector", static_cast<std::uint64_t>(bytes_))
      .set("iterations", options_.common.iterations)
      .set("migrationIterations", options_.migrationIterations)
      .set("hostNumaId", s.hostNumaId)
      .set("pageableMemoryAccess", s.pageableMemoryAccess)
      .set("pageableUsesHostPageTables", s.pageableUsesHostPageTables)
      .set("coherentHostAccess", mm::coherentHostAccess(s))
      .set("checks", static_cast<std::uint64_t>(checks_.checks()))
      .set("failures", failures);
  return checks_.passed() ? ms::Verdict::Pass : ms::Verdict::Fail;
}
