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
#include <vector>

#include "support/timing.hpp"

namespace ms = memsamples;

namespace {

constexpr int kHostPools = 3;         // the pinned source and return pools, the pageable copy
constexpr int kThreadsPerBlock = 256;  // the block-copy kernel's threads per CUDA block
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
  bool supported = true;       // false where the driver answered CUDA_ERROR_NOT_SUPPORTED
  bool passed = true;          // every word arrived (checked before timing)
  std::string problem;         // the first wrong word, when not
  double medianMs = kNaN;      // CUDA-event time of one pass, median
  double submitUs = kNaN;      // host time in the submitting calls, per copy
  double gbps() const { return ms::gigabytesPerSecond(static_cast<double>(bytes), medianMs); }
};

/// What every measurement needs: the run, the options, two events and a second stream.
struct Bench {
  const Run& run;
  const ms::CommonOptions& common;
  CUevent start = nullptr;
  CUevent stop = nullptr;
  CUstream beside = nullptr;  // where the spin kernel runs next to a copy
};

/// The work of one pass: enqueues it on the run's stream and returns the driver's answer.
using Pass = std::function<CUresult()>;

/**
 * Runs @p pass once and checks it (@p poison before, @p verify after), then times it: warmup,
 * then iterations each between two events; @p before runs ahead of each pass (the spin kernel).
 * A CUDA_ERROR_NOT_SUPPORTED answer marks the way unsupported; any other failure throws.
 */
// [measure-way]
Way measureWay(Bench& bench, Way way, const std::function<void()>& poison, const Pass& pass,
               const std::function<ms::PatternCheck()>& verify,
               const std::function<void()>& before = {}) {
  const CUstream stream = bench.run.stream;
  poison();
  if (before)
    before();
  const CUresult first = pass();
  if (first == CUDA_ERROR_NOT_SUPPORTED) {
    way.supported = false;
    ms::check(cuCtxSynchronize(), "cuCtxSynchronize");
    return way;
  }
  ms::check(first, way.name.c_str());
  ms::check(cuCtxSynchronize(), "cuCtxSynchronize");
  const ms::PatternCheck check = verify();
  way.passed = check.passed();
  if (!way.passed)
    way.problem = check.expected == check.actual ? std::to_string(check.mismatches) + " wrong words"
                                                 : ms::describePatternCheck(check);

  std::vector<double> timesMs;
  std::vector<double> submitUs;
  for (int i = 0; i < bench.common.warmup + bench.common.iterations; ++i) {
    if (before)
      before();
    ms::check(cuEventRecord(bench.start, stream), "cuEventRecord");
    const auto submitStart = std::chrono::steady_clock::now();
    ms::check(pass(), way.name.c_str());
    const auto submitEnd = std::chrono::steady_clock::now();
    ms::check(cuEventRecord(bench.stop, stream), "cuEventRecord");
    ms::check(cuCtxSynchronize(), "cuCtxSynchronize");
    float elapsedMs = 0;
    ms::check(cuEventElapsedTime(&elapsedMs, bench.start, bench.stop), "cuEventElapsedTime");
    if (i < bench.common.warmup)
      continue;
    timesMs.push_back(elapsedMs);
    const std::chrono::duration<double, std::micro> submit = submitEnd - submitStart;
    submitUs.push_back(submit.count() / static_cast<double>(way.copies));
  }
  way.medianMs = ms::summarizeTimings(timesMs).medianMs;
  way.submitUs = ms::summarizeTimings(submitUs).medianMs;
  return way;
}
// [measure-way]

/// A way's line: GB/s, the ratio to @p reference, submit time, and whether it checked out.
void printWay(std::ostream& out, const Way& way, const Way& reference) {
  out << "  " << std::left << std::setw(44) << way.name << std::right;
  if (!way.supported) {
    out << "not supported by this driver (CUDA_ERROR_NOT_SUPPORTED)\n";
    return;
  }
  out << std::fixed << std::setprecision(1) << std::setw(8) << way.gbps() << " GB/s  "
      << std::setprecision(2) << std::setw(5) << way.gbps() / reference.gbps() << "x  "
      << std::setw(7) << way.submitUs << " us/copy  " << (way.passed ? "ok" : "WRONG") << '\n';
  if (!way.passed)
    out << "    " << way.problem << '\n';
}

/// The way as a JSON object.
ms::JsonObject wayJson(const Way& way, const Way& reference) {
  ms::JsonObject json;
  json.set("name", way.name).set("supported", way.supported).set("copies", way.copies);
  if (way.supported) {
    json.set("passed", way.passed)
        .set("medianMs", way.medianMs)
        .set("gbps", way.gbps())
        .set("overContiguous", way.gbps() / reference.gbps())
        .set("submitUsPerCopy", way.submitUs);
  }
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
};

/// Loads the kernels and uploads the layout's offsets.
void prepareKernels(Kernels& kernels, const Run& run) {
  const std::vector<char> fatbin = ms::readBinaryFile(ms::locateFatbin("blockCopy_kernel.fatbin"));
  ms::check(cuModuleLoadData(kernels.module.out(), fatbin.data()), "cuModuleLoadData");
  ms::check(cuModuleGetFunction(&kernels.blockCopy, kernels.module.get(), "BlockCopy_kernel"),
            "cuModuleGetFunction");
  ms::check(cuModuleGetFunction(&kernels.spin, kernels.module.get(), "Spin_kernel"),
            "cuModuleGetFunction");
  const ms::BlockLayout& layout = run.layout;
  std::vector<unsigned long long> host(layout.count);
  std::vector<unsigned long long> device(layout.count);
  for (std::uint64_t block = 0; block < layout.count; ++block) {
    host[block] = layout.hostOffset(block);
    device[block] = layout.deviceOffset(block);
  }
  const std::size_t bytes = layout.count * sizeof(unsigned long long);
  ms::check(cuMemAlloc(kernels.hostOffsets.out(), bytes), "cuMemAlloc");
  ms::check(cuMemAlloc(kernels.deviceOffsets.out(), bytes), "cuMemAlloc");
  ms::check(cuMemcpyHtoDAsync(kernels.hostOffsets.get(), host.data(), bytes, run.stream),
            "cuMemcpyHtoDAsync");
  ms::check(cuMemcpyHtoDAsync(kernels.deviceOffsets.get(), device.data(), bytes, run.stream),
            "cuMemcpyHtoDAsync");
  ms::check(cuStreamSynchronize(run.stream), "cuStreamSynchronize");
  kernels.smCount =
      static_cast<unsigned int>(ms::deviceAttribute(run.device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
}

/// Enqueues the block-copy kernel: block i from src + srcOffsets[i] to dst + dstOffsets[i].
CUresult launchBlockCopy(const Kernels& kernels, const Run& run, CUdeviceptr dst,
                         CUdeviceptr src, CUdeviceptr dstOffsets, CUdeviceptr srcOffsets) {
  unsigned long long count = run.layout.count;
  unsigned long long blockBytes = run.layout.blockBytes;
  void* params[] = {&dst, &src, &dstOffsets, &srcOffsets, &count, &blockBytes};
  const auto grid = static_cast<unsigned int>(
      std::min<std::uint64_t>(count, static_cast<std::uint64_t>(kernels.smCount) * 16));
  return cuLaunchKernel(kernels.blockCopy, grid, 1, 1, kThreadsPerBlock, 1, 1, 0, run.stream,
                        params, nullptr);
}

/// Starts the spin kernel on the second stream: every SM busy for about three contiguous copies.
void launchSpin(const Kernels& kernels, const Bench& bench) {
  long long cycles = kernels.spinCycles;
  void* params[] = {&cycles};
  ms::check(cuLaunchKernel(kernels.spin, kernels.smCount * 2, 1, 1, 128, 1, 1, 0, bench.beside,
                           params, nullptr),
            "cuLaunchKernel");
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

/// A batch pass: cuMemcpyBatchAsync of @p plan, or CUDA_ERROR_NOT_SUPPORTED where the driver
/// has no such entry point (older than CUDA 12.8).
Pass batchPass(ms::BatchPlan& plan, const Run& run) {
  return [&plan, &run] {
    return cuMemcpyBatchAsync != nullptr ? ms::enqueueBatch(plan, run.stream)
                                         : CUDA_ERROR_NOT_SUPPORTED;
  };
}

/// Host-to-device ways, then device-to-host ways, printed and added to the JSON.
bool measureWays(Bench& bench, Kernels& kernels, ms::Report& report) {
  const Run& run = bench.run;
  const ms::BlockLayout& layout = run.layout;
  const std::uint64_t bytes = layout.totalBytes();
  const std::uint64_t words = bytes / sizeof(std::uint32_t);
  const auto sourceAddress = reinterpret_cast<CUdeviceptr>(run.sourcePool);
  const auto returnAddress = reinterpret_cast<CUdeviceptr>(run.returnPool);
  const auto pageableAddress = reinterpret_cast<CUdeviceptr>(run.pageablePool);
  CUdeviceptr mappedSource = 0;
  CUdeviceptr mappedReturn = 0;
  ms::check(cuMemHostGetDevicePointer(&mappedSource, run.sourcePool, 0),
            "cuMemHostGetDevicePointer");
  ms::check(cuMemHostGetDevicePointer(&mappedReturn, run.returnPool, 0),
            "cuMemHostGetDevicePointer");

  const auto poisonDevice = [&run] { poisonDevicePool(run); };
  const auto poisonHost = [&] {
    std::fill(run.returnPool, run.returnPool + words, ms::kSentinelWord);
  };
  const auto deviceHolds = [&run](ms::PoolSide side) { return devicePoolHolds(run, side); };
  const auto returnHolds = [&](ms::PoolSide side) {
    return [&run, &layout, side] {
      return ms::checkBlocks(run.returnPool, layout, side, ms::kBlockSeed);
    };
  };
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
  way = one;
  way.name = "SM gather from mapped pinned memory";
  h2d.push_back(measureWay(bench, way, poisonDevice, [&] {
    return launchBlockCopy(kernels, run, run.devicePool, mappedSource,
                           kernels.deviceOffsets.get(), kernels.hostOffsets.get());
  }, deviceHolds(ms::PoolSide::Device)));

  // Device to host: the device pool holds every block in its slot again (the loop puts them).
  ms::check(copyLoop(layout, run, true), "cuMemcpyHtoDAsync");
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
  way = one;
  way.name = "SM scatter into mapped pinned memory";
  d2h.push_back(measureWay(bench, way, poisonHost, [&] {
    return launchBlockCopy(kernels, run, mappedReturn, run.devicePool,
                           kernels.hostOffsets.get(), kernels.deviceOffsets.get());
  }, returnHolds(ms::PoolSide::Host)));

  std::ostream& out = report.out();
  bool passed = h2dContiguous.passed && d2hContiguous.passed;
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
      passed = passed && w.passed;
    }
  }
  // The sample's goals on the H200, reported whatever they turn out to be. h2d[0] is the loop
  // and h2d[1] the batch from the pinned pool (STREAM), in the order they were measured above.
  if (h2d[1].supported) {
    out << std::setprecision(2) << "Batch / loop (host to device) = " << h2d[1].gbps() / h2d[0].gbps()
        << " (goal >= 2 at 64 KiB blocks); batch / contiguous = "
        << h2d[1].gbps() / h2dContiguous.gbps() << " (goal >= 0.9)\n";
  }
  report.json().set("ways", json);
  return passed;
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
 * per row; a sub-box of a volume by cuMemcpy3DAsync, four boxes by one cuMemcpy3DBatchAsync;
 * and every memset form (D8/D16/D32, their Async and 2D forms) on the same memory.
 */
bool measureShapes(Bench& bench, ms::Report& report) {
  const CUstream stream = bench.run.stream;
  std::ostream& out = report.out();
  bool passed = true;

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
    return cuMemcpy3DBatchAsync == nullptr
               ? CUDA_ERROR_NOT_SUPPORTED
               : cuMemcpy3DBatchAsync(ops.size(), ops.data(), 0, stream);
  }, boxesArrived(boxes));
  // [batch-3d]

  out << "Shapes (x = ratio to the first line of each pair):\n";
  printWay(out, rect2D, rect2D);
  printWay(out, rows, rect2D);
  printWay(out, box3D, box3D);
  printWay(out, batch3D, box3D);
  ms::JsonArray json;
  for (const Way* w : {&rect2D, &rows, &box3D, &batch3D}) {
    json.addRaw(wayJson(*w, w == &rows ? rect2D : w == &batch3D ? box3D : *w).dump());
    passed = passed && w->passed;
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
  }
  out << "Memsets: " << memsets.size() << " forms (D8/D16/D32, Async, 2D), each read back: "
      << (wrong.empty() ? "ok" : "WRONG:" + wrong) << '\n';
  report.json().set("memsetsPassed", wrong.empty());
  return passed && wrong.empty();
}

/**
 * The sweep, host to device: at each block size from `--sweep-min` to `--sweep-max` (doubling,
 * within the pool) the loop, the batch and the contiguous copy of the same bytes, each checked.
 * The source pool is refilled for each size's layout.
 */
bool measureSweep(Bench& bench, const ms::BatchOptions& options, ms::Report& report) {
  Run run = bench.run;
  Bench sweep{run, bench.common, bench.start, bench.stop, bench.beside};
  const std::uint64_t poolBytes = bench.run.layout.totalBytes();
  const auto attributes = ms::copyAttributes(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM);
  std::ostream& out = report.out();
  out << "Sweep, host to device, " << ms::formatBytes(poolBytes) << " in all:\n"
      << "  block size    blocks   loop GB/s  batch GB/s  contiguous  batch/loop  batch/contig\n";
  std::vector<std::uint64_t> sizes;
  std::vector<double> loopGBps;
  std::vector<double> batchGBps;
  ms::JsonArray json;
  bool passed = true;
  for (const std::uint64_t blockBytes :
       ms::sweepSizes(options.sweepFrom(), options.sweepTo(), poolBytes)) {
    run.layout = ms::makeLayout(std::max<std::uint64_t>(poolBytes / blockBytes, 2), blockBytes);
    if (run.layout.totalBytes() > poolBytes)
      continue;  // a block size over half the pool: no two blocks fit
    ms::fillBlocks(run.sourcePool, run.layout, ms::PoolSide::Host, ms::kBlockSeed);
    Way way;
    way.bytes = run.layout.totalBytes();
    way.copies = 1;
    way.name = "contiguous";
    const Way contiguous = measureWay(sweep, way, [&run] { poisonDevicePool(run); }, [&run] {
      return cuMemcpyHtoDAsync(run.devicePool, run.sourcePool, run.layout.totalBytes(),
                               run.stream);
    }, devicePoolHolds(run, ms::PoolSide::Host));
    way.copies = run.layout.count;
    way.name = "loop of cuMemcpyHtoDAsync";
    const Way loop = measureWay(sweep, way, [&run] { poisonDevicePool(run); },
                                [&run] { return copyLoop(run.layout, run, true); },
                                devicePoolHolds(run, ms::PoolSide::Device));
    ms::BatchPlan plan = ms::planBlocks(run.layout, run.devicePool,
                                        reinterpret_cast<CUdeviceptr>(run.sourcePool), true,
                                        attributes);
    way.name = "cuMemcpyBatchAsync";
    const Way batch = measureWay(sweep, way, [&run] { poisonDevicePool(run); },
                                 batchPass(plan, run), devicePoolHolds(run, ms::PoolSide::Device));
    passed = passed && contiguous.passed && loop.passed && batch.passed;
    sizes.push_back(blockBytes);
    loopGBps.push_back(loop.gbps());
    batchGBps.push_back(batch.gbps());
    out << std::fixed << std::setprecision(1) << "  " << std::setw(10)
        << ms::formatBytes(blockBytes) << std::setw(10) << run.layout.count << std::setw(12)
        << loop.gbps() << std::setw(12) << batch.gbps() << std::setw(12) << contiguous.gbps()
        << std::setprecision(2) << std::setw(12) << batch.gbps() / loop.gbps() << std::setw(14)
        << batch.gbps() / contiguous.gbps()
        << (loop.passed && batch.passed && contiguous.passed ? "" : "  WRONG") << '\n';
    ms::JsonObject point;
    point.set("blockBytes", blockBytes)
        .set("blocks", run.layout.count)
        .set("loopGBps", loop.gbps())
        .set("batchGBps", batch.gbps())
        .set("contiguousGBps", contiguous.gbps())
        .set("batchSupported", batch.supported);
    json.addRaw(point.dump());
  }
  const std::optional<std::uint64_t> stops = ms::batchStopsMattering(sizes, loopGBps, batchGBps);
  out << "The batch gains less than 1.1x over the loop from "
      << (stops ? ms::formatBytes(*stops) + " blocks on" : std::string("no size swept")) << '\n';
  report.json().set("sweep", json);
  if (stops)
    report.json().set("batchStopsMatteringAtBytes", *stops);
  return passed;
}

}  // namespace

// [sizing]
ms::BlockLayout sizeRun(CUdevice device, const ms::BatchOptions& options, std::ostream& out) {
  out << "Device " << ms::deviceOrdinal(device) << ": " << ms::deviceName(device) << '\n';
  // One device pool; two pinned host pools and a pageable one. The command line already
  // refused what no machine holds; this refuses what this one does not.
  const std::uint64_t blockBytes = options.blockSize();
  const auto blocks = static_cast<std::uint64_t>(options.blocks);
  const std::uint64_t wanted = blocks * blockBytes;
  std::size_t freeBytes = 0;
  std::size_t totalBytes = 0;
  ms::check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
  // Common's rule, asked what fits at most: 80 % of free device memory, and the host memory
  // this process may take (MemAvailable, cgroup limits) for the three host pools.
  const std::uint64_t deviceFits = ms::chooseBufferBytes(std::nullopt, wanted, freeBytes, 1,
                                                         ms::kBlockElementBytes);
  const std::uint64_t fits =
      ms::fitHostMemory(std::nullopt, deviceFits, kHostPools, ms::kBlockElementBytes);
  if (fits < wanted) {
    const char* where = deviceFits < wanted ? "the device's free memory" : "host memory";
    throw ms::UsageError("--blocks " + std::to_string(blocks) + " x --block-size " +
                         ms::formatBytes(blockBytes) + " = " + ms::formatBytes(wanted) +
                         " does not fit " + where + ": at most " + ms::formatBytes(fits) +
                         " in all");
  }
  const ms::BlockLayout layout = ms::makeLayout(blocks, blockBytes);
  out << "Blocks: " << blocks << " x " << ms::formatBytes(blockBytes) << " = "
      << ms::formatBytes(layout.totalBytes()) << ", scattered over both pools\n";
  return layout;
}
// [sizing]

ms::Verdict measureMemcpyBatch(const ms::BatchRun& lesson, const ms::BlockLayout& layout,
                               const ms::CommonOptions& common, const ms::BatchOptions& options,
                               ms::Report& report) {
  std::ostream& out = report.out();
  if (lesson.batchAnswer == CUDA_ERROR_NOT_SUPPORTED)
    out << "cuMemcpyBatchAsync: not supported by this driver; the other ways are measured\n";
  else if (!lesson.lessonPassed)
    out << "The lesson's batch did not deliver every byte\n";
  // Without the batch, the lesson's check saw only sentinels: that result is set aside.
  const bool lessonPassed =
      lesson.batchAnswer == CUDA_ERROR_NOT_SUPPORTED || lesson.lessonPassed;

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
  Bench bench{run, common, start.get(), stop.get(), beside.get()};
  prepareKernels(kernels, run);

  bool passed = measureWays(bench, kernels, report) && lessonPassed;
  passed = measureShapes(bench, report) && passed;
  if (options.sweep)
    passed = measureSweep(bench, options, report) && passed;

  report.json()
      .set("device", ms::deviceOrdinal(run.device))
      .set("deviceName", ms::deviceName(run.device))
      .set("blocks", layout.count)
      .set("blockBytes", layout.blockBytes)
      .set("iterations", common.iterations)
      .set("warmup", common.warmup)
      .set("lessonBatchSupported", lesson.batchAnswer != CUDA_ERROR_NOT_SUPPORTED)
      .set("lessonPassed", lessonPassed);
  ms::check(cuCtxSynchronize(), "cuCtxSynchronize");
  return passed ? ms::Verdict::Pass : ms::Verdict::Fail;
}
