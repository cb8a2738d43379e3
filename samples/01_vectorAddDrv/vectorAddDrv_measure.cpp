// 01_vectorAddDrv's measurements (see vectorAddDrv_measure.hpp).
#include "vectorAddDrv_measure.hpp"

#include <iomanip>
#include <ostream>

#include "support/devices.hpp"

namespace ms = memsamples;

namespace {
constexpr int kRounds = 3;  // interleaved copy / kernel timing rounds
}  // namespace

ms::VectorAddCheck measureVectorAdd(const ms::VectorAddLaunch& run, CUdevice device,
                                    const ms::CommonOptions& options, const float* hostA,
                                    const float* hostB, float* hostC, std::ostream& out,
                                    ms::JsonObject& json) {
  const std::size_t bytes = run.count * sizeof(float);
  // Interleaved rounds, each side keeping its best median: clocks and temperature drift during a
  // run, and neither side should get the cooler GPU. The kernel runs last, so C ends as A + B.
  ms::TimingStats copy{}, add{};
  for (int round = 0; round < kRounds; ++round) {
    const ms::TimingStats copyRound =
        ms::timeOnStream(run.stream, options.warmup, options.iterations, [&] {
          ms::check(cuMemcpyDtoDAsync(run.c, run.a, bytes, run.stream), "cuMemcpyDtoDAsync");
        });
    const ms::TimingStats addRound = ms::timeVectorAdd(run, options.warmup, options.iterations);
    if (round == 0 || copyRound.medianMs < copy.medianMs)
      copy = copyRound;
    if (round == 0 || addRound.medianMs < add.medianMs)
      add = addRound;
  }
  ms::check(cuMemcpyDtoHAsync(hostC, run.c, bytes, run.stream), "cuMemcpyDtoHAsync");
  ms::check(cuStreamSynchronize(run.stream), "cuStreamSynchronize");

  const double kernelGBps = ms::gigabytesPerSecond(3.0 * static_cast<double>(bytes), add.medianMs);
  const double copyGBps = ms::gigabytesPerSecond(2.0 * static_cast<double>(bytes), copy.medianMs);
  const double peakGBps = ms::theoreticalPeakGBps(device);
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
  json.set("device", ms::deviceOrdinal(device))
      .set("deviceName", ms::deviceName(device))
      .set("bytesPerVector", static_cast<std::uint64_t>(bytes))
      .set("elements", static_cast<std::uint64_t>(run.count))
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
  return ms::checkVectorAdd(hostA, hostB, hostC, run.count);
}
