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

constexpr std::uint32_t kPoison = 0xFFFFFFFFu;       // a NaN: never equal to A + B
constexpr unsigned char kSpanPattern = 0x5A;

/// One line of step 8b: a rate against its reference on the same buffers, the ratio and what to
/// make of it ("  host -> GPU  prefetch  48.5 GB/s / pinned copy  55.4 GB/s = 0.876 (...)").
/// @return the ratio.
double printRates(std::ostream& out, const char* what, double gbps, const char* reference,
                  double referenceGBps, const char* note) {
  const double ratio = gbps / referenceGBps;
  out << format("  %-32s %6.1f GB/s / %-13s %6.1f GB/s = %.3f (%s)\n", what, gbps, reference,
                referenceGBps, ratio, note);
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

void applyRunDefaults(ManagedOptions& options) {
  if (options.batchCounts.empty())
    options.batchCounts = options.full ? std::vector<int>{16, 256, 4096} : std::vector<int>{16, 64};
}

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
  ms::requireEntryPoint(cuMemDiscardAndPrefetchBatchAsync, "cuMemDiscardAndPrefetchBatchAsync");
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
  const std::uint64_t defaultBytes = options.full ? kFullVectorBytes : kQuickVectorBytes;
  plan.sizes = mm::planManagedSizes(options.sizeBytes, defaultBytes, kMinVectorBytes,
                                    *options.rangeBytes, options.batchCounts, freeBytes,
                                    ms::hostMemoryAvailable());
  out << mm::describeSizes(plan.sizes, freeBytes, totalBytes) << '\n';
  plan.grid = ms::residentGridSize(kernel, device, static_cast<int>(plan.block));
  plan.accessedBySlots = s.deviceCount + 1;
  return plan;
}

Checks::Checks(ms::Report& report_, const ManagedOptions& options_, const ManagedPlan& plan_)
    : report(report_),
      options(options_),
      plan(plan_),
      bytes(plan_.sizes.vectorBytes),
      gpu{CU_MEM_LOCATION_TYPE_DEVICE, plan_.ordinal},
      host{CU_MEM_LOCATION_TYPE_HOST, 0} {}

// ------------------------------------------------------------------------ the lesson's checks

bool Checks::record(const std::string& what, const mm::Judgement& judgement) {
  const bool held = list.expectAttributes(what, judgement.mismatches, judgement.checks);
  if (options.verbose || !held) {
    report.out() << format("  %-52s %s", what.c_str(), judgement.said.c_str())
                 << (held ? "" : "  <- MISMATCH") << '\n';
  }
  return held;
}

ms::VectorAddCheck Checks::sum() const {
  return ms::checkVectorAdd(hostA, hostB, hostC, vecAdd.count);
}

namespace memsamples::managed {
Judgement judge(const VectorAddCheck& said, const VectorAddCheck& expected) {
  const std::string wrong = said.mismatches == 0 ? "C == A + B, exact" : describeMismatch(said);
  Judgement j{wrong, {}, 1};
  if (said.mismatches != expected.mismatches)
    j.mismatches.push_back({"", "C == A + B everywhere", wrong});
  return j;
}
}  // namespace memsamples::managed

mm::RangeAttributes Checks::readRange(CUdeviceptr ptr, std::size_t rangeBytes) {
  mm::RangeAttributeQuery one(plan.accessedBySlots);  // one cuMemRangeGetAttribute each
  mm::RangeAttributeQuery all(plan.accessedBySlots);  // one cuMemRangeGetAttributes call
  for (std::size_t i = 0; i < one.asked.size(); ++i)
    ms::check(cuMemRangeGetAttribute(one.data[i], one.sizes[i], one.asked[i], ptr, rangeBytes),
              "cuMemRangeGetAttribute");
  ms::check(cuMemRangeGetAttributes(all.data.data(), all.sizes.data(), all.asked.data(),
                                    all.asked.size(), ptr, rangeBytes),
            "cuMemRangeGetAttributes");
  list.expectAttributes("cuMemRangeGetAttributes vs cuMemRangeGetAttribute at " + ms::hex(ptr),
                        mm::differingAttributes(one.said, all.said), mm::kRangeAttributeCount);
  return one.said;
}

bool Checks::expectRange(const std::string& what, CUdeviceptr ptr, std::size_t rangeBytes,
                         const mm::ExpectedRange& expected) {
  return expect(what, readRange(ptr, rangeBytes), expected);
}

bool Checks::expectSum(const std::string& what, const std::vector<CUdeviceptr>& abc) {
  const auto asFloats = [](CUdeviceptr v) {
    return reinterpret_cast<const float*>(static_cast<std::uintptr_t>(v));
  };
  const ms::VectorAddCheck said =
      ms::checkVectorAdd(asFloats(abc.at(0)), asFloats(abc.at(1)), asFloats(abc.at(2)),
                         bytes / sizeof(float));
  return expect(what, said, kExact);
}

void Checks::afterStep5(const std::vector<CUdeviceptr>& abc) {
  expectSum("C read on the host, written there by the GPU", abc);
  expectRange("A after step 5", abc.at(0), bytes, mm::readMostlyRange(prefetchedInputs()));
  expectRange("C after step 5", abc.at(2), bytes, mm::keptOnHostFor(plan.ordinal));
}

void Checks::afterStep6(const std::vector<CUdeviceptr>& abc, const mm::PrefetchBatch& batch) {
  expectSum("C from the GPU's share and the CPU's", abc);
  // The batch's shape, for people and in the JSON result.
  if (options.verbose)
    report.out() << "  cuMemPrefetchBatchAsync: " << mm::describeBatch(batch) << '\n';
  report.json()
      .set("batchRanges", static_cast<std::uint64_t>(batch.dptrs.size()))
      .set("batchLocations", static_cast<std::uint64_t>(batch.prefetchLocs.size()));
  std::vector<mm::RangeAttributes> said;
  for (std::size_t i = 0; i < batch.dptrs.size(); ++i)
    said.push_back(readRange(batch.dptrs[i], batch.sizes[i]));
  expect("each range after the batch: its own destination", said, batch);
  // No advice is left, and C's chunks went to two places: no last prefetch location for all of C.
  const mm::ExpectedRange noneInCommon;
  expectRange("all of C (in two places: none)", abc.at(2), bytes, noneInCommon);
}

void Checks::afterStep7(const std::vector<CUdeviceptr>& abc) {
  expectSum("C written by the GPU after the discard", abc);
  expectRange("C after discard + prefetch", abc.at(2), bytes, mm::prefetchedTo(gpu));
}

bool Checks::checkOrNotSupported(CUresult result, const char* call) {
  if (result == CUDA_ERROR_NOT_SUPPORTED) {
    report.out() << call << " is not supported by this driver (" << ms::describeResult(result)
                 << "): the run goes on without it\n";
    return false;
  }
  ms::check(result, call);
  return true;
}

// ------------------------------------------------------------------------------ the measurements

namespace {

/// cuPointerGetAttributes on A, at its first byte and in its middle: eight answers from one
/// call each, which name the same managed allocation of the sample's device.
void checkPointerAttributes(Checks& r) {
  const CUdeviceptr a = r.vecAdd.a;
  const CUdeviceptr inside = a + r.bytes / 2;
  mm::PointerAttributeQuery start;
  mm::PointerAttributeQuery middle;
  ms::check(cuPointerGetAttributes(8, start.asked, start.answers, a), "cuPointerGetAttributes");
  ms::check(cuPointerGetAttributes(8, middle.asked, middle.answers, inside),
            "cuPointerGetAttributes");
  r.expect("cuPointerGetAttributes on A", mm::PointerAnswers{start.said, middle.said, inside},
         mm::ManagedRange{a, r.bytes, r.plan.ordinal});
  if (r.options.verbose) {
    CUcontext context = nullptr;
    ms::check(cuCtxGetCurrent(&context), "cuCtxGetCurrent");
    r.report.out() << mm::describePointerAttributes(start.said, middle.said, inside, context);
  }
}

/// The advice table (mm::adviceSteps) on A: the GPU, the host, a host NUMA node, three pieces of
/// advice together and halves of A, which step 4 leaves out, each advice read back. A is first prefetched whole to the GPU, so every
/// read-back names the GPU as the last prefetch location.
void checkAdviceTable(Checks& r) {
  std::ostream& out = r.report.out();
  const CUdeviceptr a = r.vecAdd.a;
  prefetch(a, r.bytes, r.gpu, r.vecAdd.stream);
  ms::check(cuStreamSynchronize(r.vecAdd.stream), "cuStreamSynchronize");
  const int node = r.plan.support.hostNumaId;
  for (const mm::AdviceStep& row : mm::adviceSteps(r.bytes, r.plan.ordinal, node)) {
    const CUdeviceptr ptr = a + row.range.offset;
    if (row.advice) {
      const CUresult advised = cuMemAdvise(ptr, row.range.bytes, *row.advice, row.where);
      // Not every system takes a host NUMA node as a location: said, and the table goes on.
      if (advised != CUDA_SUCCESS && row.mayBeRefused) {
        out << "  " << row.label << ": not accepted (" << ms::describeResult(advised)
            << "), the advice stays as it was\n";
        continue;
      }
      ms::check(advised, "cuMemAdvise");
    }
    if (!row.expected)
      continue;
    mm::ExpectedRange expected = *row.expected;
    expected.lastPrefetch = r.gpu;
    r.expectRange(row.label, ptr, row.range.bytes, expected);
  }
}

/// Step 5 again, timed, from the same start as the lesson's: its advice set anew (as step 4), A
/// and B written anew by the CPU (which drops the GPU's read-only copies), C's pages on the host.
/// Then, between two events, A's and B's prefetches to the GPU (not with `--no-prefetch`) and the
/// kernel, which writes C in place; C is checked and the advice taken back.
/// @return the GPU time of one run, ms.
double timeStep5(Checks& r) {
  const ms::VectorAddLaunch& k = r.vecAdd;
  for (const CUdeviceptr input : {k.a, k.b})
    ms::check(cuMemAdvise(input, r.bytes, CU_MEM_ADVISE_SET_READ_MOSTLY, r.gpu), "cuMemAdvise");
  adviseOnHost(r, {k.c}, true);
  ms::check(cuStreamSynchronize(k.stream), "cuStreamSynchronize");  // nothing uses A, B now
  ms::fillVectorAddInputs(r.hostA, r.hostB, k.count, 2024);
  prefetch(k.c, r.bytes, r.host, k.stream);
  // One run between two events (timeOnStream waits for it): the lesson's step 5 runs once too.
  const double stepMs = ms::timeOnStream(k.stream, 0, 1, [&] {
                          if (!r.options.noPrefetch) {
                            prefetch(k.a, r.bytes, r.gpu, k.stream);
                            prefetch(k.b, r.bytes, r.gpu, k.stream);
                          }
                          launch(k);
                        }).medianMs;
  r.expect("C after step 5 again (timed), read on the host", r.sum(), kExact);
  for (const CUdeviceptr input : {k.a, k.b})
    ms::check(cuMemAdvise(input, r.bytes, CU_MEM_ADVISE_UNSET_READ_MOSTLY, r.gpu), "cuMemAdvise");
  adviseOnHost(r, {k.c}, false);
  return stepMs;
}

/// The report of steps 3-8's checks, and @p stepMs, step 5's GPU time (timeStep5()).
void reportSteps(Checks& r, double stepMs) {
  std::ostream& out = r.report.out();
  const int node = r.plan.support.hostNumaId;
  const std::string where = node < 0 ? "" : ", host NUMA node " + std::to_string(node);
  out << format("[3-8] %zu checks, %zu failed: advice and prefetch read-backs, more advice (the "
                "GPU, the host%s, halves of A), pointer attributes, C == A + B%s\n",
                r.list.checks(), r.list.failures().size(), where.c_str(),
                r.options.verbose ? "" : " (--verbose: each)");
  if (r.options.noPrefetch) {
    out << format("[5] step 5 again, timed: the kernel alone, A and B moved by demand paging "
                  "(--no-prefetch), C written in place: %.2f ms of GPU time\n", stepMs);
  } else {
    out << format("[5] step 5 again, timed: prefetch A and B to the GPU, then the kernel, which "
                  "writes C in place: %.2f ms of GPU time\n", stepMs);
  }
  r.report.json()
      .set("step5Ms", stepMs)
      .set("noPrefetch", r.options.noPrefetch);
}

void measureKernels(Checks& r) {
  std::ostream& out = r.report.out();
  const ms::VectorAddLaunch& k = r.vecAdd;
  const int warmup = r.options.common.warmup;
  const int iterations = r.options.common.iterations;
  // Behind PCIe demand paging migrates pages; a coherent link changes what (a) and (d) measure.
  if (r.options.verbose || mm::coherentHostAccess(r.plan.support))
    out << "[8a] This machine: " << mm::pagingModel(r.plan.support) << '\n';

  // (a) Demand paging: before each launch A, B and C move to the host (untimed), so the timed
  // kernel faults every page over to the GPU.
  poisonC(r);
  const double paging =
      timeRounds(k.stream, 1, r.options.migrationIterations,
                 {[&] { prefetchVectors(r, r.host); }, [&] { launch(k); }})[1].gpuMs;
  r.expect("(a) result", r.sum(), kExact);

  // (b) Prefetched: one prefetch, then the kernel finds every page resident.
  poisonC(r);
  prefetchVectors(r, r.gpu);
  const double prefetched = ms::timeVectorAdd(k, warmup, iterations).medianMs;
  r.expect("(b) result", r.sum(), kExact);

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
  r.expect("(c) result (copied into C)", r.sum(), kExact);

  // (d) Advice instead of migration: pages stay in host memory and the GPU maps them, so the
  // kernel reads and writes across the bus without a single fault.
  adviseOnHost(r, {k.a, k.b, k.c}, true);
  poisonC(r);
  prefetchVectors(r, r.host);
  // Read back: preferred host, accessed by the GPU, last prefetched to the host.
  r.expectRange("A with preferred host + accessed-by GPU", k.a, r.bytes,
                mm::keptOnHostFor(r.plan.ordinal));
  const double remote =
      ms::timeVectorAdd(k, std::min(warmup, 1), std::min(iterations, r.options.migrationIterations))
          .medianMs;
  ms::check(cuStreamSynchronize(k.stream), "cuStreamSynchronize");
  r.expect("(d) result", r.sum(), kExact);
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
    if (r.options.verbose)
      out << format("  %-60s%9.1f GB/s  median %.3f ms\n", labels[i], gbps[i], medians[i]);
    r.report.json()
        .set(std::string("kernel") + keys[i] + "Ms", medians[i])
        .set(std::string("kernel") + keys[i] + "GBps", gbps[i]);
  }
  r.prefetchedOverDevice = gbps[1] / gbps[2];
  r.pagingSlowdown = paging / prefetched;
  out << format("[8a] VecAdd on %s vectors, GB/s: (a) demand paging %.1f, (b) prefetched %.1f, "
                "(c) cuMemAlloc %.1f, (d) kept on the host %.1f\n",
                ms::formatBytes(r.bytes).c_str(), gbps[0], gbps[1], gbps[2], gbps[3])
      << format("     (b)/(c) = %.3f (the same kernel: managed pages on the GPU against cuMemAlloc "
                "memory); demand paging is %.0fx slower than (b)\n",
                r.prefetchedOverDevice, r.pagingSlowdown);
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
  out << "[8b] Host <-> GPU, " << ms::formatBytes(r.bytes)
      << " (A moves GPU -> host -> GPU each repetition)\n";
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
  r.expectRange("C with preferred host + accessed-by GPU", k.c, r.bytes,
                mm::keptOnHostFor(r.plan.ordinal));
  const ms::TimingStats inPlace = ms::timeVectorAdd(k, warmup, iterations);
  r.expect("C written in place by the GPU, read on the host", r.sum(), kExact);
  adviseOnHost(r, {k.c}, false);
  const double inPlaceGBps = gbps(inPlace.medianMs);
  // [in-place]

  r.prefetchOverPinned = printRates(out, "host -> GPU  prefetch", prefetchUp, "pinned copy",
                                   pinnedUp, "the driver's migration: no goal");
  // The driver's own figure: it varied from 0.67 to 1.03 over five runs on one H100. No goal.
  r.prefetchOverPageable = printRates(out, "GPU -> host  prefetch", prefetchDown, "pageable copy",
                                     pageableDown, "varies from run to run: no goal");
  r.inPlaceOverPinned = printRates(out, "GPU -> host  kernel writes C in place", inPlaceGBps,
                                  "pinned copy", pinnedDown, "the way to get results back");
  if (r.options.verbose) {
    out << format("  the link's limit: pinned cuMemcpyDtoHAsync %.1f GB/s (prefetch / pinned = "
                  "%.3f; managed host pages are not pinned)\n",
                  pinnedDown, prefetchDown / pinnedDown);
  }
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
  out << "[8c] One cuMemPrefetchBatchAsync of K ranges of " << ms::formatBytes(rangeBytes)
      << " vs K cuMemPrefetchAsync calls, host -> GPU, medians\n";
  if (r.options.verbose) {
    out << "  one range every " << ms::formatBytes(2 * rangeBytes) << " of a "
        << ms::formatBytes(spanBytes) << " managed span. Before each timed repetition the span\n"
        << "  goes back to the host (untimed), so every prefetch moves data. GPU time: CUDA\n"
        << "  events around the enqueue (includes any gap while the host is still enqueueing);\n"
        << "  host time: how long the calls kept the CPU busy.\n";
  }
  out << "       K   batch GPU ms  singles GPU ms  speedup   batch host ms  singles host ms\n";
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
                                        batch.prefetchLocs.data(), batch.prefetchLocIdxs.data(),
                                        batch.prefetchLocs.size(), 0, stream),
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
  if (!r.discardSupported) {
    out << "[8d] skipped: cuMemDiscardBatchAsync is not supported by this driver\n";
    return;
  }
  // C starts on the host each time. Moving it there copies its pages back from the GPU, so it
  // holds data again (the values do not matter: the kernel overwrites C afterwards).
  CUmemLocation toGpuLocation = r.gpu;  // the one destination of the combined call
  std::size_t fromRange = 0;            // its prefetchLocIdxs: from the first (only) range on
  const auto toHost = [&] { prefetch(k.c, r.bytes, r.host, k.stream); };
  const auto toGpu = [&] { prefetch(k.c, r.bytes, r.gpu, k.stream); };
  const auto discard = [&] {
    ms::check(cuMemDiscardBatchAsync(&r.vecAdd.c, &r.bytes, 1, 0, k.stream),
              "cuMemDiscardBatchAsync");
  };
  const auto discardAndPrefetch = [&]() -> CUresult {
    return cuMemDiscardAndPrefetchBatchAsync(&r.vecAdd.c, &r.bytes, 1, &toGpuLocation, &fromRange,
                                             1, 0, k.stream);
  };
  // The combined call is asked once, untimed, before it is timed: a driver may not support it.
  toHost();
  const bool combined =
      r.checkOrNotSupported(discardAndPrefetch(), "cuMemDiscardAndPrefetchBatchAsync");
  std::vector<std::function<void()>> stages = {toHost, toGpu, toHost, discard, toGpu};
  if (combined) {
    stages.push_back(toHost);
    stages.push_back([&] {
      ms::check(discardAndPrefetch(), "cuMemDiscardAndPrefetchBatchAsync");
    });
  }
  const std::vector<StageTimes> t = timeRounds(k.stream, 0, r.options.migrationIterations, stages);
  const double live = t[1].gpuMs;
  const double discarded = t[4].gpuMs;
  const double separate = t[3].gpuMs + t[4].gpuMs;  // discard, then prefetch: two calls
  out << format("[8d] Prefetch of C (%s) host -> GPU: live data %.3f ms, after "
                "cuMemDiscardBatchAsync %.3f ms (median of %d)\n",
                ms::formatBytes(r.bytes).c_str(), live, discarded, r.options.migrationIterations);
  if (combined) {
    out << format("     discard + prefetch: two calls %.3f ms, one "
                  "cuMemDiscardAndPrefetchBatchAsync %.3f ms\n", separate, t[6].gpuMs);
    r.report.json().set("discardThenPrefetchMs", separate).set("discardAndPrefetchMs", t[6].gpuMs);
  }
  if (r.options.verbose) {
    out << "  Discarded pages hold nothing worth keeping, so the driver may populate them on the "
           "GPU instead of copying them.\n";
  }
  // The discarded C now holds indeterminate values; the kernel overwrites all of it.
  launch(k);
  ms::check(cuStreamSynchronize(k.stream), "cuStreamSynchronize");
  r.expect("C written by the GPU after the timed discards", r.sum(), kExact);
  r.report.json().set("prefetchLiveMs", live).set("prefetchDiscardedMs", discarded);
}

ms::Verdict verdict(Checks& r) {
  std::ostream& out = r.report.out();
  out << format("Summary: kernel on prefetched managed / cuMemAlloc = %.3f, prefetch / pinned "
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
      .set("full", r.options.full)
      .set("hostNumaId", s.hostNumaId)
      .set("pageableMemoryAccess", s.pageableMemoryAccess)
      .set("pageableUsesHostPageTables", s.pageableUsesHostPageTables)
      .set("coherentHostAccess", mm::coherentHostAccess(s))
      .set("checks", static_cast<std::uint64_t>(r.list.checks()))
      .set("failures", failures);
  return r.list.passed() ? ms::Verdict::Pass : ms::Verdict::Fail;
}

}  // namespace

ms::Verdict measureCosts(Checks& checks, CUfunction kernel, CUstream stream,
                         const std::vector<CUdeviceptr>& abc) {
  const ManagedPlan& plan = checks.plan;
  checks.vecAdd = {kernel,    plan.grid, plan.block, stream, abc.at(0),
                   abc.at(1), abc.at(2), checks.bytes / sizeof(float)};
  checks.hostA = reinterpret_cast<float*>(static_cast<std::uintptr_t>(abc.at(0)));
  checks.hostB = reinterpret_cast<float*>(static_cast<std::uintptr_t>(abc.at(1)));
  checks.hostC = reinterpret_cast<float*>(static_cast<std::uintptr_t>(abc.at(2)));
  checkPointerAttributes(checks);
  checkAdviceTable(checks);
  reportSteps(checks, timeStep5(checks));
  measureKernels(checks);
  measureTransfers(checks);
  measureBatchVersusSingle(checks);
  measureDiscard(checks);
  return verdict(checks);
}
