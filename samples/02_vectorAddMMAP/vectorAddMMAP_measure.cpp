// 02_vectorAddMMAP's measurements (see vectorAddMMAP_measure.hpp).
#include "vectorAddMMAP_measure.hpp"

#include <chrono>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

namespace ms = memsamples;
namespace vmm = memsamples::vmm;

namespace {

constexpr int kBandwidthRounds = 3;  // interleaved VMM / cuMemAlloc rounds
constexpr int kCostRepetitions = 7;  // timed builds per stripe count, after one untimed

/// The same launch as @p run on other buffers.
ms::TimingStats timeKernel(ms::VectorAddLaunch run, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c,
                           const ms::CommonOptions& options) {
  run.a = a;
  run.b = b;
  run.c = c;
  return ms::timeVectorAdd(run, options.warmup, options.iterations);
}

ms::VectorAddCheck fetchAndCheck(const ms::VectorAddLaunch& run, CUdeviceptr c, const float* hostA,
                                 const float* hostB, float* hostC) {
  ms::check(cuMemcpyDtoHAsync(hostC, c, run.count * sizeof(float), run.stream),
            "cuMemcpyDtoHAsync");
  ms::check(cuStreamSynchronize(run.stream), "cuStreamSynchronize");
  return ms::checkVectorAdd(hostA, hostB, hostC, run.count);
}

double millisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

double median(std::vector<double> values) {
  return ms::summarizeTimings(std::move(values)).medianMs;
}

}  // namespace

ms::VectorAddCheck compareWithCuMemAlloc(const ms::VectorAddLaunch& run, CUdevice device,
                                         int remoteStripes, const ms::CommonOptions& options,
                                         const float* hostA, const float* hostB, float* hostC,
                                         std::ostream& out, ms::JsonObject& json) {
  const std::size_t bytes = run.count * sizeof(float);
  ms::OwnedDeviceMemory refA, refB, refC;
  ms::check(cuMemAlloc(refA.out(), bytes), "cuMemAlloc");
  ms::check(cuMemAlloc(refB.out(), bytes), "cuMemAlloc");
  ms::check(cuMemAlloc(refC.out(), bytes), "cuMemAlloc");
  ms::check(cuMemcpyDtoDAsync(refA.get(), run.a, bytes, run.stream), "cuMemcpyDtoDAsync");
  ms::check(cuMemcpyDtoDAsync(refB.get(), run.b, bytes, run.stream), "cuMemcpyDtoDAsync");

  ms::TimingStats onVmm{}, onMemAlloc{};
  ms::VectorAddCheck vmmCheck, referenceCheck;
  try {
    for (int round = 0; round < kBandwidthRounds; ++round) {
      const ms::TimingStats vmmRound = timeKernel(run, run.a, run.b, run.c, options);
      const ms::TimingStats allocRound =
          timeKernel(run, refA.get(), refB.get(), refC.get(), options);
      if (round == 0 || vmmRound.medianMs < onVmm.medianMs)
        onVmm = vmmRound;
      if (round == 0 || allocRound.medianMs < onMemAlloc.medianMs)
        onMemAlloc = allocRound;
    }
    vmmCheck = fetchAndCheck(run, run.c, hostA, hostB, hostC);
    referenceCheck = fetchAndCheck(run, refC.get(), hostA, hostB, hostC);
  } catch (...) {
    // Launches may still be queued on the references: they finish before the buffers go.
    (void)cuStreamSynchronize(run.stream);
    throw;
  }

  const double moved = 3.0 * static_cast<double>(bytes);
  const double vmmGBps = ms::gigabytesPerSecond(moved, onVmm.medianMs);
  const double allocGBps = ms::gigabytesPerSecond(moved, onMemAlloc.medianMs);
  const double peakGBps = ms::theoreticalPeakGBps(device);
  out << std::fixed << std::setprecision(1);
  out << "Kernel  on VMM range  " << std::setw(8) << vmmGBps << " GB/s  (median "
      << std::setprecision(3) << onVmm.medianMs << " ms, reads A and B, writes C)\n";
  out << std::setprecision(1) << "Kernel  on cuMemAlloc " << std::setw(8) << allocGBps
      << " GB/s  (median " << std::setprecision(3) << onMemAlloc.medianMs
      << " ms, same kernel, same size, same run)\n";
  out << std::setprecision(1) << "Peak    theoretical   " << std::setw(8) << peakGBps
      << " GB/s  (memory clock x 2 x bus width)\n";
  // Stripes on other GPUs are read and written over the peer link: then the ratio measures the
  // link (see 05_p2pMemMap), not the mapping.
  const std::string expectation =
      remoteStripes == 0 ? "expected about 1: a mapping costs nothing once built"
                         : std::to_string(remoteStripes) +
                               (remoteStripes == 1 ? " stripe lives" : " stripes live") +
                               " on other GPUs, so the peer link bounds it";
  out << std::setprecision(3) << "Ratio   VMM / cuMemAlloc = " << vmmGBps / allocGBps << " ("
      << expectation << "), VMM / peak = " << vmmGBps / peakGBps << '\n';
  json.set("iterations", options.iterations)
      .set("warmup", options.warmup)
      .set("vmmKernelMedianMs", onVmm.medianMs)
      .set("vmmKernelGBps", vmmGBps)
      .set("cuMemAllocKernelMedianMs", onMemAlloc.medianMs)
      .set("cuMemAllocKernelGBps", allocGBps)
      .set("vmmOverCuMemAlloc", vmmGBps / allocGBps)
      .set("stripesOnOtherDevices", remoteStripes)
      .set("theoreticalPeakGBps", peakGBps)
      .set("vmmOverPeak", vmmGBps / peakGBps);
  return vmmCheck.mismatches > 0 ? vmmCheck : referenceCheck;
}

std::vector<int> mappingCostStripeCounts() {
  return {1, 2, 8, 64};
}

void reportMappingCost(const vmm::DeviceRoles& roles, const vmm::Granularities& granularities,
                       std::uint64_t bytes, std::ostream& out, ms::JsonObject& json) {
  out << "Mapping cost of a " << ms::formatBytes(bytes) << " vector (host time, median of "
      << kCostRepetitions << ", ms per range):\n"
      << "  stripes     mapped     build      free   cuMemAlloc  cuMemFree   VMM / cuMemAlloc\n";
  ms::JsonArray rows;
  for (const int stripes : mappingCostStripeCounts()) {
    const vmm::StripeLayout layout = vmm::planStripes(bytes, granularities, stripes, roles.backing);
    std::vector<double> build, release, alloc, free;
    // Repetition 0 is not timed: the first build of a shape pays for driver bookkeeping.
    for (int repetition = 0; repetition <= kCostRepetitions; ++repetition) {
      auto start = std::chrono::steady_clock::now();
      vmm::StripedVmmRange range(layout, roles.mapping);
      const double buildMs = millisecondsSince(start);
      start = std::chrono::steady_clock::now();
      vmm::unmapStripedRange(range.release(), layout.roundedBytes);
      const double releaseMs = millisecondsSince(start);

      ms::OwnedDeviceMemory reference;
      start = std::chrono::steady_clock::now();
      ms::check(cuMemAlloc(reference.out(), layout.roundedBytes), "cuMemAlloc");
      const double allocMs = millisecondsSince(start);
      start = std::chrono::steady_clock::now();
      ms::check(cuMemFree(reference.release()), "cuMemFree");
      const double freeMs = millisecondsSince(start);
      if (repetition > 0) {
        build.push_back(buildMs);
        release.push_back(releaseMs);
        alloc.push_back(allocMs);
        free.push_back(freeMs);
      }
    }
    const double buildMs = median(build), freeMs = median(release);
    const double allocMs = median(alloc), cuFreeMs = median(free);
    const double ratio = (buildMs + freeMs) / (allocMs + cuFreeMs);
    out << std::fixed << std::setprecision(3) << "  " << std::setw(7) << stripes << std::setw(11)
        << ms::formatBytes(layout.roundedBytes) << std::setw(10) << buildMs << std::setw(10)
        << freeMs << std::setw(13) << allocMs << std::setw(11) << cuFreeMs << std::setw(19)
        << std::setprecision(2) << ratio << '\n';
    ms::JsonObject row;
    row.set("stripes", stripes)
        .set("bytes", layout.roundedBytes)
        .set("granularity", layout.granularity)
        .set("buildMs", buildMs)
        .set("freeMs", freeMs)
        .set("cuMemAllocMs", allocMs)
        .set("cuMemFreeMs", cuFreeMs)
        .set("vmmOverCuMemAlloc", ratio);
    rows.addRaw(row.dump());
  }
  json.set("mappingCost", rows);
}

void printStripe(std::ostream& out, std::size_t stripe, int deviceOrdinal, CUdeviceptr address,
                 CUdeviceptr rangeStart, std::size_t rangeSize, const std::string& access,
                 std::size_t stripeCount) {
  if (stripe == 4 && stripeCount > 5)
    out << "     ...\n";
  if (stripe >= 4 && stripe + 1 != stripeCount)
    return;
  std::ostringstream range;
  range << "0x" << std::hex << rangeStart << std::dec << " + " << ms::formatBytes(rangeSize);
  std::ostringstream row;
  row << std::setw(8) << stripe << std::setw(8) << deviceOrdinal << "  0x" << std::hex << std::left
      << std::setw(14) << address << std::dec << std::setw(26) << range.str() << access << '\n';
  out << row.str();
}

void recordRun(ms::JsonObject& json, int ordinal, const std::string& deviceName,
               const vmm::DeviceRoles& roles, const vmm::Granularities& granularities,
               const vmm::RunSize& size, const std::vector<std::string>& problems) {
  const vmm::StripeLayout& layout = size.layout;
  ms::JsonArray backing, mapping, stripes, problemList, memory;
  for (const int device : roles.backing)
    backing.add(device);
  for (const int device : roles.mapping)
    mapping.add(device);
  for (const vmm::Stripe& stripe : layout.stripes)
    stripes.add(stripe.device);
  for (const std::string& problem : problems)
    problemList.add(problem);
  for (const vmm::DeviceNeed& need : size.needs) {
    ms::JsonObject row;
    row.set("device", need.device)
        .set("neededBytes", need.neededBytes())
        .set("freeBytes", need.freeBytes);
    memory.addRaw(row.dump());
  }
  json.set("device", ordinal)
      .set("deviceName", deviceName)
      .set("backingDevices", backing)
      .set("mappingDevices", mapping)
      .set("stripes", static_cast<int>(layout.stripes.size()))
      .set("stripeDevices", stripes)
      .set("granularity", layout.granularity)
      .set("minimumGranularity", granularities.minimum)
      .set("recommendedGranularity", granularities.recommended)
      .set("deviceMemory", memory)
      .set("bytesPerVector", layout.requestedBytes)
      .set("reservedBytesPerVector", layout.roundedBytes)
      .set("stripeBytes", layout.stripeBytes)
      .set("elements", layout.requestedBytes / sizeof(float))
      .set("driverViewProblems", problemList);
}
