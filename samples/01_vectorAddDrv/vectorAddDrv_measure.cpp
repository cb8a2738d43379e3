// 01_vectorAddDrv's sizing and measurements (see vectorAddDrv_measure.hpp).
#include "vectorAddDrv_measure.hpp"

#include <iomanip>
#include <ostream>

#include "support/devices.hpp"

namespace ms = memsamples;

namespace {

constexpr std::uint64_t kDefaultBytes = 256ull << 20;  // 64 Mi floats per vector: seconds
constexpr int kVectors = 3;                          // A, B and C
constexpr int kRounds = 3;                           // interleaved copy / kernel timing rounds

/// PASS when both checks found every element right; else the first failed one is described.
ms::Verdict verdictOf(const ms::VectorAddCheck& firstRun, const ms::VectorAddCheck& timedRuns,
                      ms::Report& report) {
  const ms::VectorAddCheck& verified = firstRun.mismatches > 0 ? firstRun : timedRuns;
  if (verified.mismatches > 0)
    report.out() << ms::describeMismatch(verified) << '\n';
  report.json().set("mismatches", static_cast<std::uint64_t>(verified.mismatches));
  return verified.mismatches == 0 ? ms::Verdict::Pass : ms::Verdict::Fail;
}

}  // namespace

// [sizing]
std::uint64_t sizeVectors(const std::optional<std::uint64_t>& requested, std::ostream& out) {
  // The device's free memory decides first; the host memory that the three pinned copies
  // take can then only make the vectors smaller.
  std::size_t freeBytes = 0;
  std::size_t totalBytes = 0;
  ms::check(cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
  const std::uint64_t deviceBytes =
      ms::chooseBufferBytes(requested, kDefaultBytes, freeBytes, kVectors, sizeof(float));
  const std::uint64_t bytes = ms::fitHostMemory(requested, deviceBytes, kVectors, sizeof(float));
  out << "Vectors: " << bytes / sizeof(float) << " floats (" << ms::formatBytes(bytes)
      << ") each\n";
  return bytes;
}
// [sizing]

ms::Verdict measureVectorAdd(const ms::VectorAddLaunch& launch, const ms::VectorAddCheck& firstRun,
                             CUdevice device, const ms::CommonOptions& options,
                             const float* hostA, const float* hostB, float* hostC,
                             ms::Report& report) {
  const std::size_t bytes = launch.count * sizeof(float);

  // [interleaved-rounds]
  // Interleaved rounds, each side keeping its best median: clocks and temperature drift during
  // a run, and neither side should get the cooler GPU. The kernel runs last, so C ends as A + B.
  ms::TimingStats copy{};
  ms::TimingStats add{};
  for (int round = 0; round < kRounds; ++round) {
    const ms::TimingStats copyRound =
        ms::timeOnStream(launch.stream, options.warmup, options.iterations, [&] {
          ms::check(cuMemcpyDtoDAsync(launch.c, launch.a, bytes, launch.stream),
                    "cuMemcpyDtoDAsync");
        });
    const ms::TimingStats addRound =
        ms::timeVectorAdd(launch, options.warmup, options.iterations);
    if (round == 0 || copyRound.medianMs < copy.medianMs)
      copy = copyRound;
    if (round == 0 || addRound.medianMs < add.medianMs)
      add = addRound;
  }
  // [interleaved-rounds]
  ms::check(cuMemcpyDtoHAsync(hostC, launch.c, bytes, launch.stream), "cuMemcpyDtoHAsync");
  ms::check(cuStreamSynchronize(launch.stream), "cuStreamSynchronize");

  const double kernelGBps = ms::gigabytesPerSecond(3.0 * static_cast<double>(bytes), add.medianMs);
  const double copyGBps = ms::gigabytesPerSecond(2.0 * static_cast<double>(bytes), copy.medianMs);
  const double peakGBps = ms::theoreticalPeakGBps(device);
  std::ostream& out = report.out();
  out << std::fixed << std::setprecision(1);
  out << "Kernel  VecAdd     " << std::setw(8) << kernelGBps << " GB/s  (median "
      << std::setprecision(3) << add.medianMs << " ms, reads A and B, writes C)\n";
  out << std::setprecision(1) << "Copy    DtoD       " << std::setw(8) << copyGBps
      << " GB/s  (median " << std::setprecision(3) << copy.medianMs
      << " ms, read + write counted)\n";
  out << std::setprecision(1) << "Peak    theoretical" << std::setw(8) << peakGBps
      << " GB/s  (memory clock x 2 x bus width)\n";
  out << std::setprecision(3) << "Ratio   kernel / DtoD copy = " << kernelGBps / copyGBps
      << ", kernel / peak = " << kernelGBps / peakGBps << ", copy / peak = " << copyGBps / peakGBps
      << '\n';
  report.json()
      .set("device", ms::deviceOrdinal(device))
      .set("deviceName", ms::deviceName(device))
      .set("bytesPerVector", static_cast<std::uint64_t>(bytes))
      .set("elements", static_cast<std::uint64_t>(launch.count))
      .set("iterations", options.iterations)
      .set("warmup", options.warmup)
      .set("kernelMedianMs", add.medianMs)
      .set("kernelGBps", kernelGBps)
      .set("copyDtoDMedianMs", copy.medianMs)
      .set("copyDtoDGBps", copyGBps)
      .set("theoreticalPeakGBps", peakGBps)
      .set("kernelOverCopy", kernelGBps / copyGBps)
      .set("kernelOverPeak", kernelGBps / peakGBps)
      .set("copyOverPeak", copyGBps / peakGBps);
  return verdictOf(firstRun, ms::checkVectorAdd(hostA, hostB, hostC, launch.count), report);
}
