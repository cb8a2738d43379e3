// 02_vectorAddMMAP's driver view and measurements (see vectorAddMMAP_measure.hpp).
#include "vectorAddMMAP_measure.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <iomanip>
#include <iterator>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "support/timing.hpp"

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

// One row of the stripe table: the stripe, the device the driver reports for it, its address,
// the range the driver sees from inside it, and the access per mapping device ("0:rw 1:rw").
// Rows 0-3 and the last one are printed, with "..." once in between.
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

// The kernel on the VMM ranges and on cuMemAlloc buffers of the same size, the inputs copied
// over, in interleaved rounds: each side keeps its best round, since clocks drift during a run.
// Stripes on other GPUs make the peer link, not the mapping, bound the ratio; the output says so.
ms::VectorAddCheck compareWithCuMemAlloc(const ms::VectorAddLaunch& run, CUdevice device,
                                         int remoteStripes, const ms::CommonOptions& options,
                                         const float* hostA, const float* hostB, float* hostC,
                                         std::ostream& out, ms::JsonObject& json) {
  const std::size_t bytes = run.count * sizeof(float);
  ms::OwnedDeviceMemory refA;
  ms::OwnedDeviceMemory refB;
  ms::OwnedDeviceMemory refC;
  ms::check(cuMemAlloc(refA.out(), bytes), "cuMemAlloc");
  ms::check(cuMemAlloc(refB.out(), bytes), "cuMemAlloc");
  ms::check(cuMemAlloc(refC.out(), bytes), "cuMemAlloc");
  ms::TimingStats onVmm{}, onMemAlloc{};
  ms::VectorAddCheck vmmCheck, referenceCheck;
  try {
    ms::check(cuMemcpyDtoDAsync(refA.get(), run.a, bytes, run.stream), "cuMemcpyDtoDAsync");
    ms::check(cuMemcpyDtoDAsync(refB.get(), run.b, bytes, run.stream), "cuMemcpyDtoDAsync");
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
    // Copies and launches may still be queued on the references: they finish before the
    // buffers go.
    (void)cuStreamSynchronize(run.stream);
    throw;
  }
  // fetchAndCheck() waited for the stream: nothing uses the references any more.
  ms::check(cuMemFree(refC.release()), "cuMemFree");
  ms::check(cuMemFree(refB.release()), "cuMemFree");
  ms::check(cuMemFree(refA.release()), "cuMemFree");

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

// The host time of building and freeing a range of each stripe count, each at the granularity
// planStripes() chooses for it, next to cuMemAlloc + cuMemFree of the same rounded size. A build
// is the whole of mapStripedRange(), its granularity questions included, as any caller pays it.
// These are synchronous driver calls, so a host clock is the right instrument.
void reportMappingCost(const vmm::DeviceRoles& roles, const vmm::Granularities& granularities,
                       std::uint64_t bytes, std::ostream& out, ms::JsonObject& json) {
  out << "Mapping cost of a " << ms::formatBytes(bytes) << " vector (host time, median of "
      << kCostRepetitions << ", ms per range):\n"
      << "  stripes     mapped     build      free   cuMemAlloc  cuMemFree   VMM / cuMemAlloc\n";
  ms::JsonArray rows;
  for (const int stripes : vmm::kCostStripeCounts) {
    const vmm::StripeLayout layout = vmm::planStripes(bytes, granularities, stripes, roles.backing);
    // The four timed steps, in this order. Repetition 0 is not timed: the first build of a
    // shape pays for driver bookkeeping.
    vmm::StripedVmmRange range;
    ms::OwnedDeviceMemory reference;
    const std::function<void()> steps[] = {
        [&] { range = vmm::StripedVmmRange(bytes, stripes, roles.backing, roles.mapping); },
        [&] {
          vmm::unmapStripedRange(range.get(), range.size());
          range.release();
        },
        [&] { ms::check(cuMemAlloc(reference.out(), layout.roundedBytes), "cuMemAlloc"); },
        [&] { ms::check(cuMemFree(reference.release()), "cuMemFree"); }};
    std::vector<double> timings[std::size(steps)];
    for (int repetition = 0; repetition <= kCostRepetitions; ++repetition) {
      for (std::size_t step = 0; step < std::size(steps); ++step) {
        const auto start = std::chrono::steady_clock::now();
        steps[step]();
        if (repetition > 0)
          timings[step].push_back(millisecondsSince(start));
      }
    }
    const double buildMs = median(timings[0]);
    const double freeMs = median(timings[1]);
    const double allocMs = median(timings[2]);
    const double cuFreeMs = median(timings[3]);
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

}  // namespace

// [driver-view]
std::vector<std::string> checkDriverView(const vmm::StripedVmmRange& range,
                                         const std::vector<int>& mappingDevices,
                                         ms::Report& report) {
  std::ostream& out = report.out();
  const std::vector<vmm::Stripe>& stripes = range.layout().stripes;
  std::vector<std::string> problems;
  out << "  stripe  device  address         range seen from inside    access\n";
  for (std::size_t i = 0; i < stripes.size(); ++i) {
    const CUdeviceptr address = range.get() + stripes[i].offset;
    CUdeviceptr rangeStart = 0;
    std::size_t rangeSize = 0;
    int deviceOrdinal = -1;
    CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                        CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    void* values[] = {&rangeStart, &rangeSize, &deviceOrdinal};
    ms::check(cuPointerGetAttributes(3, attributes, values, address), "cuPointerGetAttributes");
    if (rangeStart != range.get() || rangeSize != range.size() ||
        deviceOrdinal != stripes[i].device) {
      problems.push_back("stripe " + std::to_string(i) + " reports device " +
                         std::to_string(deviceOrdinal) + " and a range of " +
                         std::to_string(rangeSize) + " bytes; expected device " +
                         std::to_string(stripes[i].device) + " and the whole range");
    }
    // Per mapping device, read in this stripe: each stripe has its own entry, and one on
    // a peer shows the rights granted there.
    std::string access;
    for (const int mapper : mappingDevices) {
      CUmemLocation location{};
      location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      location.id = mapper;
      unsigned long long flags = 0;
      ms::check(cuMemGetAccess(&flags, &location, address), "cuMemGetAccess");
      if (flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
        problems.push_back("stripe " + std::to_string(i) + ": device " + std::to_string(mapper) +
                           " has access flags " + std::to_string(flags) + ", not read-write");
      }
      access +=
          (access.empty() ? "" : " ") + std::to_string(mapper) + ":" + vmm::describeAccess(flags);
    }
    printStripe(out, i, deviceOrdinal, address, rangeStart, rangeSize, access, stripes.size());
  }
  out << "Read-write access for device" << (mappingDevices.size() > 1 ? "s " : " ")
      << vmm::formatDeviceList(mappingDevices)
      << " in every stripe (cuMemGetAccess): " << (problems.empty() ? "yes" : "see FAILED below")
      << '\n';
  ms::JsonArray problemList;
  for (const std::string& problem : problems)
    problemList.add(problem);
  report.json().set("driverViewProblems", problemList);
  return problems;
}
// [driver-view]

ms::VectorAddCheck measureAgainstCuMemAlloc(const ms::VectorAddLaunch& launch,
                                            const ms::VectorAddCheck& firstRun, const float* hostA,
                                            const float* hostB, float* hostC,
                                            const vmm::RunDevices& devices,
                                            const ms::CommonOptions& options, ms::Report& report) {
  const std::uint64_t bytes = launch.count * sizeof(float);
  const vmm::StripeLayout layout =
      vmm::planStripes(bytes, devices.granularities, devices.stripes, devices.roles.backing);
  const auto remoteStripes = std::count_if(
      layout.stripes.begin(), layout.stripes.end(),
      [&devices](const vmm::Stripe& stripe) { return stripe.device != devices.ordinal; });
  const ms::VectorAddCheck timedRuns =
      compareWithCuMemAlloc(launch, devices.device, static_cast<int>(remoteStripes), options, hostA,
                            hostB, hostC, report.out(), report.json());
  reportMappingCost(devices.roles, devices.granularities, bytes, report.out(), report.json());
  const ms::VectorAddCheck& verified = firstRun.mismatches > 0 ? firstRun : timedRuns;
  if (verified.mismatches > 0)
    report.out() << ms::describeMismatch(verified) << '\n';
  return verified;
}

Step8Findings checkAndMeasure(const ms::VectorAddLaunch& run, const ms::VectorAddCheck& firstRun,
                              const float* hostA, const float* hostB, float* hostC,
                              const vmm::RunDevices& devices, const ms::CommonOptions& options,
                              ms::Report& report) {
  const std::uint64_t bytes = run.count * sizeof(float);
  const std::vector<int>& backing = devices.roles.backing;
  const std::vector<int>& mapping = devices.roles.mapping;
  vmm::StripedVmmRange a(bytes, devices.stripes, backing, mapping);
  vmm::StripedVmmRange b(bytes, devices.stripes, backing, mapping);
  vmm::StripedVmmRange c(bytes, devices.stripes, backing, mapping);

  Step8Findings findings;
  findings.problems = checkDriverView(a, mapping, report);

  ms::OwnedStream stream;  // after the ranges: on an error path it is finished before they go
  ms::check(cuStreamCreate(stream.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  ms::check(cuMemcpyHtoDAsync(a.get(), hostA, bytes, stream.get()), "cuMemcpyHtoDAsync");
  ms::check(cuMemcpyHtoDAsync(b.get(), hostB, bytes, stream.get()), "cuMemcpyHtoDAsync");
  ms::VectorAddLaunch launch = run;
  launch.stream = stream.get();
  launch.a = a.get();
  launch.b = b.get();
  launch.c = c.get();
  findings.verified = measureAgainstCuMemAlloc(launch, firstRun, hostA, hostB, hostC, devices,
                                               options, report);

  // The measurement waited for the stream's last work.
  ms::check(cuStreamDestroy(stream.release()), "cuStreamDestroy");
  for (vmm::StripedVmmRange* range : {&c, &b, &a}) {
    vmm::unmapStripedRange(range->get(), range->size());
    range->release();
  }
  return findings;
}
