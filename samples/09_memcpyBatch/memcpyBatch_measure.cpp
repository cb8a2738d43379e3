// 09_memcpyBatch's sizing and measurements (see memcpyBatch_measure.hpp).
#include "memcpyBatch_measure.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <iomanip>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "batch_results.hpp"
#include "support/host_memory.hpp"
#include "support/timing.hpp"

namespace ms = memsamples;

namespace {

constexpr int kHostPools = 3;  // the pinned source and return pools, the pageable copy
// BlockCopy_kernel's CTAs: 512 threads, each with four 16-byte loads in flight. On an H100
// 32 such CTAs gather 4 KiB blocks at 0.92 of the link (SPEC's probe).
constexpr unsigned int kCopyThreads = 512;
// CTAs per SM of the "every SM" grid: 2 x 512 threads, half of what an SM holds.
constexpr unsigned int kCtasPerSm = 2;
// Timed passes of each grid the CTA search tries (after one warm-up): enough for a median,
// few enough to keep the search quick. The grid it finds is then measured as a way.
constexpr int kSearchIterations = 3;
const double kNaN = std::numeric_limits<double>::quiet_NaN();

/// The lesson's pools, with the device, the layout and the measurements' own stream.
struct Run : ms::BatchRun {
  CUdevice device = 0;
  CUstream stream = nullptr;
  ms::BlockLayout layout;
};

/// One way of moving the blocks, as measured.
struct Way {
  std::string name;
  // What "us/copy" divides by: the blocks (rows, boxes) of a loop or a batch, so per block;
  // 1 where one call moves them all (a contiguous, 2D or 3D copy, a kernel), so per call.
  std::uint64_t copies = 0;
  std::uint64_t bytes = 0;     // bytes one pass moves
  unsigned int ctas = 0;       // the SM copy's grid; 0 for the other ways
  // A synchronous twin (cuMemcpy2D, cuMemcpy3D...): it takes no stream and runs on the NULL
  // stream, which the run's CU_STREAM_NON_BLOCKING streams never wait for, nor it for them.
  bool synchronous = false;
  bool passed = true;          // every word arrived (checked before timing)
  std::string problem;         // the first wrong word, when not
  double medianMs = kNaN;      // CUDA-event time of one pass, median
  double submitUs = kNaN;      // host time in the submitting calls, per copy
  double gbps() const { return ms::gigabytesPerSecond(static_cast<double>(bytes), medianMs); }
};

/// What every measurement needs: the run, the options, two events, a second stream, and the
/// run's checks (each way's check is recorded there, named with `context` first).
struct Bench {
  const Run& run;
  const ms::CommonOptions& common;
  CUevent start = nullptr;
  CUevent stop = nullptr;
  CUstream beside = nullptr;  // where the spin kernel runs next to a copy
  ms::RunChecks& checks;
  std::string context;        // e.g. "host to device: ", before each check's name
};

/// The work of one pass: enqueues it on the run's stream and returns the driver's answer.
using Pass = std::function<CUresult()>;

/// The median CUDA-event time of one pass and the host's submit time per copy.
struct Timing {
  double medianMs = kNaN;
  double submitUs = kNaN;
};

/// Times @p pass: @p warmup untimed passes, then @p iterations each between two events on
/// @p stream (the one the pass runs on); @p before runs ahead of each pass (the spin kernel).
/// Every answer is checked.
Timing timePasses(const Bench& bench, CUstream stream, const Pass& pass,
                  const std::function<void()>& before, int warmup, int iterations,
                  std::uint64_t copies, const std::string& name) {
  std::vector<double> timesMs;
  std::vector<double> submitUs;
  for (int i = 0; i < warmup + iterations; ++i) {
    if (before)
      before();
    ms::check(cuEventRecord(bench.start, stream), "cuEventRecord");
    const auto submitStart = std::chrono::steady_clock::now();
    ms::check(pass(), name.c_str());
    const auto submitEnd = std::chrono::steady_clock::now();
    ms::check(cuEventRecord(bench.stop, stream), "cuEventRecord");
    ms::check(cuCtxSynchronize(), "cuCtxSynchronize");
    float elapsedMs = 0;
    ms::check(cuEventElapsedTime(&elapsedMs, bench.start, bench.stop), "cuEventElapsedTime");
    if (i < warmup)
      continue;
    timesMs.push_back(elapsedMs);
    const std::chrono::duration<double, std::micro> submit = submitEnd - submitStart;
    submitUs.push_back(submit.count() / static_cast<double>(copies));
  }
  return {ms::summarizeTimings(timesMs).medianMs, ms::summarizeTimings(submitUs).medianMs};
}

/**
 * Runs @p pass once and checks it (@p poison before, @p verify after), recording the check in
 * the bench's checks, then times it (timePasses(), `--warmup` and `--iterations`); @p before
 * runs ahead of each pass (the spin kernel). A synchronous twin is timed on the NULL stream,
 * where it runs. Every answer of the driver is checked.
 */
// [measure-way]
Way measureWay(Bench& bench, Way way, const std::function<void()>& poison, const Pass& pass,
               const std::function<ms::PatternCheck()>& verify,
               const std::function<void()>& before = {}) {
  poison();
  // The poison went to the run's stream, which a synchronous twin's NULL stream does not wait
  // for: it must be done before the twin starts, or the sentinels could land on its copy.
  if (way.synchronous)
    ms::check(cuStreamSynchronize(bench.run.stream), "cuStreamSynchronize");
  if (before)
    before();
  ms::check(pass(), way.name.c_str());
  ms::check(cuCtxSynchronize(), "cuCtxSynchronize");
  const ms::PatternCheck check = verify();
  way.passed = check.passed();
  if (!way.passed)
    way.problem = check.expected == check.actual ? std::to_string(check.mismatches) + " wrong words"
                                                 : ms::describePatternCheck(check);
  bench.checks.expect(way.passed, bench.context + way.name, way.problem);

  const CUstream timedOn = way.synchronous ? nullptr : bench.run.stream;
  const Timing timing = timePasses(bench, timedOn, pass, before, bench.common.warmup,
                                   bench.common.iterations, way.copies, way.name);
  way.medianMs = timing.medianMs;
  way.submitUs = timing.submitUs;
  return way;
}
// [measure-way]

/// A way's line: GB/s, the ratio to @p reference, submit time, and whether it checked out.
void printWay(std::ostream& out, const Way& way, const Way& reference) {
  out << "  " << std::left << std::setw(44) << way.name << std::right << std::fixed
      << std::setprecision(1) << std::setw(8) << way.gbps() << " GB/s  " << std::setprecision(2)
      << std::setw(5) << way.gbps() / reference.gbps() << "x  " << std::setw(7) << way.submitUs
      << " us/copy  " << (way.passed ? "ok" : "WRONG") << '\n';
  if (!way.passed)
    out << "    " << way.problem << '\n';
}

/// The way as a JSON object.
ms::JsonObject wayJson(const Way& way, const Way& reference) {
  ms::JsonObject json;
  json.set("name", way.name)
      .set("copies", way.copies)
      .set("passed", way.passed)
      .set("medianMs", way.medianMs)
      .set("gbps", way.gbps())
      .set("overContiguous", way.gbps() / reference.gbps())
      .set("submitUsPerCopy", way.submitUs);
  if (way.ctas > 0)
    json.set("ctas", static_cast<std::uint64_t>(way.ctas));
  if (way.synchronous)
    json.set("synchronous", true);
  return json;
}

/// Where the ways need a kernel: the block copy and the spin, and the offsets they read.
struct Kernels {
  ms::OwnedModule module;
  CUfunction blockCopy = nullptr;
  CUfunction spin = nullptr;
  ms::OwnedDeviceMemory hostOffsets;    // byte offset of block i in the host pools
  ms::OwnedDeviceMemory deviceOffsets;  // byte offset of block i in the device pool
  long long spinCycles = 0;
  unsigned int smCount = 1;  // the device's SMs, from which both kernels' grids are sized

  /// The SM copy's grid on every SM: kCtasPerSm a SM, but never more CTAs than blocks.
  unsigned int allSms(const ms::BlockLayout& layout) const {
    return static_cast<unsigned int>(
        std::min<std::uint64_t>(layout.count, static_cast<std::uint64_t>(smCount) * kCtasPerSm));
  }
};

/// Loads the kernels and makes room for the offsets of @p maxBlocks blocks (the largest layout
/// of the run, the sweep's included).
void prepareKernels(Kernels& kernels, const Run& run, std::uint64_t maxBlocks) {
  const std::vector<char> fatbin = ms::readBinaryFile(ms::locateFatbin("blockCopy_kernel.fatbin"));
  ms::check(cuModuleLoadData(kernels.module.out(), fatbin.data()), "cuModuleLoadData");
  ms::check(cuModuleGetFunction(&kernels.blockCopy, kernels.module.get(), "BlockCopy_kernel"),
            "cuModuleGetFunction");
  ms::check(cuModuleGetFunction(&kernels.spin, kernels.module.get(), "Spin_kernel"),
            "cuModuleGetFunction");
  const std::size_t bytes = maxBlocks * sizeof(unsigned long long);
  ms::check(cuMemAlloc(kernels.hostOffsets.out(), bytes), "cuMemAlloc");
  ms::check(cuMemAlloc(kernels.deviceOffsets.out(), bytes), "cuMemAlloc");
  kernels.smCount = static_cast<unsigned int>(
      ms::deviceAttribute(run.device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
}

/// Uploads the offsets of the run's layout, for the kernels.
void uploadOffsets(const Kernels& kernels, const Run& run) {
  const ms::BlockLayout& layout = run.layout;
  std::vector<unsigned long long> host(layout.count);
  std::vector<unsigned long long> device(layout.count);
  for (std::uint64_t block = 0; block < layout.count; ++block) {
    host[block] = layout.hostOffset(block);
    device[block] = layout.deviceOffset(block);
  }
  const std::size_t bytes = layout.count * sizeof(unsigned long long);
  ms::check(cuMemcpyHtoDAsync(kernels.hostOffsets.get(), host.data(), bytes, run.stream),
            "cuMemcpyHtoDAsync");
  ms::check(cuMemcpyHtoDAsync(kernels.deviceOffsets.get(), device.data(), bytes, run.stream),
            "cuMemcpyHtoDAsync");
  ms::check(cuStreamSynchronize(run.stream), "cuStreamSynchronize");
}

/// One direction of the SM copy: block i from src + srcOffsets[i] to dst + dstOffsets[i].
struct SmCopy {
  CUdeviceptr dst = 0;
  CUdeviceptr src = 0;
  CUdeviceptr dstOffsets = 0;
  CUdeviceptr srcOffsets = 0;
};

/// Enqueues the block-copy kernel for @p copy on @p ctas CTAs.
CUresult launchBlockCopy(const Kernels& kernels, const Run& run, SmCopy copy, unsigned int ctas) {
  unsigned long long count = run.layout.count;
  unsigned long long blockBytes = run.layout.blockBytes;
  void* params[] = {&copy.dst, &copy.src, &copy.dstOffsets, &copy.srcOffsets, &count, &blockBytes};
  return cuLaunchKernel(kernels.blockCopy, ctas, 1, 1, kCopyThreads, 1, 1, 0, run.stream, params,
                        nullptr);
}

/// Starts the spin kernel on the second stream: every SM busy for about three contiguous copies.
void launchSpin(const Kernels& kernels, const Bench& bench) {
  long long cycles = kernels.spinCycles;
  void* params[] = {&cycles};
  ms::check(cuLaunchKernel(kernels.spin, kernels.smCount * 2, 1, 1, 128, 1, 1, 0, bench.beside,
                           params, nullptr),
            "cuLaunchKernel");
}

/**
 * The fewest CTAs of @p copy that reach kLinkShare of @p contiguous (CtaSearch), each grid
 * timed with few passes and not checked: the grid found is measured and checked as a way.
 */
std::optional<unsigned int> fewestCtas(const Bench& bench, const Kernels& kernels,
                                       const SmCopy& copy, const Way& contiguous) {
  const Run& run = bench.run;
  ms::CtaSearch search(kernels.allSms(run.layout), ms::kLinkShare * contiguous.gbps());
  while (const std::optional<unsigned int> ctas = search.next()) {
    const Pass pass = [&] { return launchBlockCopy(kernels, run, copy, *ctas); };
    const Timing timing =
        timePasses(bench, run.stream, pass, {}, 1, kSearchIterations, 1,
                   "cuLaunchKernel (BlockCopy_kernel)");
    search.record(*ctas, ms::gigabytesPerSecond(static_cast<double>(run.layout.totalBytes()),
                                                timing.medianMs));
  }
  return search.fewest();
}

/// The loop: one cuMemcpy*Async per block (the usual code).
CUresult copyLoop(const ms::BlockLayout& layout, const Run& run, bool hostToDevice) {
  const auto* source = reinterpret_cast<const unsigned char*>(run.sourcePool);
  auto* back = reinterpret_cast<unsigned char*>(run.returnPool);
  for (std::uint64_t block = 0; block < layout.count; ++block) {
    const CUdeviceptr device = run.devicePool + layout.deviceOffset(block);
    const std::uint64_t host = layout.hostOffset(block);
    const CUresult answer =
        hostToDevice
            ? cuMemcpyHtoDAsync(device, source + host, layout.blockBytes, run.stream)
            : cuMemcpyDtoHAsync(back + host, device, layout.blockBytes, run.stream);
    if (answer != CUDA_SUCCESS)
      return answer;
  }
  return CUDA_SUCCESS;
}

/// Sentinels over the whole device pool, before a host-to-device way.
void poisonDevicePool(const Run& run) {
  ms::check(cuMemsetD32Async(run.devicePool, ms::kSentinelWord,
                             run.layout.totalBytes() / sizeof(std::uint32_t), run.stream),
            "cuMemsetD32Async");
}

/// Sentinels over the whole return pool, before a device-to-host way.
void poisonReturnPool(const Run& run) {
  std::fill(run.returnPool, run.returnPool + run.layout.totalBytes() / sizeof(std::uint32_t),
            ms::kSentinelWord);
}

/// The check of a host-to-device way: the device pool comes back in one contiguous copy, and
/// every block must be in its slot of @p side.
std::function<ms::PatternCheck()> devicePoolHolds(const Run& run, ms::PoolSide side) {
  return [&run, side] {
    ms::check(cuMemcpyDtoHAsync(run.returnPool, run.devicePool, run.layout.totalBytes(),
                                run.stream),
              "cuMemcpyDtoHAsync");
    ms::check(cuStreamSynchronize(run.stream), "cuStreamSynchronize");
    return ms::checkBlocks(run.returnPool, run.layout, side, ms::kBlockSeed);
  };
}

/// The check of a device-to-host way: every block in its slot of @p side of the return pool.
std::function<ms::PatternCheck()> returnPoolHolds(const Run& run, ms::PoolSide side) {
  return [&run, side] {
    return ms::checkBlocks(run.returnPool, run.layout, side, ms::kBlockSeed);
  };
}

/// A batch pass: cuMemcpyBatchAsync of @p plan (step 1 made sure the driver has it).
Pass batchPass(ms::BatchPlan& plan, const Run& run) {
  return [&plan, &run] { return ms::enqueueBatch(plan, run.stream); };
}

/// The mapped (device) addresses of the two pinned host pools, for the kernels.
struct MappedPools {
  CUdeviceptr source = 0;
  CUdeviceptr back = 0;
};

MappedPools mappedPools(const Run& run) {
  MappedPools mapped;
  ms::check(cuMemHostGetDevicePointer(&mapped.source, run.sourcePool, 0),
            "cuMemHostGetDevicePointer");
  ms::check(cuMemHostGetDevicePointer(&mapped.back, run.returnPool, 0),
            "cuMemHostGetDevicePointer");
  return mapped;
}

/// The SM gather (host to device) and scatter (device to host) of the run's layout.
SmCopy gatherCopy(const Kernels& kernels, const Run& run, const MappedPools& mapped) {
  return {run.devicePool, mapped.source, kernels.deviceOffsets.get(), kernels.hostOffsets.get()};
}

SmCopy scatterCopy(const Kernels& kernels, const Run& run, const MappedPools& mapped) {
  return {mapped.back, run.devicePool, kernels.hostOffsets.get(), kernels.deviceOffsets.get()};
}

/**
 * The SM copy's ways of one direction, appended to @p ways: on every SM, then on the fewest CTAs
 * that reach 0.9 of @p contiguous (when some grid does), each measured and checked as a way.
 * @return the fewest CTAs, or nullopt.
 */
std::optional<unsigned int> measureSm(Bench& bench, const Kernels& kernels, const SmCopy& copy,
                                      const Way& contiguous, const std::string& name,
                                      const std::function<void()>& poison,
                                      const std::function<ms::PatternCheck()>& verify,
                                      std::vector<Way>& ways) {
  const Run& run = bench.run;
  Way way;
  way.bytes = run.layout.totalBytes();
  way.copies = 1;
  way.ctas = kernels.allSms(run.layout);
  way.name = name + ", " + std::to_string(way.ctas) + " CTAs";
  ways.push_back(measureWay(bench, way, poison, [&] {
    return launchBlockCopy(kernels, run, copy, way.ctas);
  }, verify));

  const std::optional<unsigned int> fewest = fewestCtas(bench, kernels, copy, contiguous);
  if (fewest && *fewest != way.ctas) {
    way.ctas = *fewest;
    way.name = name + ", " + std::to_string(way.ctas) + " CTAs (fewest for 0.9)";
    ways.push_back(measureWay(bench, way, poison, [&] {
      return launchBlockCopy(kernels, run, copy, way.ctas);
    }, verify));
  }
  return fewest;
}

/// What the SMs cost: "the fewest CTAs for 0.9 of the contiguous copy: 33 of 264", or that no
/// grid reached it.
std::string ctaText(const std::optional<unsigned int>& fewest, unsigned int allSms) {
  return fewest ? std::to_string(*fewest) + " of " + std::to_string(allSms) + " CTAs"
                : "none of up to " + std::to_string(allSms) + " CTAs";
}

/// Host-to-device ways, then device-to-host ways, printed and added to the JSON.
void measureWays(Bench& bench, Kernels& kernels, ms::Report& report) {
  const Run& run = bench.run;
  const ms::BlockLayout& layout = run.layout;
  const std::uint64_t bytes = layout.totalBytes();
  const auto sourceAddress = reinterpret_cast<CUdeviceptr>(run.sourcePool);
  const auto returnAddress = reinterpret_cast<CUdeviceptr>(run.returnPool);
  const auto pageableAddress = reinterpret_cast<CUdeviceptr>(run.pageablePool);
  const MappedPools mapped = mappedPools(run);

  const auto poisonDevice = [&run] { poisonDevicePool(run); };
  const auto poisonHost = [&run] { poisonReturnPool(run); };
  const auto deviceHolds = [&run](ms::PoolSide side) { return devicePoolHolds(run, side); };
  const auto returnHolds = [&run](ms::PoolSide side) { return returnPoolHolds(run, side); };
  const auto streamOrder = ms::copyAttributes(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM);
  const auto anyOrder = ms::copyAttributes(CU_MEMCPY_SRC_ACCESS_ORDER_ANY);
  const auto overlap = ms::copyAttributes(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM,
                                          CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE);
  const auto batchOf = [&run](ms::BatchPlan& plan) { return batchPass(plan, run); };
  const auto spin = [&] { launchSpin(kernels, bench); };

  Way base;
  base.bytes = bytes;
  base.copies = layout.count;
  Way one = base;
  one.copies = 1;

  // Host to device.
  bench.context = "host to device: ";
  Way way = one;
  way.name = "contiguous cuMemcpyHtoDAsync (reference)";
  const Way h2dContiguous = measureWay(bench, way, poisonDevice, [&] {
    return cuMemcpyHtoDAsync(run.devicePool, run.sourcePool, bytes, run.stream);
  }, deviceHolds(ms::PoolSide::Host));
  // kHz x ms = cycles; 2 GHz where the driver does not say.
  const int clockKHz = ms::deviceAttribute(run.device, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  kernels.spinCycles = static_cast<long long>(3.0 * h2dContiguous.medianMs *
                                              (clockKHz > 0 ? clockKHz : 2000000));

  ms::BatchPlan h2dStream =
      ms::planBlocks(layout, run.devicePool, sourceAddress, true, streamOrder);
  ms::BatchPlan h2dAny = ms::planBlocks(layout, run.devicePool, pageableAddress, true, anyOrder);
  ms::BatchPlan h2dOverlap = ms::planBlocks(layout, run.devicePool, sourceAddress, true, overlap);
  std::vector<Way> h2d;
  way = base;
  way.name = "loop of cuMemcpyHtoDAsync";
  h2d.push_back(measureWay(bench, way, poisonDevice, [&] { return copyLoop(layout, run, true); },
                           deviceHolds(ms::PoolSide::Device)));
  way.name = "cuMemcpyBatchAsync, STREAM, pinned";
  h2d.push_back(measureWay(bench, way, poisonDevice, batchOf(h2dStream),
                           deviceHolds(ms::PoolSide::Device)));
  way.name = "cuMemcpyBatchAsync, ANY, pageable source";
  h2d.push_back(measureWay(bench, way, poisonDevice, batchOf(h2dAny),
                           deviceHolds(ms::PoolSide::Device)));
  way.name = "cuMemcpyBatchAsync beside a kernel";
  h2d.push_back(measureWay(bench, way, poisonDevice, batchOf(h2dStream),
                           deviceHolds(ms::PoolSide::Device), spin));
  way.name = "  + PREFER_OVERLAP_WITH_COMPUTE";
  h2d.push_back(measureWay(bench, way, poisonDevice, batchOf(h2dOverlap),
                           deviceHolds(ms::PoolSide::Device), spin));
  const std::optional<unsigned int> gatherCtas =
      measureSm(bench, kernels, gatherCopy(kernels, run, mapped), h2dContiguous, "SM gather",
                poisonDevice, deviceHolds(ms::PoolSide::Device), h2d);

  // Device to host. The device pool holds every block in its slot: the last way put them there,
  // and its check proved it.
  bench.context = "device to host: ";
  way = one;
  way.name = "contiguous cuMemcpyDtoHAsync (reference)";
  const Way d2hContiguous = measureWay(bench, way, poisonHost, [&] {
    return cuMemcpyDtoHAsync(run.returnPool, run.devicePool, bytes, run.stream);
  }, returnHolds(ms::PoolSide::Device));
  ms::BatchPlan d2hStream =
      ms::planBlocks(layout, returnAddress, run.devicePool, false, streamOrder);
  ms::BatchPlan d2hOverlap = ms::planBlocks(layout, returnAddress, run.devicePool, false, overlap);
  std::vector<Way> d2h;
  way = base;
  way.name = "loop of cuMemcpyDtoHAsync";
  d2h.push_back(measureWay(bench, way, poisonHost, [&] { return copyLoop(layout, run, false); },
                           returnHolds(ms::PoolSide::Host)));
  way.name = "cuMemcpyBatchAsync, STREAM";
  d2h.push_back(measureWay(bench, way, poisonHost, batchOf(d2hStream),
                           returnHolds(ms::PoolSide::Host)));
  way.name = "cuMemcpyBatchAsync beside a kernel";
  d2h.push_back(measureWay(bench, way, poisonHost, batchOf(d2hStream),
                           returnHolds(ms::PoolSide::Host), spin));
  way.name = "  + PREFER_OVERLAP_WITH_COMPUTE";
  d2h.push_back(measureWay(bench, way, poisonHost, batchOf(d2hOverlap),
                           returnHolds(ms::PoolSide::Host), spin));
  const std::optional<unsigned int> scatterCtas =
      measureSm(bench, kernels, scatterCopy(kernels, run, mapped), d2hContiguous, "SM scatter",
                poisonHost, returnHolds(ms::PoolSide::Host), d2h);

  std::ostream& out = report.out();
  ms::JsonArray json;
  for (const auto& [title, reference, ways] :
       {std::tuple{"Host to device", &h2dContiguous, &h2d},
        std::tuple{"Device to host", &d2hContiguous, &d2h}}) {
    out << title << " (" << layout.count << " blocks of " << ms::formatBytes(layout.blockBytes)
        << ", x = ratio to the contiguous copy):\n";
    printWay(out, *reference, *reference);
    json.addRaw(wayJson(*reference, *reference).set("direction", title).dump());
    for (const Way& w : *ways) {
      printWay(out, w, *reference);
      json.addRaw(wayJson(w, *reference).set("direction", title).dump());
    }
  }
  report.json().set("ways", json);

  // What the lesson teaches at this block size: the batch against the loop and the link, and
  // what the SMs cost to beat it. In the order measured above, h2d holds the loop, the batch
  // from the pinned pool, the pageable batch, the two beside a kernel, then the SMs; d2h the
  // same without the pageable batch.
  const Way& h2dLoop = h2d[0];
  const Way& h2dBatch = h2d[1];
  const Way& h2dSms = h2d[5];
  const Way& d2hLoop = d2h[0];
  const Way& d2hBatch = d2h[1];
  const Way& d2hSms = d2h[4];
  const ms::BestWay h2dBest = ms::bestWay({layout.blockBytes, h2dContiguous.gbps(),
                                           h2dLoop.gbps(), h2dBatch.gbps(), h2dSms.gbps()});
  const ms::BestWay d2hBest = ms::bestWay({layout.blockBytes, d2hContiguous.gbps(),
                                           d2hLoop.gbps(), d2hBatch.gbps(), d2hSms.gbps()});
  const unsigned int allSms = kernels.allSms(layout);
  out << std::fixed << std::setprecision(2) << "Batch / loop = " << h2dBatch.gbps() / h2dLoop.gbps()
      << " host to device, " << d2hBatch.gbps() / d2hLoop.gbps() << " device to host; batch / "
      << "contiguous = " << h2dBatch.gbps() / h2dContiguous.gbps() << ", "
      << d2hBatch.gbps() / d2hContiguous.gbps() << '\n'
      << "Best way / contiguous (goal >= " << ms::kLinkShare << "): " << h2dBest.name << ' '
      << h2dBest.share << " host to device, " << d2hBest.name << ' ' << d2hBest.share
      << " device to host\n"
      << "SMs: the fewest CTAs (of " << kCopyThreads << " threads) for 0.9 of the contiguous "
      << "copy: " << ctaText(gatherCtas, allSms) << " host to device, "
      << ctaText(scatterCtas, allSms) << " device to host\n";
  ms::JsonObject fewest;
  if (gatherCtas)
    fewest.set("hostToDevice", static_cast<std::uint64_t>(*gatherCtas));
  if (scatterCtas)
    fewest.set("deviceToHost", static_cast<std::uint64_t>(*scatterCtas));
  ms::JsonObject best;
  best.set("hostToDevice", h2dBest.name)
      .set("hostToDeviceOverContiguous", h2dBest.share)
      .set("deviceToHost", d2hBest.name)
      .set("deviceToHostOverContiguous", d2hBest.share);
  report.json()
      .set("fewestCtas", fewest)
      .set("allSmCtas", static_cast<std::uint64_t>(allSms))
      .set("bestWay", best);
}

/// A check result from a count of wrong words among @p words.
ms::PatternCheck wrongWords(std::uint64_t wrong, std::uint64_t words) {
  ms::PatternCheck check;
  check.words = words;
  check.mismatches = wrong;
  return check;
}

/// Words of @p got (@p count of them) that differ from @p word.
std::uint64_t wordsOtherThan(const std::uint32_t* got, std::uint64_t count, std::uint32_t word) {
  return static_cast<std::uint64_t>(
      std::count_if(got, got + count, [word](std::uint32_t w) { return w != word; }));
}

/// Pinned host memory of @p bytes, owned.
std::uint32_t* pinned(ms::OwnedPinnedHostMemory& owner, std::size_t bytes) {
  ms::check(cuMemHostAlloc(owner.out(), bytes, 0), "cuMemHostAlloc");
  return static_cast<std::uint32_t*>(owner.get());
}

/**
 * The shapes the copy engine walks itself, each checked word by word: a pitched matrix
 * (cuMemAllocPitch) and a sub-rectangle copied into it by one cuMemcpy2DAsync against one copy
 * per row and against its synchronous twin cuMemcpy2D; the same rectangle device to device from
 * rows at an odd pitch by cuMemcpy2DUnaligned; a sub-box of a volume by cuMemcpy3DAsync, four
 * boxes by one cuMemcpy3DBatchAsync, the sub-box again by cuMemcpy3D; and every memset form
 * (D8/D16/D32, their Async and 2D forms) on the same memory.
 */
void measureShapes(Bench& bench, ms::Report& report) {
  const CUstream stream = bench.run.stream;
  std::ostream& out = report.out();
  bench.context = "shapes: ";

  // A matrix of 2048 rows of 1000 words: 4000 bytes a row, which the driver pads to its pitch.
  const ms::Volume matrix{1000, 2048, 1};
  const std::size_t rowBytes = matrix.width * sizeof(std::uint32_t);
  const std::size_t matrixBytes = matrix.words() * sizeof(std::uint32_t);
  ms::OwnedPinnedHostMemory hostMatrixOwner;
  ms::OwnedPinnedHostMemory backMatrixOwner;
  std::uint32_t* hostMatrix = pinned(hostMatrixOwner, matrixBytes);
  std::uint32_t* backMatrix = pinned(backMatrixOwner, matrixBytes);
  ms::fillPattern(hostMatrix, matrix.words(), 9);
  ms::OwnedDeviceMemory pitched;
  std::size_t pitch = 0;
  ms::check(cuMemAllocPitch(pitched.out(), &pitch, rowBytes, matrix.height, 4),
            "cuMemAllocPitch");
  const auto readMatrix = [&] {
    CUDA_MEMCPY2D back{};
    back.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    back.srcDevice = pitched.get();
    back.srcPitch = pitch;
    back.dstMemoryType = CU_MEMORYTYPE_HOST;
    back.dstHost = backMatrix;
    back.dstPitch = rowBytes;
    back.WidthInBytes = rowBytes;
    back.Height = matrix.height;
    ms::check(cuMemcpy2DAsync(&back, stream), "cuMemcpy2DAsync");
    ms::check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  };
  const auto poisonMatrix = [&] {
    ms::check(cuMemsetD2D32Async(pitched.get(), pitch, ms::kSentinelWord, matrix.width,
                                 matrix.height, stream),
              "cuMemsetD2D32Async");
  };

  // The sub-rectangle: columns 100 .. 899 of rows 256 .. 1791.
  const ms::Box rect{100, 256, 0, 800, 1536, 1};
  const auto rectArrived = [&] {
    readMatrix();
    return wrongWords(ms::boxMismatches(backMatrix, hostMatrix, matrix, {rect}), matrix.words());
  };
  CUDA_MEMCPY2D copy{};
  copy.srcMemoryType = CU_MEMORYTYPE_HOST;
  copy.srcHost = hostMatrix;
  copy.srcXInBytes = rect.x * sizeof(std::uint32_t);
  copy.srcY = rect.y;
  copy.srcPitch = rowBytes;
  copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.dstDevice = pitched.get();
  copy.dstXInBytes = copy.srcXInBytes;
  copy.dstY = rect.y;
  copy.dstPitch = pitch;
  copy.WidthInBytes = rect.width * sizeof(std::uint32_t);
  copy.Height = rect.height;
  Way way;
  way.bytes = copy.WidthInBytes * copy.Height;
  way.copies = 1;
  way.name = "2D sub-rectangle, one cuMemcpy2DAsync";
  const Way rect2D = measureWay(bench, way, poisonMatrix,
                                [&] { return cuMemcpy2DAsync(&copy, stream); }, rectArrived);
  way.copies = rect.height;
  way.name = "2D sub-rectangle, one copy per row";
  const Way rows = measureWay(bench, way, poisonMatrix, [&] {
    for (std::uint64_t y = rect.y; y < rect.y + rect.height; ++y) {
      const CUresult answer = cuMemcpyHtoDAsync(
          pitched.get() + y * pitch + copy.dstXInBytes, hostMatrix + matrix.index(rect.x, y, 0),
          copy.WidthInBytes, stream);
      if (answer != CUDA_SUCCESS)
        return answer;
    }
    return CUDA_SUCCESS;
  }, rectArrived);

  // The synchronous twin: the same descriptor and no stream. It runs on the NULL stream, and
  // its time in the call (us/copy) shows how long it held the host.
  way.copies = 1;
  way.synchronous = true;
  way.name = "2D sub-rectangle, cuMemcpy2D (sync)";
  const Way rectSync = measureWay(bench, way, poisonMatrix, [&] { return cuMemcpy2D(&copy); },
                                  rectArrived);

  // The same rectangle once more, now from device memory whose rows are 4004 bytes apart: a
  // pitch that cuMemAllocPitch never computes (not even a multiple of 8). cuda.h: within a
  // device, cuMemcpy2D may fail for such pitches; cuMemcpy2DUnaligned does not have this
  // restriction, but may run significantly slower where cuMemcpy2D would have failed.
  const std::size_t oddPitch = rowBytes + sizeof(std::uint32_t);
  ms::OwnedDeviceMemory oddRows;
  ms::check(cuMemAlloc(oddRows.out(), oddPitch * matrix.height), "cuMemAlloc");

  // The whole host matrix into those rows first: a copy from the host has no such restriction.
  CUDA_MEMCPY2D upload{};
  upload.srcMemoryType = CU_MEMORYTYPE_HOST;
  upload.srcHost = hostMatrix;
  upload.srcPitch = rowBytes;
  upload.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  upload.dstDevice = oddRows.get();
  upload.dstPitch = oddPitch;
  upload.WidthInBytes = rowBytes;
  upload.Height = matrix.height;
  ms::check(cuMemcpy2DAsync(&upload, stream), "cuMemcpy2DAsync");
  ms::check(cuStreamSynchronize(stream), "cuStreamSynchronize");

  // Then the rectangle, device to device, into the pitched matrix: what the check reads.
  CUDA_MEMCPY2D onDevice = copy;
  onDevice.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  onDevice.srcHost = nullptr;
  onDevice.srcDevice = oddRows.get();
  onDevice.srcPitch = oddPitch;
  way.name = "2D, " + std::to_string(oddPitch) + "-byte rows, cuMemcpy2DUnaligned";
  const Way unaligned = measureWay(bench, way, poisonMatrix,
                                   [&] { return cuMemcpy2DUnaligned(&onDevice); }, rectArrived);

  // A volume of 64 layers of 128 rows of 256 words, dense on both sides.
  const ms::Volume volume{256, 128, 64};
  const std::size_t volumeBytes = volume.words() * sizeof(std::uint32_t);
  ms::OwnedPinnedHostMemory hostVolumeOwner;
  ms::OwnedPinnedHostMemory backVolumeOwner;
  std::uint32_t* hostVolume = pinned(hostVolumeOwner, volumeBytes);
  std::uint32_t* backVolume = pinned(backVolumeOwner, volumeBytes);
  ms::fillPattern(hostVolume, volume.words(), 11);
  ms::OwnedDeviceMemory deviceVolume;
  ms::check(cuMemAlloc(deviceVolume.out(), volumeBytes), "cuMemAlloc");
  const auto readVolume = [&] {
    ms::check(cuMemcpyDtoHAsync(backVolume, deviceVolume.get(), volumeBytes, stream),
              "cuMemcpyDtoHAsync");
    ms::check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  };
  const auto poisonVolume = [&] {
    ms::check(cuMemsetD32Async(deviceVolume.get(), ms::kSentinelWord, volume.words(), stream),
              "cuMemsetD32Async");
  };
  const auto boxesArrived = [&](std::vector<ms::Box> boxes) {
    return [&, boxes] {
      readVolume();
      return wrongWords(ms::boxMismatches(backVolume, hostVolume, volume, boxes),
                        volume.words());
    };
  };
  const ms::Box box{16, 8, 4, 224, 112, 56};
  CUDA_MEMCPY3D copy3D{};
  copy3D.srcMemoryType = CU_MEMORYTYPE_HOST;
  copy3D.srcHost = hostVolume;
  copy3D.srcXInBytes = box.x * sizeof(std::uint32_t);
  copy3D.srcY = box.y;
  copy3D.srcZ = box.z;
  copy3D.srcPitch = volume.width * sizeof(std::uint32_t);
  copy3D.srcHeight = volume.height;
  copy3D.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  copy3D.dstDevice = deviceVolume.get();
  copy3D.dstXInBytes = copy3D.srcXInBytes;
  copy3D.dstY = box.y;
  copy3D.dstZ = box.z;
  copy3D.dstPitch = copy3D.srcPitch;
  copy3D.dstHeight = volume.height;
  copy3D.WidthInBytes = box.width * sizeof(std::uint32_t);
  copy3D.Height = box.height;
  copy3D.Depth = box.depth;
  way.bytes = copy3D.WidthInBytes * box.height * box.depth;
  way.copies = 1;
  way.synchronous = false;
  way.name = "3D sub-box, one cuMemcpy3DAsync";
  const Way box3D = measureWay(bench, way, poisonVolume,
                               [&] { return cuMemcpy3DAsync(&copy3D, stream); },
                               boxesArrived({box}));

  // [batch-3d]
  // Four boxes side by side in x, one batch: pointer operands, element size 1 (bytes).
  std::vector<ms::Box> boxes;
  std::vector<CUDA_MEMCPY3D_BATCH_OP> ops;
  for (std::uint64_t k = 0; k < 4; ++k) {
    const ms::Box b{k * 64 + 4, 4, 2, 56, 120, 60};
    boxes.push_back(b);
    const std::uint64_t first = volume.index(b.x, b.y, b.z);
    CUDA_MEMCPY3D_BATCH_OP op{};
    op.src.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
    op.src.op.ptr.ptr = reinterpret_cast<CUdeviceptr>(hostVolume + first);
    op.src.op.ptr.rowLength = volume.width * sizeof(std::uint32_t);
    op.src.op.ptr.layerHeight = volume.height;
    op.dst = op.src;
    op.dst.op.ptr.ptr = deviceVolume.get() + first * sizeof(std::uint32_t);
    op.extent.width = b.width * sizeof(std::uint32_t);
    op.extent.height = b.height;
    op.extent.depth = b.depth;
    op.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    ops.push_back(op);
  }
  way.bytes = 4 * boxes[0].width * sizeof(std::uint32_t) * boxes[0].height * boxes[0].depth;
  way.copies = ops.size();
  way.name = "3D, 4 sub-boxes, one cuMemcpy3DBatchAsync";
  const Way batch3D = measureWay(bench, way, poisonVolume, [&] {
    return cuMemcpy3DBatchAsync(ops.size(), ops.data(), 0, stream);
  }, boxesArrived(boxes));
  // [batch-3d]

  // The 3D copy's synchronous twin: the same descriptor, no stream.
  way.bytes = copy3D.WidthInBytes * box.height * box.depth;
  way.copies = 1;
  way.synchronous = true;
  way.name = "3D sub-box, cuMemcpy3D (sync)";
  const Way boxSync = measureWay(bench, way, poisonVolume, [&] { return cuMemcpy3D(&copy3D); },
                                 boxesArrived({box}));

  // Each line with the line it is compared with: the first of its group.
  const std::vector<std::pair<const Way*, const Way*>> lines = {
      {&rect2D, &rect2D},
      {&rows, &rect2D},
      {&rectSync, &rect2D},
      {&unaligned, &unaligned},  // device to device: a group of its own
      {&box3D, &box3D},
      {&batch3D, &box3D},
      {&boxSync, &box3D},
  };
  out << "Shapes (x = ratio to the first line of its group; a sync line's us/copy is the time "
         "it held the host):\n";
  ms::JsonArray json;
  for (const auto& [line, reference] : lines) {
    printWay(out, *line, *reference);
    json.addRaw(wayJson(*line, *reference).dump());
  }
  report.json().set("shapes", json);

  // Every memset form, on the volume (1D) and the pitched matrix (2D), each read back.
  struct Memset {
    const char* name;
    std::uint32_t word;  // what every 32-bit word must hold after it
    bool pitchedForm;
    std::function<CUresult()> call;
  };
  const CUdeviceptr v = deviceVolume.get();
  const CUdeviceptr m = pitched.get();
  const std::size_t h = matrix.height;
  const std::vector<Memset> memsets = {
      {"cuMemsetD8", 0x5A5A5A5Au, false, [&] { return cuMemsetD8(v, 0x5A, volumeBytes); }},
      {"cuMemsetD16", 0xBEEFBEEFu, false, [&] { return cuMemsetD16(v, 0xBEEF, volumeBytes / 2); }},
      {"cuMemsetD32", 0x12345678u, false,
       [&] { return cuMemsetD32(v, 0x12345678u, volume.words()); }},
      {"cuMemsetD8Async", 0xA5A5A5A5u, false,
       [&] { return cuMemsetD8Async(v, 0xA5, volumeBytes, stream); }},
      {"cuMemsetD16Async", 0xCAFECAFEu, false,
       [&] { return cuMemsetD16Async(v, 0xCAFE, volumeBytes / 2, stream); }},
      {"cuMemsetD32Async", 0x87654321u, false,
       [&] { return cuMemsetD32Async(v, 0x87654321u, volume.words(), stream); }},
      {"cuMemsetD2D8", 0x3C3C3C3Cu, true, [&] { return cuMemsetD2D8(m, pitch, 0x3C, rowBytes, h); }},
      {"cuMemsetD2D16", 0xF00DF00Du, true,
       [&] { return cuMemsetD2D16(m, pitch, 0xF00D, rowBytes / 2, h); }},
      {"cuMemsetD2D32", 0x0BADC0DEu, true,
       [&] { return cuMemsetD2D32(m, pitch, 0x0BADC0DEu, matrix.width, h); }},
      {"cuMemsetD2D8Async", 0xC3C3C3C3u, true,
       [&] { return cuMemsetD2D8Async(m, pitch, 0xC3, rowBytes, h, stream); }},
      {"cuMemsetD2D16Async", 0xD00DD00Du, true,
       [&] { return cuMemsetD2D16Async(m, pitch, 0xD00D, rowBytes / 2, h, stream); }},
      {"cuMemsetD2D32Async", 0xFEEDFACEu, true,
       [&] { return cuMemsetD2D32Async(m, pitch, 0xFEEDFACEu, matrix.width, h, stream); }},
  };
  std::string wrong;
  for (const Memset& memset : memsets) {
    ms::check(memset.call(), memset.name);
    // The forms without Async may return before they finish (and run on the legacy stream,
    // which the non-blocking streams here do not wait for): wait for the whole context.
    ms::check(cuCtxSynchronize(), "cuCtxSynchronize");
    if (memset.pitchedForm)
      readMatrix();
    else
      readVolume();
    const std::uint64_t bad = memset.pitchedForm
                                  ? wordsOtherThan(backMatrix, matrix.words(), memset.word)
                                  : wordsOtherThan(backVolume, volume.words(), memset.word);
    if (bad > 0)
      wrong += std::string(" ") + memset.name;
    bench.checks.expect(bad == 0, std::string("memset ") + memset.name,
                        std::to_string(bad) + " words hold something else");
  }
  out << "Memsets: " << memsets.size() << " forms (D8/D16/D32, Async, 2D), each read back: "
      << (wrong.empty() ? "ok" : "WRONG:" + wrong) << '\n';
  report.json().set("memsetsPassed", wrong.empty());
}

/// One direction of the sweep, and its rows so far (one per block size).
struct SweepSide {
  bool hostToDevice = true;
  std::vector<ms::SweepRow> rows;
};

/**
 * One block size in one direction of the sweep, each way checked before it is timed: the
 * contiguous copy, the loop, the batch (STREAM), the SM copy on every SM and on the fewest
 * CTAs that reach 0.9 of the contiguous copy. Prints the line, adds the row to @p side and the
 * point to @p json.
 */
void sweepPoint(Bench& bench, const Kernels& kernels, const MappedPools& mapped, SweepSide& side,
                ms::JsonArray& json, std::ostream& out) {
  const Run& run = bench.run;
  const ms::BlockLayout& layout = run.layout;
  const bool h2d = side.hostToDevice;
  const std::uint64_t bytes = layout.totalBytes();
  // Host to device the device pool is poisoned and read back; device to host the return pool.
  // The contiguous copy keeps the source's layout, every other way moves blocks to their slots.
  const std::function<void()> poison = [&run, h2d] {
    h2d ? poisonDevicePool(run) : poisonReturnPool(run);
  };
  const auto holds = [&run, h2d](ms::PoolSide slots) {
    return h2d ? devicePoolHolds(run, slots) : returnPoolHolds(run, slots);
  };
  const ms::PoolSide contiguousSlots = h2d ? ms::PoolSide::Host : ms::PoolSide::Device;
  const ms::PoolSide scatteredSlots = h2d ? ms::PoolSide::Device : ms::PoolSide::Host;
  bench.context = std::string(h2d ? "sweep, host to device, " : "sweep, device to host, ") +
                  ms::formatBytes(layout.blockBytes) + ": ";

  Way way;
  way.bytes = bytes;
  way.copies = 1;
  way.name = h2d ? "contiguous cuMemcpyHtoDAsync" : "contiguous cuMemcpyDtoHAsync";
  const Way contiguous = measureWay(bench, way, poison, [&run, h2d, bytes] {
    return h2d ? cuMemcpyHtoDAsync(run.devicePool, run.sourcePool, bytes, run.stream)
               : cuMemcpyDtoHAsync(run.returnPool, run.devicePool, bytes, run.stream);
  }, holds(contiguousSlots));

  way.copies = layout.count;
  way.name = h2d ? "loop of cuMemcpyHtoDAsync" : "loop of cuMemcpyDtoHAsync";
  const Way loop = measureWay(bench, way, poison,
                              [&run, h2d] { return copyLoop(run.layout, run, h2d); },
                              holds(scatteredSlots));

  const auto host = reinterpret_cast<CUdeviceptr>(h2d ? run.sourcePool : run.returnPool);
  ms::BatchPlan plan = ms::planBlocks(layout, h2d ? run.devicePool : host,
                                      h2d ? host : run.devicePool, h2d,
                                      ms::copyAttributes(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM));
  way.name = "cuMemcpyBatchAsync";
  const Way batch = measureWay(bench, way, poison, batchPass(plan, run), holds(scatteredSlots));

  // The SM copy last: host to device it leaves every block in its device slot, where the
  // device-to-host ways read them.
  std::vector<Way> sm;
  const std::optional<unsigned int> fewest =
      measureSm(bench, kernels, h2d ? gatherCopy(kernels, run, mapped)
                                    : scatterCopy(kernels, run, mapped),
                contiguous, h2d ? "SM gather" : "SM scatter", poison, holds(scatteredSlots), sm);

  const ms::SweepRow row{layout.blockBytes, contiguous.gbps(), loop.gbps(), batch.gbps(),
                         sm.front().gbps()};
  side.rows.push_back(row);
  const ms::BestWay best = ms::bestWay(row);
  bool passed = contiguous.passed && loop.passed && batch.passed;
  for (const Way& w : sm)
    passed = passed && w.passed;
  const unsigned int allSms = kernels.allSms(layout);
  const std::string ctas = fewest ? std::to_string(*fewest) + " of " + std::to_string(allSms)
                                  : "- of " + std::to_string(allSms);
  out << std::fixed << std::setprecision(1) << "  " << std::left << std::setw(6)
      << (h2d ? "H2D" : "D2H") << std::right << std::setw(10) << ms::formatBytes(layout.blockBytes)
      << std::setw(8) << layout.count << std::setw(11) << contiguous.gbps()
      << std::setprecision(2) << std::setw(7) << loop.gbps() / contiguous.gbps() << 'x'
      << std::setw(7) << batch.gbps() / contiguous.gbps() << 'x' << std::setw(7)
      << row.sm / contiguous.gbps() << 'x' << std::setw(12) << ctas << "   " << best.name << ' '
      << best.share << 'x' << (passed ? "" : "  WRONG") << '\n';

  ms::JsonObject point;
  point.set("direction", h2d ? "Host to device" : "Device to host")
      .set("blockBytes", layout.blockBytes)
      .set("blocks", layout.count)
      .set("contiguousGBps", contiguous.gbps())
      .set("loopGBps", loop.gbps())
      .set("batchGBps", batch.gbps())
      .set("smGBps", row.sm)
      .set("smCtas", static_cast<std::uint64_t>(allSms))
      .set("best", best.name)
      .set("bestOverContiguous", best.share)
      .set("passed", passed);
  if (fewest)
    point.set("fewestCtas", static_cast<std::uint64_t>(*fewest));
  json.addRaw(point.dump());
}

/// A direction's findings: where the batch catches up with the SMs and stops gaining over the
/// loop, and whether the best way reaches 0.9 of the contiguous copy at every block size.
ms::JsonObject sweepFindings(const SweepSide& side, std::ostream& out) {
  std::vector<std::uint64_t> sizes;
  std::vector<double> loop;
  std::vector<double> batch;
  for (const ms::SweepRow& row : side.rows) {
    sizes.push_back(row.blockBytes);
    loop.push_back(row.loop);
    batch.push_back(row.batch);
  }
  const std::optional<std::uint64_t> catchesUp = ms::batchCatchesUp(side.rows);
  const std::optional<std::uint64_t> stops = ms::batchStopsMattering(sizes, loop, batch);
  const std::optional<ms::SweepRow> weakest = ms::weakestRow(side.rows);
  const auto from = [](const std::optional<std::uint64_t>& bytes) {
    return bytes ? "from " + ms::formatBytes(*bytes) + " blocks on" : std::string("at no size swept");
  };
  const char* title = side.hostToDevice ? "Host to device" : "Device to host";
  out << title << ": the batch catches up with the SMs (" << std::setprecision(2)
      << ms::kCatchUpShare << " of their rate) " << from(catchesUp)
      << "; it gains less than 1.1x over the loop " << from(stops) << '\n';

  ms::JsonObject json;
  if (catchesUp)
    json.set("batchCatchesUpAtBytes", *catchesUp);
  if (stops)
    json.set("batchStopsMatteringAtBytes", *stops);
  if (weakest) {
    const ms::BestWay best = ms::bestWay(*weakest);
    const bool met = best.share >= ms::kLinkShare;
    out << title << ": the best way reaches " << ms::kLinkShare
        << " of the contiguous copy at every block size (the goal): " << (met ? "met" : "not met")
        << ", lowest " << best.share << "x (" << best.name << " at "
        << ms::formatBytes(weakest->blockBytes) << ")\n";
    json.set("lowestBestOverContiguous", best.share)
        .set("lowestBestAtBytes", weakest->blockBytes)
        .set("goalMet", met);
  }
  return json;
}

/**
 * The sweep: at each of @p points (block sizes from `--sweep-min` to `--sweep-max`, the pool cut
 * into at most kMaxBlocks blocks) both directions, every way checked (sweepPoint()), then where
 * the batch catches up with the SMs in each. The source pool is refilled for each size's layout.
 */
void measureSweep(Bench& bench, const Kernels& kernels, const std::vector<ms::SweepPoint>& points,
                  ms::Report& report) {
  Run run = bench.run;
  Bench sweep{run, bench.common, bench.start, bench.stop, bench.beside, bench.checks, {}};
  const MappedPools mapped = mappedPools(run);
  std::ostream& out = report.out();
  out << "Sweep, up to " << ms::formatBytes(bench.run.layout.totalBytes())
      << " at each block size (x = ratio to the contiguous copy; SMs: every SM):\n"
      << "  dir   block size  blocks  contiguous   loop   batch     SMs  CTAs for 0.9   best\n";
  SweepSide h2d{true, {}};
  SweepSide d2h{false, {}};
  ms::JsonArray json;
  for (const ms::SweepPoint& point : points) {
    run.layout = ms::makeLayout(point.count, point.blockBytes, /*listOffsets=*/false);
    ms::fillBlocks(run.sourcePool, run.layout, ms::PoolSide::Host, ms::kBlockSeed);
    uploadOffsets(kernels, run);
    sweepPoint(sweep, kernels, mapped, h2d, json, out);
    sweepPoint(sweep, kernels, mapped, d2h, json, out);
  }
  ms::JsonObject findings;
  findings.set("hostToDevice", sweepFindings(h2d, out))
      .set("deviceToHost", sweepFindings(d2h, out));
  report.json().set("sweep", json).set("crossover", findings);
}

}  // namespace

// [sizing]
ms::BlockLayout sizeRun(CUdevice device, const ms::BatchOptions& options, std::ostream& out) {
  out << "Device " << ms::deviceOrdinal(device) << ": " << ms::deviceName(device) << '\n';
  // One device pool; two pinned host pools and a pageable one. The command line already
  // refused what no machine holds; this fits the run to what this one has now.
  std::size_t freeBytes = 0;
  std::size_t totalBytes = 0;
  ms::check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
  const ms::HostMemory host = ms::hostMemoryAvailable();

  // Common's rule: at most 80 % of free device memory for the device pool, and 80 % of the
  // host memory this process may take (MemAvailable, cgroup limits) for the three host pools.
  const std::uint64_t deviceBudget = freeBytes / 10 * 8;
  const std::uint64_t hostBudget = host.availableBytes / 10 * 8 / kHostPools;
  // The tighter of the two is the limit, and messages name it.
  const bool deviceTighter = deviceBudget <= hostBudget;
  const std::string limitedBy =
      deviceTighter ? std::string("the device's free memory") : host.limitedBy;
  const ms::BlockCount blocks =
      ms::fitBlockCount(options, std::min(deviceBudget, hostBudget), limitedBy);

  const ms::BlockLayout layout = ms::makeLayout(blocks.count, options.blockSize());
  out << "Blocks: " << blocks.count << " x " << ms::formatBytes(layout.blockBytes) << " = "
      << ms::formatBytes(layout.totalBytes()) << ", scattered over both pools";
  if (blocks.cut)
    out << " (cut from " << ms::kDefaultBlocks << " to fit " << limitedBy << ")";
  out << '\n';
  return layout;
}
// [sizing]

ms::Verdict measureMemcpyBatch(const ms::BatchRun& lesson, const ms::BlockLayout& layout,
                               const ms::CommonOptions& common, const ms::BatchOptions& options,
                               ms::Report& report) {
  // The lesson's batch is the first check; every way, shape, memset and sweep point follows.
  ms::RunChecks checks;
  checks.expectWords(lesson.lessonBlocks, "the lesson's batch: every block in its slot");
  checks.expect(lesson.noteArrived, "the lesson's batch: the note from the stack");

  // The sweep's points, known first: the kernels' offsets need room for the largest of them.
  std::vector<ms::SweepPoint> points;
  if (options.sweep)
    points = ms::sweepPoints(options.sweepFrom(), options.sweepTo(), layout.totalBytes());
  std::uint64_t maxBlocks = layout.count;
  for (const ms::SweepPoint& point : points)
    maxBlocks = std::max(maxBlocks, point.count);

  // A stream of the measurements' own, and a second one for the kernel that runs beside,
  // declared after the kernels' memory: on an error path they drain before it is freed.
  Kernels kernels;
  ms::OwnedStream stream;
  ms::check(cuStreamCreate(stream.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  ms::OwnedStream beside;
  ms::check(cuStreamCreate(beside.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  Run run;
  static_cast<ms::BatchRun&>(run) = lesson;
  ms::check(cuCtxGetDevice(&run.device), "cuCtxGetDevice");
  run.stream = stream.get();
  run.layout = layout;

  ms::OwnedEvent start;
  ms::OwnedEvent stop;
  ms::check(cuEventCreate(start.out(), CU_EVENT_DEFAULT), "cuEventCreate");
  ms::check(cuEventCreate(stop.out(), CU_EVENT_DEFAULT), "cuEventCreate");
  Bench bench{run, common, start.get(), stop.get(), beside.get(), checks, {}};
  prepareKernels(kernels, run, maxBlocks);
  uploadOffsets(kernels, run);

  measureWays(bench, kernels, report);
  measureShapes(bench, report);
  if (options.sweep)
    measureSweep(bench, kernels, points, report);

  report.json()
      .set("device", ms::deviceOrdinal(run.device))
      .set("deviceName", ms::deviceName(run.device))
      .set("blocks", layout.count)
      .set("blockBytes", layout.blockBytes)
      .set("iterations", common.iterations)
      .set("warmup", common.warmup)
      .set("lessonPassed", lesson.lessonBlocks.passed() && lesson.noteArrived);
  ms::check(cuCtxSynchronize(), "cuCtxSynchronize");
  return checks.report(report.out(), report.json());
}
